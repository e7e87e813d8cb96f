package sim

import (
	"math"
	"strings"
)

func stringCommands() map[string]*command {
	return map[string]*command{
		"get":      {arity: 2, run: (*Engine).getCommand, keys: firstKey, readonly: true},
		"set":      {arity: -3, run: (*Engine).setCommand, keys: firstKey},
		"del":      {arity: -2, run: (*Engine).delCommand, keys: allKeys},
		"unlink":   {arity: -2, run: (*Engine).delCommand, keys: allKeys},
		"exists":   {arity: -2, run: (*Engine).existsCommand, keys: allKeys, readonly: true},
		"type":     {arity: 2, run: (*Engine).typeCommand, keys: firstKey, readonly: true},
		"mget":     {arity: -2, run: (*Engine).mgetCommand, keys: allKeys, readonly: true},
		"pexpire":  {arity: -3, run: (*Engine).pexpireCommand, keys: firstKey},
		"pttl":     {arity: 2, run: (*Engine).pttlCommand, keys: firstKey, readonly: true},
		"ttl":      {arity: 2, run: (*Engine).pttlCommand, keys: firstKey, readonly: true},
		"incr":     {arity: 2, run: (*Engine).incrCommand, keys: firstKey},
		"incrby":   {arity: 3, run: (*Engine).incrbyCommand, keys: firstKey},
		"decrby":   {arity: 3, run: (*Engine).incrbyCommand, keys: firstKey},
		"expire":   {arity: -3, run: (*Engine).pexpireCommand, keys: firstKey},
		"rpush":    {arity: -3, run: (*Engine).rpushCommand, keys: firstKey},
		"flushall": {arity: -1, run: (*Engine).flushCommand, noScript: true},
		"flushdb":  {arity: -1, run: (*Engine).flushCommand, noScript: true},
		"dbsize":   {arity: 1, run: (*Engine).dbsizeCommand},
		"delex": {arity: -2, run: (*Engine).delexCommand, keys: firstKey,
			has: func(s profileSpec) bool { return s.delex }},
		"digest": {arity: 2, run: (*Engine).digestCommand, keys: firstKey, readonly: true,
			has: func(s profileSpec) bool { return s.delex }},
		"delifeq": {arity: 3, run: (*Engine).delifeqCommand, keys: firstKey,
			has: func(s profileSpec) bool { return s.delifeq }},
	}
}

// stringValue returns the string at key; wrong is true for other types.
func (e *Engine) stringValue(c *client, key string) (v *value, wrong bool) {
	v = e.lookup(c, key)
	return v, v != nil && v.notString()
}

func (e *Engine) getCommand(c *client, args []string) reply {
	v, wrong := e.stringValue(c, args[1])
	switch {
	case wrong:
		return wrongType
	case v == nil:
		return null()
	}
	return bulk(v.str)
}

func (e *Engine) mgetCommand(c *client, args []string) reply {
	out := make([]reply, 0, len(args)-1)
	for _, k := range args[1:] {
		if v, wrong := e.stringValue(c, k); v == nil || wrong {
			out = append(out, null())
		} else {
			out = append(out, bulk(v.str))
		}
	}
	return array(out...)
}

func (e *Engine) delCommand(c *client, args []string) reply {
	var n int64
	for _, k := range args[1:] {
		if e.lookup(c, k) != nil {
			delete(e.dbs[c.db], k)
			e.keyModified(k, e.modifier(c))
			n++
		}
	}
	return integer(n)
}

func (e *Engine) existsCommand(c *client, args []string) reply {
	var n int64
	for _, k := range args[1:] {
		if e.lookup(c, k) != nil {
			n++
		}
	}
	return integer(n)
}

// typeCommand is TYPE key: string, list, zset or none.
func (e *Engine) typeCommand(c *client, args []string) reply {
	v := e.lookup(c, args[1])
	switch {
	case v == nil:
		return status("none")
	case v.isList:
		return status("list")
	case v.zset != nil:
		return status("zset")
	}
	return status("string")
}

func (e *Engine) pexpireCommand(c *client, args []string) reply {
	flags, r := parseExpireFlags(args[3:])
	if isError(r) {
		return r
	}
	ms, ok := parseInt(args[2])
	if !ok {
		return notInteger
	}
	if name := strings.ToLower(args[0]); name == "expire" { // EXPIRE: seconds
		if ms > math.MaxInt64/1000 || ms < math.MinInt64/1000 {
			return errorf("ERR invalid expire time in '%s' command", name)
		}
		ms *= 1000
	}
	v := e.lookup(c, args[1])
	if v == nil {
		return integer(0)
	}
	at := e.now() + ms
	const forever = int64(1) << 62
	cur := v.expireAt
	if cur == 0 {
		cur = forever
	}
	if (flags["nx"] && v.expireAt != 0) || (flags["xx"] && v.expireAt == 0) ||
		(flags["gt"] && at <= cur) || (flags["lt"] && at >= cur) {
		return integer(0)
	}
	if ms <= 0 {
		delete(e.dbs[c.db], args[1])
	} else {
		v.expireAt = at
		e.noteExpiry(at)
	}
	e.keyModified(args[1], e.modifier(c))
	return integer(1)
}

