package sim

import (
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
)

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type], which
// Locks.List sends to every primary. A real server walks its hash table
// by a reversed-bits cursor; the simulator walks the keys in the order of
// a 62-bit hash of each (the cursor is the next hash to visit, "0" once
// the walk is over), which keeps the guarantees callers rely on: a key
// present for the whole walk is returned at least once, a walk ends, and
// COUNT is a hint of the work per call. Expired keys are not returned.
// Errors as Redis 7.0's scanGenericCommand: a cursor that is not an
// unsigned integer is "ERR invalid cursor", a COUNT below 1 or an unknown
// option a syntax error.

// scanHash orders the keys of a SCAN walk.
func scanHash(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key)) //nolint:errcheck // hash writes never fail
	return h.Sum64() >> 2
}

func (e *Engine) scanCommand(c *client, args []string) reply {
	cursor, err := strconv.ParseUint(args[1], 10, 64)
	if err != nil {
		return errReply("ERR invalid cursor")
	}
	count, match, typ := int64(10), "", ""
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return syntaxError
		}
		switch strings.ToLower(args[i]) {
		case "count":
			n, err := strconv.ParseInt(args[i+1], 10, 64)
			if err != nil {
				return notInteger
			}
			if n < 1 {
				return syntaxError
			}
			count = n
		case "match":
			match = args[i+1]
		case "type":
			typ = strings.ToLower(args[i+1])
		default:
			return syntaxError
		}
	}
	type hashed struct {
		h   uint64
		key string
	}
	var all []hashed
	for key := range e.dbs[c.db] {
		if h := scanHash(key); h >= cursor {
			all = append(all, hashed{h, key})
		}
	}
	slices.SortFunc(all, func(a, b hashed) int {
		if a.h != b.h {
			if a.h < b.h {
				return -1
			}
			return 1
		}
		return strings.Compare(a.key, b.key)
	})
	var keys []reply
	next := uint64(0)
	for i, x := range all {
		if int64(i) >= count && x.h != all[i-1].h {
			next = x.h
			break
		}
		v := e.lookup(c, x.key)
		if v == nil || (match != "" && !globMatch(match, x.key)) || (typ != "" && typeName(v) != typ) {
			continue
		}
		keys = append(keys, bulk(x.key))
	}
	return array(bulk(strconv.FormatUint(next, 10)), array(keys...))
}

// typeName is TYPE's answer for a value.
func typeName(v *value) string {
	switch {
	case v.zset != nil:
		return "zset"
	case v.isList:
		return "list"
	}
	return "string"
}

// globMatch is Redis' stringmatchlen: * any run, ? any byte, [abc],
// [^abc] and [a-z] classes, and \ quoting the next byte.
func globMatch(pattern, s string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatch(pattern[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
			pattern = pattern[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			var ok bool
			if pattern, ok = matchClass(pattern[1:], s[0]); !ok {
				return false
			}
			s = s[1:]
		default:
			if pattern[0] == '\\' && len(pattern) > 1 {
				pattern = pattern[1:]
			}
			if len(s) == 0 || s[0] != pattern[0] {
				return false
			}
			s = s[1:]
			pattern = pattern[1:]
		}
	}
	return len(s) == 0
}

// matchClass matches b against the class that pattern starts (after its
// "["), returning the pattern after the class.
func matchClass(pattern string, b byte) (string, bool) {
	not := len(pattern) > 0 && pattern[0] == '^'
	if not {
		pattern = pattern[1:]
	}
	match := false
	for len(pattern) > 0 && pattern[0] != ']' {
		switch {
		case pattern[0] == '\\' && len(pattern) > 1:
			match = match || pattern[1] == b
			pattern = pattern[2:]
		case len(pattern) > 2 && pattern[1] == '-':
			lo, hi := pattern[0], pattern[2]
			if lo > hi {
				lo, hi = hi, lo
			}
			match = match || (b >= lo && b <= hi)
			pattern = pattern[3:]
		default:
			match = match || pattern[0] == b
			pattern = pattern[1:]
		}
	}
	if len(pattern) > 0 {
		pattern = pattern[1:] // the "]"
	}
	return pattern, match != not
}
