// Package respseeds holds the seed corpora of respire-go's fuzz tests: real
// server replies, byte for byte (Replies), the error lines the engine
// classifies (ErrorLines), and the commands the library sends (Commands),
// so that every FuzzX starts from what servers and clients really put on
// the wire.
package respseeds

import (
	"strconv"
	"strings"
)

// didNotRun are error replies that prove a command did not run, as servers
// word them (a cluster without coverage, a migration, a replica, a lost
// primary, a load, a script, too few replicas, maxmemory).
var didNotRun = []string{
	"-CLUSTERDOWN The cluster is down\r\n",
	"-CLUSTERDOWN Hash slot not served\r\n",
	"-READONLY You can't write against a read only replica.\r\n",
	"-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n",
	"-LOADING Redis is loading the dataset in memory\r\n",
	"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.\r\n",
	"-NOREPLICAS Not enough good replicas to write.\r\n",
	"-OOM command not allowed when used memory > 'maxmemory'.\r\n",
}

// All returns Replies and the did-not-run error replies.
func All() []string { return append(append([]string(nil), Replies...), didNotRun...) }

// Top returns the type byte and the first line's text of a wire reply
// (without the type byte and CRLF), and for ':' the integer: enough to
// build the top of a reply. ok is false for an empty or unterminated one.
func Top(wire string) (kind byte, text string, n int64, ok bool) {
	line, _, found := strings.Cut(wire, "\r\n")
	if !found || line == "" {
		return 0, "", 0, false
	}
	kind, text = line[0], line[1:]
	if kind == '$' { // a bulk string: its text is the next line
		if rest := wire[len(line)+2:]; text != "-1" {
			text, _, _ = strings.Cut(rest, "\r\n")
		}
	}
	if kind == ':' {
		n, _ = strconv.ParseInt(text, 10, 64)
	}
	return kind, text, n, true
}

// ErrorLines returns the text of every error reply of All (no "-", no
// CRLF): what a client hands the engine as Reply.Text.
func ErrorLines() []string {
	var out []string
	for _, r := range All() {
		if kind, text, _, ok := Top(r); ok && kind == '-' {
			out = append(out, text)
		}
	}
	return out
}

// Commands are commands respire-go sends, as RESP requests.
var Commands = []string{
	Encode("SET", "lock:a", "f7042be43fb80714", "NX", "PX", "30000"),
	Encode("SET", "lock:a", "f7042be43fb80714", "IFEQ", "f7042be43fb80714", "PX", "30000"),
	Encode("DELEX", "lock:a", "IFEQ", "f7042be43fb80714"),
	Encode("DELIFEQ", "lock:a", "f7042be43fb80714"),
	Encode("EVALSHA", "e9f69f2beb755be68b5e456ee2ce9aadfbc4ebf4", "1", "lock:a", "f7042be43fb80714"),
	Encode("GET", "lock:a"),
	Encode("CLIENT", "ID"),
	Encode("CLIENT", "INFO"),
	Encode("CLIENT", "KILL", "ID", "7", "ADDR", "127.0.0.1:50304"),
	Encode("CLIENT", "TRACKING", "ON", "OPTIN", "NOLOOP"),
	Encode("CLIENT", "CACHING", "YES"),
	Encode("HELLO", "3", "AUTH", "default", "secret"),
	Encode("CLUSTER", "SLOTS"),
	Encode("WAIT", "1", "100"),
	Encode("PING"),
	"PING\r\n",
	"SET k v\r\n",
}

// Encode renders args as a RESP request (an array of bulk strings).
func Encode(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}
