package sim

import (
	"math"
	"strconv"
)

// The hash commands guarded writes and their examples use (HSET, HDEL,
// HINCRBY, and the reads HGET, HGETALL, HLEN), as Redis 7.0's t_hash.c
// answers them (recorded against a real 7.0.15: testdata/hashes-redis70.txt;
// these replies carry no version-specific text, so the four profiles
// agree). Fields keep their insertion order, as a small hash (listpack)
// does; a hash left empty is deleted, and every write that changed
// something invalidates the key for client tracking.
func hashCommands() map[string]*command {
	return map[string]*command{
		"hset":    {arity: -4, run: (*Engine).hsetCommand, keys: firstKey},
		"hdel":    {arity: -3, run: (*Engine).hdelCommand, keys: firstKey},
		"hincrby": {arity: 4, run: (*Engine).hincrbyCommand, keys: firstKey},
		"hget":    {arity: 3, run: (*Engine).hgetCommand, keys: firstKey, readonly: true},
		"hgetall": {arity: 2, run: (*Engine).hgetallCommand, keys: firstKey, readonly: true},
		"hlen":    {arity: 2, run: (*Engine).hlenCommand, keys: firstKey, readonly: true},
	}
}

// hashField is one field of a hash.
type hashField struct{ name, value string }

// hashValue returns the hash at key; wrong is true for other types.
func (e *Engine) hashValue(c *client, key string) (v *value, wrong bool) {
	v = e.lookup(c, key)
	return v, v != nil && !v.isHash
}

// field returns the index of name in v's fields, -1 when absent.
func (v *value) field(name string) int {
	for i, f := range v.hash {
		if f.name == name {
			return i
		}
	}
	return -1
}

func (e *Engine) hsetCommand(c *client, args []string) reply {
	if len(args)%2 != 0 {
		return wrongArity("hset")
	}
	v, wrong := e.hashValue(c, args[1])
	if wrong {
		return wrongType
	}
	if v == nil {
		v = &value{isHash: true}
		e.dbs[c.db][args[1]] = v
	}
	var added int64
	for i := 2; i < len(args); i += 2 {
		if at := v.field(args[i]); at >= 0 {
			v.hash[at].value = args[i+1]
		} else {
			v.hash = append(v.hash, hashField{args[i], args[i+1]})
			added++
		}
	}
	e.keyModified(args[1], e.modifier(c))
	return integer(added)
}

func (e *Engine) hdelCommand(c *client, args []string) reply {
	v, wrong := e.hashValue(c, args[1])
	switch {
	case wrong:
		return wrongType
	case v == nil:
		return integer(0)
	}
	var deleted int64
	for _, name := range args[2:] {
		if at := v.field(name); at >= 0 {
			v.hash = append(v.hash[:at], v.hash[at+1:]...)
			deleted++
		}
	}
	if len(v.hash) == 0 {
		delete(e.dbs[c.db], args[1])
	}
	if deleted > 0 {
		e.keyModified(args[1], e.modifier(c))
	}
	return integer(deleted)
}

// hincrbyCommand checks in hincrbyCommand's order: the increment, the
// key's type, the field's value, the overflow.
func (e *Engine) hincrbyCommand(c *client, args []string) reply {
	incr, ok := parseInt(args[3])
	if !ok {
		return notInteger
	}
	v, wrong := e.hashValue(c, args[1])
	if wrong {
		return wrongType
	}
	var cur int64
	at := -1
	if v != nil {
		if at = v.field(args[2]); at >= 0 {
			if cur, ok = parseInt(v.hash[at].value); !ok {
				return errReply("ERR hash value is not an integer")
			}
		}
	}
	if (incr < 0 && cur < 0 && incr < math.MinInt64-cur) || (incr > 0 && cur > 0 && incr > math.MaxInt64-cur) {
		return errReply("ERR increment or decrement would overflow")
	}
	if v == nil {
		v = &value{isHash: true}
		e.dbs[c.db][args[1]] = v
	}
	next := strconv.FormatInt(cur+incr, 10)
	if at >= 0 {
		v.hash[at].value = next
	} else {
		v.hash = append(v.hash, hashField{args[2], next})
	}
	e.keyModified(args[1], e.modifier(c))
	return integer(cur + incr)
}

func (e *Engine) hgetCommand(c *client, args []string) reply {
	v, wrong := e.hashValue(c, args[1])
	switch {
	case wrong:
		return wrongType
	case v == nil:
		return null()
	}
	if at := v.field(args[2]); at >= 0 {
		return bulk(v.hash[at].value)
	}
	return null()
}

func (e *Engine) hgetallCommand(c *client, args []string) reply {
	v, wrong := e.hashValue(c, args[1])
	switch {
	case wrong:
		return wrongType
	case v == nil:
		return mapReply()
	}
	out := make([]reply, 0, 2*len(v.hash))
	for _, f := range v.hash {
		out = append(out, bulk(f.name), bulk(f.value))
	}
	return mapReply(out...)
}

func (e *Engine) hlenCommand(c *client, args []string) reply {
	v, wrong := e.hashValue(c, args[1])
	switch {
	case wrong:
		return wrongType
	case v == nil:
		return integer(0)
	}
	return integer(int64(len(v.hash)))
}
