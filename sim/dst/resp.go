package dst

import (
	"bytes"
	"strconv"

	"github.com/respire-go/respire/conn"
)

// This file is the simulated client's RESP reader: it turns the reply
// bytes a sim.Engine writes (RESP2, or RESP3 after HELLO 3) into conn's
// client-neutral Reply, mapping every RESP type as the seam asks a client
// adapter to (conn.Reply): simple and verbatim strings, doubles and big
// numbers to text, nulls to ReplyNil, booleans to 1 or nil, arrays, sets,
// maps and pushes to ReplyArray (maps flattened key, value, …).

// parseReply decodes one whole reply; malformed bytes read as an error
// reply, as a client would report a protocol error.
func parseReply(b []byte) conn.Reply {
	r, _, ok := readReply(b)
	if !ok {
		return conn.Reply{Kind: conn.ReplyError, Text: "ERR unparsable reply"}
	}
	return r
}

// maxDepth bounds nesting (CLUSTER SLOTS nests three levels; a push two).
const maxDepth = 8

// readReply reads one reply from the front of b and returns the rest.
func readReply(b []byte) (r conn.Reply, rest []byte, ok bool) {
	return readNested(b, 0)
}

func readNested(b []byte, depth int) (conn.Reply, []byte, bool) {
	if len(b) < 3 || depth > maxDepth {
		return conn.Reply{}, nil, false
	}
	line, rest, found := bytes.Cut(b[1:], []byte("\r\n"))
	if !found {
		return conn.Reply{}, nil, false
	}
	text := string(line)
	switch b[0] {
	case '+':
		return conn.Reply{Kind: conn.ReplyStatus, Text: text}, rest, true
	case '-':
		return conn.Reply{Kind: conn.ReplyError, Text: text}, rest, true
	case ':':
		n, err := strconv.ParseInt(text, 10, 64)
		return conn.Reply{Kind: conn.ReplyInt, Int: n}, rest, err == nil
	case ',', '(':
		return conn.Reply{Kind: conn.ReplyBulk, Text: text}, rest, true
	case '_':
		return conn.Reply{Kind: conn.ReplyNil}, rest, true
	case '#':
		if text == "t" {
			return conn.Reply{Kind: conn.ReplyInt, Int: 1}, rest, true
		}
		return conn.Reply{Kind: conn.ReplyNil}, rest, text == "f"
	case '$', '=', '!':
		return readBlob(b[0], text, rest)
	case '*', '~', '>', '%':
		return readAggregate(b[0], text, rest, depth)
	}
	return conn.Reply{}, nil, false
}

// readBlob reads a bulk string, a verbatim string ("txt:" first) or a
// blob error whose length line was text.
func readBlob(kind byte, text string, rest []byte) (conn.Reply, []byte, bool) {
	n, err := strconv.Atoi(text)
	switch {
	case err != nil:
		return conn.Reply{}, nil, false
	case n < 0:
		return conn.Reply{Kind: conn.ReplyNil}, rest, true
	case len(rest) < n+2:
		return conn.Reply{}, nil, false
	}
	body := string(rest[:n])
	rest = rest[n+2:]
	switch kind {
	case '=':
		if len(body) >= 4 {
			body = body[4:]
		}
	case '!':
		return conn.Reply{Kind: conn.ReplyError, Text: body}, rest, true
	}
	return conn.Reply{Kind: conn.ReplyBulk, Text: body}, rest, true
}

// readAggregate reads the elements of an array, set, push or map (two
// elements per entry) whose count line was text.
func readAggregate(kind byte, text string, rest []byte, depth int) (conn.Reply, []byte, bool) {
	n, err := strconv.Atoi(text)
	switch {
	case err != nil:
		return conn.Reply{}, nil, false
	case n < 0:
		return conn.Reply{Kind: conn.ReplyNil}, rest, true
	case kind == '%':
		n *= 2
	}
	if n > len(rest) { // every element takes at least one byte
		return conn.Reply{}, nil, false
	}
	elems := make([]conn.Reply, 0, n)
	for range n {
		var e conn.Reply
		var ok bool
		if e, rest, ok = readNested(rest, depth+1); !ok {
			return conn.Reply{}, nil, false
		}
		elems = append(elems, e)
	}
	return conn.Reply{Kind: conn.ReplyArray, Array: elems}, rest, true
}

// parsePush reads one out-of-band message a sim.Engine queued for a
// connection: a RESP3 invalidation push (">2 invalidate [keys | _]"), or,
// on a RESP2 connection subscribed to __redis__:invalidate (the target of
// a REDIRECT), its pub/sub message. It returns the keys, or flush for the
// null that means everything; ok is false for any other message.
func parsePush(msg []byte) (keys []string, flush, ok bool) {
	r, _, read := readReply(msg)
	if !read || r.Kind != conn.ReplyArray {
		return nil, false, false
	}
	a := r.Array
	var payload conn.Reply
	switch {
	case len(a) == 2 && a[0].Text == "invalidate":
		payload = a[1]
	case len(a) == 3 && a[0].Text == "message" && a[1].Text == "__redis__:invalidate":
		payload = a[2]
	default:
		return nil, false, false
	}
	if payload.Kind != conn.ReplyArray {
		return nil, true, true // null: a flush
	}
	for _, k := range payload.Array {
		keys = append(keys, k.Text)
	}
	return keys, false, true
}
