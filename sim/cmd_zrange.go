package sim

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// ZRANGEBYSCORE, the one ordered sorted-set read the fair queue's scripts
// use (the queue's head, the waiters whose waiter lease ended), as Redis
// 7.0's zrangeGenericCommand answers it: the options (WITHSCORES, LIMIT
// offset count, in any order) are read before the range, the range before
// the key's type; members come in score order, equal scores in member
// order (byte-wise); a negative offset gives an empty list and a negative
// count every member from the offset on. With WITHSCORES a RESP3
// connection gets [member, score] pairs, a RESP2 one (and a script) the
// flat list.

func (e *Engine) zrangebyscoreCommand(c *client, args []string) reply {
	withScores, offset, count := false, int64(0), int64(-1)
	for i := 4; i < len(args); i++ {
		switch {
		case strings.EqualFold(args[i], "withscores"):
			withScores = true
		case strings.EqualFold(args[i], "limit") && i+2 < len(args):
			o, err1 := strconv.ParseInt(args[i+1], 10, 64)
			n, err2 := strconv.ParseInt(args[i+2], 10, 64)
			if err1 != nil || err2 != nil {
				return notInteger
			}
			offset, count = o, n
			i += 2
		default:
			return syntaxError
		}
	}
	lo, hi, ok := parseScoreRange(args[2], args[3])
	if !ok {
		return errReply("ERR min or max is not a float")
	}
	v, wrong := e.sortedSet(c, args[1])
	switch {
	case wrong:
		return wrongType
	case v == nil || offset < 0:
		return array()
	}
	type entry struct {
		member string
		score  float64
	}
	var in []entry
	for m, s := range v.zset {
		if inRange(s, lo, hi) {
			in = append(in, entry{m, s})
		}
	}
	slices.SortFunc(in, func(a, b entry) int {
		if c := cmp.Compare(a.score, b.score); c != 0 {
			return c
		}
		return strings.Compare(a.member, b.member)
	})
	if offset >= int64(len(in)) {
		return array()
	}
	in = in[offset:]
	if count >= 0 && count < int64(len(in)) {
		in = in[:count]
	}
	resp3 := c.proto == 3 && (e.vm == nil || e.vm.run == nil) // a script reads RESP2
	out := make([]reply, 0, 2*len(in))
	for _, x := range in {
		switch {
		case !withScores:
			out = append(out, bulk(x.member))
		case resp3:
			out = append(out, array(bulk(x.member), double(x.score)))
		default:
			out = append(out, bulk(x.member), double(x.score))
		}
	}
	return array(out...)
}
