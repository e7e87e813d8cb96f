package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// tokenPattern matches the owner tokens lease.NewToken generates (32
// lowercase hexadecimal characters); the demo prints <token> instead.
var tokenPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// handshake reports whether a logged command is part of a
// connection's set-up (handshake, cluster-mode probe) rather than lock work. CLIENT ID, CLIENT INFO and
// CLIENT KILL are lock work (identity and fencing) and are kept.
func handshake(args []string) bool {
	if len(args) == 0 {
		return true
	}
	switch strings.ToUpper(args[0]) {
	case "HELLO", "AUTH", "PING", "SELECT", "READONLY", "CLUSTER":
		return true
	case "CLIENT":
		if len(args) < 2 {
			return false
		}
		switch strings.ToUpper(args[1]) {
		case "ID", "INFO", "KILL":
			return false
		}
		return true
	}
	return false
}

// connNames maps each client id to a readable connection name: the
// SETNAME the worker's client sent in its handshake, plus "session"
// for the lease library's pinned sessions (the connections that asked
// CLIENT ID), numbered from the second one on. Other connections (the
// fence connection, a watcher's) are not numbered.
func connNames(log []sim.Entry) map[int64]string {
	workers := map[int64]string{}
	for _, e := range log {
		if name := setName(e.Args); name != "" {
			workers[e.ClientID] = name
		}
	}
	names := map[int64]string{}
	sessions := map[string]int{}
	for _, e := range log {
		worker := workers[e.ClientID]
		if _, seen := names[e.ClientID]; seen || worker == "" || !isClientID(e.Args) {
			continue
		}
		sessions[worker]++
		names[e.ClientID] = worker + " session"
		if n := sessions[worker]; n > 1 {
			names[e.ClientID] += fmt.Sprintf(" %d", n)
		}
	}
	for id, worker := range workers {
		if _, ok := names[id]; !ok {
			names[id] = worker
		}
	}
	return names
}

// isClientID reports whether args is CLIENT ID.
func isClientID(args []string) bool {
	return len(args) == 2 && strings.EqualFold(args[0], "CLIENT") && strings.EqualFold(args[1], "ID")
}

// setName returns the client name a HELLO ... SETNAME or CLIENT SETNAME
// command carries, or "".
func setName(args []string) string {
	for i := 0; i+1 < len(args); i++ {
		if strings.EqualFold(args[i], "SETNAME") {
			return args[i+1]
		}
	}
	return ""
}

// redact renders one command for printing: tokens become <token>, the two
// Lua scripts and their SHA1 digests get names, CLIENT KILL's ID names the
// connection it targets and its ADDR (an ephemeral port) becomes <addr>.
func redact(args []string, names map[int64]string) string {
	out := make([]string, len(args))
	for i, a := range args {
		switch {
		case tokenPattern.MatchString(a):
			out[i] = "<token>"
		case a == conn.ReleaseScript:
			out[i] = "<release script>"
		case a == conn.ExtendScript:
			out[i] = "<extend script>"
		case a == conn.ReleaseScriptSHA:
			out[i] = "<release sha1>"
		case a == conn.ExtendScriptSHA:
			out[i] = "<extend sha1>"
		case a == conn.FencedAcquireScript:
			out[i] = "<fenced acquire script>"
		case a == conn.FencedAcquireScriptSHA:
			out[i] = "<fenced acquire sha1>"
		case a == conn.GuardWritesScript:
			out[i] = "<guarded write script>"
		case a == conn.GuardWritesScriptSHA:
			out[i] = "<guarded write sha1>"
		case i > 0 && strings.EqualFold(args[i-1], "ADDR"):
			out[i] = "<addr>"
		case i > 0 && strings.EqualFold(args[i-1], "ID") && strings.EqualFold(args[0], "CLIENT"):
			out[i] = "<id of " + connName(a, names) + ">"
		default:
			out[i] = a
		}
	}
	return strings.Join(out, " ")
}

// stepName names a lock command by the implementation it is: "SET IFEQ",
// "DELEX", "DELIFEQ", "EVALSHA", "EVAL", or "" for anything else.
func stepName(args []string) (name string, extension bool) {
	if len(args) < 2 {
		return "", false
	}
	switch cmd := strings.ToUpper(args[0]); cmd {
	case "SET":
		for _, a := range args[2:] {
			if strings.EqualFold(a, "IFEQ") {
				return "SET IFEQ", true
			}
		}
	case "DELEX", "DELIFEQ":
		return cmd, false
	case "EVALSHA", "EVAL":
		script := args[1]
		return cmd, script == conn.ExtendScript || script == conn.ExtendScriptSHA
	}
	return "", false
}

// ladder is the chain of commands one extension or release sent, in order
// ("DELEX → DELIFEQ → EVALSHA → EVAL"), and the connection that sent its
// first step; "" when it sent none.
func ladder(entries []sim.Entry, extension bool) (chain string, clientID int64) {
	var steps []string
	for _, e := range entries {
		if name, ext := stepName(e.Args); name != "" && ext == extension {
			if steps == nil {
				clientID = e.ClientID
			}
			steps = append(steps, name)
		}
	}
	return strings.Join(steps, " → "), clientID
}

// printWire prints the lock traffic of entries, one line per command,
// labelled with the connection that sent it; runs of identical lines
// (polls while waiting) are folded into one with a count.
func printWire(p *printer, entries []sim.Entry, names map[int64]string) {
	var last string
	count := 0
	flush := func() {
		if count == 0 {
			return
		}
		if count > 1 {
			last += fmt.Sprintf("   (×%d)", count)
		}
		p.line("             │ %s", last)
	}
	for _, e := range entries {
		if handshake(e.Args) {
			continue
		}
		name := connName(strconv.FormatInt(e.ClientID, 10), names)
		text := fmt.Sprintf("%-18s %s", name, redact(e.Args, names))
		if text == last {
			count++
			continue
		}
		flush()
		last, count = text, 1
	}
	flush()
}

// connName names the connection whose client id is id (decimal).
func connName(id string, names map[int64]string) string {
	n, err := strconv.ParseInt(id, 10, 64)
	if err == nil && names[n] != "" {
		return names[n]
	}
	return "connection " + id
}
