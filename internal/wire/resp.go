package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/respire-go/respire/conn"
)

// This file reads and writes RESP (2 and 3): commands as arrays of bulk
// strings, replies into the engine's conn.Reply.

// errProtocol is the cause of a reply the reader cannot parse: the
// connection is broken from then on.
var errProtocol = errors.New("wire: protocol error")

// maxBulk bounds a bulk string (512 MiB, the server's own limit) and
// maxElems an aggregate, so that a corrupt length cannot allocate without
// bound.
const (
	maxBulk  = 512 << 20
	maxElems = 1 << 24
)

// appendCommand appends args as one RESP command.
func appendCommand(b []byte, args []string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// frame is one value read: a reply, or a RESP3 push (push set, the reply
// holds its elements).
type frame struct {
	reply conn.Reply
	push  bool
}

// readFrame reads one top-level value; attributes ('|') are skipped.
func readFrame(r *bufio.Reader) (frame, error) {
	for {
		kind, line, err := readHeader(r)
		if err != nil {
			return frame{}, err
		}
		switch kind {
		case '|':
			if _, err := readAggregate(r, line, 2); err != nil {
				return frame{}, err
			}
			continue
		case '>':
			elems, err := readAggregate(r, line, 1)
			return frame{reply: conn.Reply{Kind: conn.ReplyArray, Array: elems}, push: true}, err
		}
		reply, err := readValue(r, kind, line)
		return frame{reply: reply}, err
	}
}

// readHeader reads a type byte and the rest of its line. The line is the
// reader's own buffer: valid until the next read (see text).
func readHeader(r *bufio.Reader) (byte, []byte, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			err = fmt.Errorf("%w: line longer than %d bytes", errProtocol, r.Size())
		}
		return 0, nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return 0, nil, fmt.Errorf("%w: line %q", errProtocol, line)
	}
	return line[0], line[1 : len(line)-2], nil
}

// text returns line as a string, without allocating for the replies every
// lock command gets.
func text(line []byte) string {
	switch string(line) {
	case "OK":
		return "OK"
	case "PONG":
		return "PONG"
	}
	return string(line)
}

// parseInt parses a decimal integer line without allocating.
func parseInt(line []byte) (int64, bool) {
	if len(line) == 0 || len(line) > 20 {
		return 0, false
	}
	neg := line[0] == '-'
	if neg {
		line = line[1:]
	}
	var n int64
	for _, c := range line {
		if c < '0' || c > '9' || n > (1<<63-1-9)/10 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, len(line) > 0
}

// readValue reads the value of a header already read.
func readValue(r *bufio.Reader, kind byte, line []byte) (conn.Reply, error) {
	switch kind {
	case '+':
		return conn.Reply{Kind: conn.ReplyStatus, Text: text(line)}, nil
	case '-', '!':
		if kind == '!' {
			text, err := readBulk(r, line)
			return conn.Reply{Kind: conn.ReplyError, Text: text}, err
		}
		return conn.Reply{Kind: conn.ReplyError, Text: string(line)}, nil
	case ':':
		n, ok := parseInt(line)
		if !ok {
			return conn.Reply{}, fmt.Errorf("%w: integer %q", errProtocol, line)
		}
		return conn.Reply{Kind: conn.ReplyInt, Int: n}, nil
	case '_':
		return conn.Reply{Kind: conn.ReplyNil}, nil
	case '#':
		if string(line) == "t" {
			return conn.Reply{Kind: conn.ReplyInt, Int: 1}, nil
		}
		return conn.Reply{Kind: conn.ReplyNil}, nil
	case ',', '(':
		return conn.Reply{Kind: conn.ReplyBulk, Text: string(line)}, nil
	case '$', '=':
		return readString(r, kind, line)
	case '*', '~', '%':
		return readArray(r, kind, line)
	}
	return conn.Reply{}, fmt.Errorf("%w: type %q", errProtocol, kind)
}

// readString reads a bulk or verbatim string ($-1 is nil in RESP2).
func readString(r *bufio.Reader, kind byte, line []byte) (conn.Reply, error) {
	if string(line) == "-1" {
		return conn.Reply{Kind: conn.ReplyNil}, nil
	}
	text, err := readBulk(r, line)
	if err != nil {
		return conn.Reply{}, err
	}
	if kind == '=' && len(text) >= 4 && text[3] == ':' {
		text = text[4:] // "txt:" or "mkd:"
	}
	return conn.Reply{Kind: conn.ReplyBulk, Text: text}, nil
}

// readArray reads an array, set or map (*-1 is nil in RESP2).
func readArray(r *bufio.Reader, kind byte, line []byte) (conn.Reply, error) {
	if string(line) == "-1" {
		return conn.Reply{Kind: conn.ReplyNil}, nil
	}
	per := 1
	if kind == '%' {
		per = 2
	}
	elems, err := readAggregate(r, line, per)
	return conn.Reply{Kind: conn.ReplyArray, Array: elems}, err
}

// readBulk reads the payload of a length-prefixed string.
func readBulk(r *bufio.Reader, length []byte) (string, error) {
	n64, ok := parseInt(length)
	n := int(n64)
	if !ok || n < 0 || n > maxBulk {
		return "", fmt.Errorf("%w: length %q", errProtocol, length)
	}
	if n+2 <= r.Size() { // within the reader's buffer: one allocation, the string
		buf, err := r.Peek(n + 2)
		if err != nil {
			return "", err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return "", fmt.Errorf("%w: bulk not terminated", errProtocol)
		}
		s := string(buf[:n])
		_, err = r.Discard(n + 2)
		return s, err
	}
	// A longer one grows with the bytes that arrive, so that a length no
	// payload follows allocates nothing near it.
	var b bytes.Buffer
	if _, err := io.CopyN(&b, r, int64(n)+2); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	buf := b.Bytes()
	if buf[n] != '\r' || buf[n+1] != '\n' {
		return "", fmt.Errorf("%w: bulk not terminated", errProtocol)
	}
	return string(buf[:n]), nil
}

// readAggregate reads count×per elements (a map's count is its pairs).
func readAggregate(r *bufio.Reader, count []byte, per int) ([]conn.Reply, error) {
	n64, ok := parseInt(count)
	n := int(n64)
	if !ok || n < 0 || n > maxElems {
		return nil, fmt.Errorf("%w: count %q", errProtocol, count)
	}
	elems := make([]conn.Reply, 0, min(n*per, 64)) // grows with the elements that arrive, not with the count
	for range n * per {
		kind, line, err := readHeader(r)
		if err != nil {
			return nil, err
		}
		v, err := readValue(r, kind, line)
		if err != nil {
			return nil, err
		}
		elems = append(elems, v)
	}
	return elems, nil
}