// parseExpireFlags parses PEXPIRE's NX|XX|GT|LT options.
func parseExpireFlags(opts []string) (map[string]bool, reply) {
	flags := map[string]bool{}
	for _, o := range opts {
		f := strings.ToLower(o)
		if f != "nx" && f != "xx" && f != "gt" && f != "lt" {
			return nil, errorf("ERR Unsupported option %s", o)
		}
		flags[f] = true
	}
	if flags["nx"] && (flags["xx"] || flags["gt"] || flags["lt"]) {
		return nil, errReply("ERR NX and XX, GT or LT options at the same time are not compatible")
	}
	if flags["gt"] && flags["lt"] {
		return nil, errReply("ERR GT and LT options at the same time are not compatible")
	}
	return flags, okReply
}

func (e *Engine) pttlCommand(c *client, args []string) reply {
	v := e.lookup(c, args[1])
	switch {
	case v == nil:
		return integer(-2)
	case v.expireAt == 0:
		return integer(-1)
	}
	ttl := max(v.expireAt-e.now(), 0)
	if strings.EqualFold(args[0], "ttl") {
		ttl = (ttl + 500) / 1000
	}
	return integer(ttl)
}

func (e *Engine) incrCommand(c *client, args []string) reply {
	return e.incrementBy(c, args[1], 1)
}

// incrbyCommand is INCRBY and DECRBY (the increment read first, as
// incrbyCommand and decrbyCommand do; DECRBY of the smallest int64 cannot
// be negated).
func (e *Engine) incrbyCommand(c *client, args []string) reply {
	n, ok := parseInt(args[2])
	if !ok {
		return notInteger
	}
	if strings.EqualFold(args[0], "decrby") {
		if n == math.MinInt64 {
			return errReply("ERR decrement would overflow")
		}
		n = -n
	}
	return e.incrementBy(c, args[1], n)
}

// incrementBy adds by to the integer at key (0 when missing), as
// incrDecrCommand does.
func (e *Engine) incrementBy(c *client, key string, by int64) reply {
	v, wrong := e.stringValue(c, key)
	if wrong {
		return wrongType
	}
	var n int64
	if v != nil {
		var ok bool
		if n, ok = parseInt(v.str); !ok {
			return notInteger
		}
	}
	if (by < 0 && n < 0 && by < math.MinInt64-n) || (by > 0 && n > 0 && by > math.MaxInt64-n) {
		return errReply("ERR increment or decrement would overflow")
	}
	if v == nil {
		v = &value{}
		e.dbs[c.db][key] = v
	}
	n += by
	v.str = formatInt(n)
	e.keyModified(key, e.modifier(c))
	return integer(n)
}

func (e *Engine) rpushCommand(c *client, args []string) reply {
	v := e.lookup(c, args[1])
	if v != nil && !v.isList {
		return wrongType
	}
	if v == nil {
		v = &value{isList: true}
		e.dbs[c.db][args[1]] = v
	}
	v.list = append(v.list, args[2:]...)
	e.keyModified(args[1], e.modifier(c))
	return integer(int64(len(v.list)))
}

func (e *Engine) flushCommand(c *client, args []string) reply {
	if len(args) > 2 || (len(args) == 2 && !strings.EqualFold(args[1], "sync") && !strings.EqualFold(args[1], "async")) {
		return syntaxError
	}
	e.invalidateAll()
	if strings.EqualFold(args[0], "flushdb") {
		e.dbs[c.db] = map[string]*value{}
		return okReply
	}
	for i := range e.dbs {
		e.dbs[i] = map[string]*value{}
	}
	return okReply
}

func (e *Engine) dbsizeCommand(c *client, _ []string) reply {
	return integer(int64(len(e.dbs[c.db])))
}

// delexCommand is Redis 8.4's DELEX key [IFEQ|IFNE value].
func (e *Engine) delexCommand(c *client, args []string) reply {
	if len(args) != 2 && len(args) != 4 {
		return wrongArity("delex")
	}
	key := args[1]
	v := e.lookup(c, key)
	if v == nil {
		return integer(0)
	}
	if len(args) == 2 {
		delete(e.dbs[c.db], key)
		e.keyModified(key, e.modifier(c))
		return integer(1)
	}
	if v.notString() {
		return errReply("ERR Key should be of string type if conditions are specified")
	}
	cond := strings.ToLower(args[2])
	switch cond {
	case "ifeq", "ifne":
	case "ifdeq", "ifdne":
		if !validDigest(args[3]) {
			return errDigestFormat
		}
	default:
		return errReply("ERR Invalid condition. Use IFEQ, IFNE, IFDEQ, or IFDNE")
	}
	if !conditionHolds(cond, args[3], v.str) {
		return integer(0)
	}
	delete(e.dbs[c.db], key)
	e.keyModified(key, e.modifier(c))
	return integer(1)
}

// digestCommand is Redis 8.4's DIGEST key: XXH3-64 of a string value.
func (e *Engine) digestCommand(c *client, args []string) reply {
	v, wrong := e.stringValue(c, args[1])
	switch {
	case wrong:
		return wrongType
	case v == nil:
		return null()
	}
	return bulk(digest(v.str))
}

// delifeqCommand is Valkey 9.0's DELIFEQ key value.
func (e *Engine) delifeqCommand(c *client, args []string) reply {
	v, wrong := e.stringValue(c, args[1])
	switch {
	case wrong:
		return wrongType
	case v == nil || v.str != args[2]:
		return integer(0)
	}
	delete(e.dbs[c.db], args[1])
	e.keyModified(args[1], e.modifier(c))
	return integer(1)
}
