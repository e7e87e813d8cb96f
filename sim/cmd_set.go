package sim

import (
	"strconv"
	"strings"
)

// setOptions is a parsed SET command.
type setOptions struct {
	nx, xx, get, keepTTL bool
	cond                 string // "", "ifeq", "ifne", "ifdeq", "ifdne"
	compare              string
	expireArg            string // raw EX/PX/EXAT/PXAT argument
	expireUnit           string // "ex", "px", "exat", "pxat"
}

// parseSet parses SET's options for the profile; ok is false on a syntax
// error.
func (s profileSpec) parseSet(args []string) (o setOptions, ok bool) {
	for i := 3; i < len(args); i++ {
		opt := strings.ToLower(args[i])
		hasNext := i+1 < len(args)
		switch {
		case opt == "nx" && !o.xx && (o.cond == "" || s.ifeqWithNXXX):
			o.nx = true
		case opt == "xx" && !o.nx && (o.cond == "" || s.ifeqWithNXXX):
			o.xx = true
		case opt == "get":
			o.get = true
		case opt == "keepttl" && o.expireUnit == "":
			o.keepTTL = true
		case (opt == "ex" || opt == "px" || opt == "exat" || opt == "pxat") &&
			!o.keepTTL && o.expireUnit == "" && hasNext:
			o.expireUnit, o.expireArg = opt, args[i+1]
			i++
		case opt == "ifeq" && s.ifeq && hasNext && s.ifeqAllowed(o):
			o.cond, o.compare = opt, args[i+1]
			i++
		case (opt == "ifne" || opt == "ifdeq" || opt == "ifdne") && s.ifeqWithNXXX && hasNext:
			o.cond, o.compare = opt, args[i+1]
			i++
		default:
			return o, false
		}
	}
	return o, true
}

// ifeqAllowed tells whether IFEQ may follow the options seen so far.
func (s profileSpec) ifeqAllowed(o setOptions) bool {
	if s.ifeqWithNXXX {
		return true
	}
	return !o.nx && !o.xx && o.cond == ""
}

// expireAt converts the expire option to unix milliseconds (0: none).
func (e *Engine) expireAt(o setOptions) (int64, reply, bool) {
	if o.expireUnit == "" {
		return 0, reply{}, true
	}
	n, ok := parseInt(o.expireArg)
	if !ok {
		return 0, notInteger, false
	}
	if n <= 0 {
		return 0, errReply("ERR invalid expire time in 'set' command"), false
	}
	switch o.expireUnit {
	case "ex":
		return e.now() + n*1000, reply{}, true
	case "px":
		return e.now() + n, reply{}, true
	case "exat":
		return n * 1000, reply{}, true
	}
	return n, reply{}, true
}

func (e *Engine) setCommand(c *client, args []string) reply {
	o, ok := e.spec.parseSet(args)
	if !ok {
		return syntaxError
	}
	expireAt, errR, ok := e.expireAt(o)
	if !ok {
		return errR
	}
	if (o.cond == "ifdeq" || o.cond == "ifdne") && !validDigest(o.compare) {
		return errDigestFormat
	}
	key := args[1]
	cur := e.lookup(c, key)
	if cur != nil && cur.notString() && (o.get || o.cond != "") {
		return wrongType
	}
	if !setConditionHolds(o, cur) {
		if o.get && cur != nil {
			return bulk(cur.str)
		}
		return null()
	}
	old := reply(null())
	if cur != nil {
		old = bulk(cur.str)
	}
	next := &value{str: args[2], expireAt: expireAt}
	if o.keepTTL && cur != nil {
		next.expireAt = cur.expireAt
	}
	e.dbs[c.db][key] = next
	e.noteExpiry(next.expireAt)
	e.keyModified(key, e.modifier(c))
	if o.get {
		return old
	}
	return okReply
}

func setConditionHolds(o setOptions, cur *value) bool {
	switch {
	case o.nx && cur != nil, o.xx && cur == nil:
		return false
	case o.cond == "":
		return true
	case cur == nil:
		return o.cond == "ifne" || o.cond == "ifdne"
	}
	return conditionHolds(o.cond, o.compare, cur.str)
}

// conditionHolds evaluates IFEQ/IFNE/IFDEQ/IFDNE against a present value.
func conditionHolds(cond, compare, current string) bool {
	switch cond {
	case "ifeq":
		return current == compare
	case "ifne":
		return current != compare
	case "ifdeq":
		return strings.EqualFold(digest(current), compare)
	}
	return !strings.EqualFold(digest(current), compare)
}

var errDigestFormat = errReply("ERR must be exactly 16 hexadecimal characters")

func validDigest(s string) bool {
	if len(s) != 16 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

func formatInt(n int64) string { return strconv.FormatInt(n, 10) }
