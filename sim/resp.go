package sim

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// replyKind is the RESP type of one reply value.
type replyKind byte

const (
	kindStatus   replyKind = '+'
	kindError    replyKind = '-'
	kindInt      replyKind = ':'
	kindBulk     replyKind = '$'
	kindArray    replyKind = '*'
	kindMap      replyKind = '%' // elems hold key, value, key, value...
	kindSet      replyKind = '~'
	kindNull     replyKind = '_'
	kindVerbatim replyKind = '=' // bulk in RESP2, verbatim "txt:" in RESP3
	kindRaw      replyKind = 'r' // prebuilt bytes: str for RESP2, alt for RESP3
	kindPush     replyKind = '>' // array in RESP2, push in RESP3 (pub/sub replies)
	kindSeq      replyKind = 's' // several replies to one command, written back to back
	kindDouble   replyKind = ',' // str is the printed value: bulk in RESP2, double in RESP3
)

// reply is a protocol-independent reply tree; encode renders it for a
// connection's protocol.
type reply struct {
	kind  replyKind
	str   string
	alt   string
	num   int64
	elems []reply
}

func status(s string) reply           { return reply{kind: kindStatus, str: s} }
func errReply(s string) reply         { return reply{kind: kindError, str: s} }
func errorf(f string, a ...any) reply { return reply{kind: kindError, str: fmt.Sprintf(f, a...)} }
func integer(n int64) reply           { return reply{kind: kindInt, num: n} }
func bulk(s string) reply             { return reply{kind: kindBulk, str: s} }
func null() reply                     { return reply{kind: kindNull} }
func array(e ...reply) reply          { return reply{kind: kindArray, elems: e} }
func mapReply(kv ...reply) reply      { return reply{kind: kindMap, elems: kv} }
func verbatim(s string) reply         { return reply{kind: kindVerbatim, str: s} }
func raw(r2, r3 string) reply         { return reply{kind: kindRaw, str: r2, alt: r3} }
func pushReply(e ...reply) reply      { return reply{kind: kindPush, elems: e} }
func seq(e ...reply) reply            { return reply{kind: kindSeq, elems: e} }

var (
	okReply     = status("OK")
	syntaxError = errReply("ERR syntax error")
	notInteger  = errReply("ERR value is not an integer or out of range")
	wrongType   = errReply("WRONGTYPE Operation against a key holding the wrong kind of value")
)

func isError(r reply) bool { return r.kind == kindError }

// encode appends the wire bytes of r in protocol proto (2 or 3) to b.
func (r reply) encode(b []byte, proto int) []byte {
	switch r.kind {
	case kindStatus, kindError:
		b = append(b, byte(r.kind))
		b = append(b, oneLine.Replace(r.str)...)
		return append(b, '\r', '\n')
	case kindInt:
		b = append(b, ':')
		b = strconv.AppendInt(b, r.num, 10)
		return append(b, '\r', '\n')
	case kindBulk:
		return appendBulk(b, '$', r.str)
	case kindDouble:
		if proto == 3 {
			b = append(b, ',')
			b = append(b, r.str...)
			return append(b, '\r', '\n')
		}
		return appendBulk(b, '$', r.str)
	case kindVerbatim:
		if proto == 3 {
			return appendBulk(b, '=', "txt:"+r.str)
		}
		return appendBulk(b, '$', r.str)
	case kindNull:
		if proto == 3 {
			return append(b, '_', '\r', '\n')
		}
		return append(b, '$', '-', '1', '\r', '\n')
	case kindRaw:
		if proto == 3 {
			return append(b, r.alt...)
		}
		return append(b, r.str...)
	case kindSeq:
		for _, e := range r.elems {
			b = e.encode(b, proto)
		}
		return b
	}
	n, prefix := len(r.elems), byte('*')
	switch {
	case r.kind == kindMap && proto == 3:
		n, prefix = n/2, '%'
	case r.kind == kindSet && proto == 3:
		prefix = '~'
	case r.kind == kindPush && proto == 3:
		prefix = '>'
	}
	b = append(b, prefix)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, '\r', '\n')
	for _, e := range r.elems {
		b = e.encode(b, proto)
	}
	return b
}

func appendBulk(b []byte, prefix byte, s string) []byte {
	b = append(b, prefix)
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// oneLine keeps simple strings and errors on one line, as servers do.
var oneLine = strings.NewReplacer("\r", " ", "\n", " ")

// errProtocol reports a malformed request; the connection is closed.
var errProtocol = errors.New("sim: protocol error")

// maxBulk bounds one argument of a request.
const maxBulk = 512 << 20

// readCommand reads one request: a RESP multibulk array of bulk strings,
// or an inline command line. Empty inline lines yield a nil slice.
func readCommand(r *bufio.Reader) ([][]byte, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if len(line) == 0 || line[0] != '*' {
		return inlineArgs(line), nil
	}
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil || n > 1<<20 {
		return nil, errProtocol
	}
	args := make([][]byte, 0, min(max(n, 0), 64)) // grows with the arguments that arrive, not with the count
	for range n {
		head, err := readLine(r)
		if err != nil {
			return nil, err
		}
		if len(head) == 0 || head[0] != '$' {
			return nil, errProtocol
		}
		size, err := strconv.Atoi(string(head[1:]))
		if err != nil || size < 0 || size > maxBulk {
			return nil, errProtocol
		}
		buf, err := readBulk(r, size)
		if err != nil {
			return nil, err
		}
		args = append(args, buf)
	}
	return args, nil
}

// readBulk reads an argument of size bytes and its CRLF. A long one grows
// with the bytes that arrive, so that a length no payload follows
// allocates nothing near it.
func readBulk(r *bufio.Reader, size int) ([]byte, error) {
	if size <= 64<<10 {
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return buf[:size], nil
	}
	var b bytes.Buffer
	if _, err := io.CopyN(&b, r, int64(size)+2); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b.Bytes()[:size], nil
}

func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errProtocol
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return append([]byte(nil), line...), nil
}

func inlineArgs(line []byte) [][]byte {
	var args [][]byte
	for _, f := range strings.Fields(string(line)) {
		args = append(args, []byte(f))
	}
	return args
}

// encodeCommand renders args as a RESP multibulk request.
func encodeCommand(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = appendBulk(b, '$', a)
	}
	return b
}
