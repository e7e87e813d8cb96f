package sim

import (
	"math"
	"strings"
	"time"
)

// The sorted-set commands the semaphore and read/write-lock scripts use, and
// TIME, as Redis 7.0's t_zset.c answers them (recorded against a real
// 7.0.15; the four profiles agree). A sorted set is a member -> score map:
// no command here returns members in order. A set left empty is deleted, and
// every write that changed something invalidates the key for client
// tracking, once per command, as signalModifiedKey does.
func sortedSetCommands() map[string]*command {
	return map[string]*command{
		"zadd":             {arity: -4, run: (*Engine).zaddCommand, keys: firstKey},
		"zrem":             {arity: -3, run: (*Engine).zremCommand, keys: firstKey},
		"zremrangebyscore": {arity: 4, run: (*Engine).zremrangebyscoreCommand, keys: firstKey},
		"zcard":            {arity: 2, run: (*Engine).zcardCommand, keys: firstKey, readonly: true},
		"zscore":           {arity: 3, run: (*Engine).zscoreCommand, keys: firstKey, readonly: true},
		"zcount":           {arity: 4, run: (*Engine).zcountCommand, keys: firstKey, readonly: true},
		"time":             {arity: 1, run: (*Engine).timeCommand},
	}
}

// sortedSet returns the sorted set at key; wrong is true for other types.
func (e *Engine) sortedSet(c *client, key string) (v *value, wrong bool) {
	v = e.lookup(c, key)
	return v, v != nil && v.zset == nil
}

// double is a score reply: a bulk string in RESP2, a double in RESP3.
func double(f float64) reply { return reply{kind: kindDouble, str: formatScore(f)} }

// zaddFlags are ZADD's options.
type zaddFlags struct{ nx, xx, gt, lt, ch, incr bool }

// parseZaddFlags reads the options before the first score and returns
// them with the index of that score.
func parseZaddFlags(args []string) (zaddFlags, int) {
	var f zaddFlags
	i := 2
	for ; i < len(args); i++ {
		switch strings.ToLower(args[i]) {
		case "nx":
			f.nx = true
		case "xx":
			f.xx = true
		case "gt":
			f.gt = true
		case "lt":
			f.lt = true
		case "ch":
			f.ch = true
		case "incr":
			f.incr = true
		default:
			return f, i
		}
	}
	return f, i
}

// zaddCommand checks in zaddGenericCommand's order: pairs, NX with XX, GT
// LT NX together, INCR with several pairs, every score, the key's type.
func (e *Engine) zaddCommand(c *client, args []string) reply {
	f, first := parseZaddFlags(args)
	pairs := len(args) - first
	switch {
	case pairs == 0 || pairs%2 != 0:
		return syntaxError
	case f.nx && f.xx:
		return errReply("ERR XX and NX options at the same time are not compatible")
	case (f.gt && f.nx) || (f.lt && f.nx) || (f.gt && f.lt):
		return errReply("ERR GT, LT, and/or NX options at the same time are not compatible")
	case f.incr && pairs > 2:
		return errReply("ERR INCR option supports a single increment-element pair")
	}
	scores := make([]float64, 0, pairs/2)
	for i := first; i < len(args); i += 2 {
		s, ok := parseScore(args[i])
		if !ok {
			return errReply("ERR value is not a valid float")
		}
		scores = append(scores, s)
	}
	v, wrong := e.sortedSet(c, args[1])
	switch {
	case wrong:
		return wrongType
	case v == nil && f.xx:
		return zaddReply(f, false, 0, 0)
	case v == nil:
		v = &value{zset: map[string]float64{}}
		e.dbs[c.db][args[1]] = v
	}
	added, updated, processed, last := 0, 0, false, 0.0
	for j, score := range scores {
		outcome, next := zsetAdd(v.zset, f, args[first+1+2*j], score)
		if outcome == zaddNaN {
			e.afterZsetWrite(c, args[1], v, added+updated > 0)
			return errReply("ERR resulting score is not a number (NaN)")
		}
		switch outcome {
		case zaddAdded:
			added++
		case zaddUpdated:
			updated++
		}
		processed = processed || outcome != zaddNop
		last = next
	}
	e.afterZsetWrite(c, args[1], v, added+updated > 0)
	n := added
	if f.ch {
		n += updated
	}
	return zaddReply(f, processed, int64(n), last)
}

func zaddReply(f zaddFlags, processed bool, n int64, score float64) reply {
	switch {
	case !f.incr:
		return integer(n)
	case processed:
		return double(score)
	}
	return null()
}

// zaddOutcome is what zsetAdd did with one pair.
type zaddOutcome int

const (
	zaddNop     zaddOutcome = iota // NX/XX/GT/LT refused it
	zaddSame                       // processed, score unchanged
	zaddAdded                      // a new member
	zaddUpdated                    // an existing member's score changed
	zaddNaN                        // INCR made the score NaN
)

// zsetAdd is t_zset.c's zsetAdd for one member: it returns what it did
// and the member's resulting score.
func zsetAdd(z map[string]float64, f zaddFlags, member string, score float64) (zaddOutcome, float64) {
	current, exists := z[member]
	if !exists {
		if f.xx {
			return zaddNop, 0
		}
		z[member] = normalScore(score)
		return zaddAdded, score
	}
	if f.nx {
		return zaddNop, current
	}
	if f.incr {
		score += current
		if math.IsNaN(score) {
			return zaddNaN, current
		}
	}
	if (f.lt && score >= current) || (f.gt && score <= current) {
		return zaddNop, current
	}
	if score == current {
		return zaddSame, score
	}
	z[member] = normalScore(score)
	return zaddUpdated, score
}

// normalScore stores -0 as 0, as a small (listpack) sorted set does.
func normalScore(f float64) float64 {
	if f == 0 {
		return 0
	}
	return f
}

// afterZsetWrite deletes a set left empty and, when changed, tells client
// tracking.
func (e *Engine) afterZsetWrite(c *client, key string, v *value, changed bool) {
	if len(v.zset) == 0 {
		delete(e.dbs[c.db], key)
	}
	if changed {
		e.keyModified(key, e.modifier(c))
	}
}

func (e *Engine) zremCommand(c *client, args []string) reply {
	v, wrong := e.sortedSet(c, args[1])
	switch {
	case v == nil:
		return integer(0)
	case wrong:
		return wrongType
	}
	var deleted int64
	for _, member := range args[2:] {
		if _, ok := v.zset[member]; ok {
			delete(v.zset, member)
			deleted++
		}
		if len(v.zset) == 0 {
			break
		}
	}
	e.afterZsetWrite(c, args[1], v, deleted > 0)
	return integer(deleted)
}

func (e *Engine) zremrangebyscoreCommand(c *client, args []string) reply {
	lo, hi, ok := parseScoreRange(args[2], args[3])
	if !ok {
		return errReply("ERR min or max is not a float")
	}
	v, wrong := e.sortedSet(c, args[1])
	switch {
	case v == nil:
		return integer(0)
	case wrong:
		return wrongType
	}
	var deleted int64
	for member, score := range v.zset {
		if inRange(score, lo, hi) {
			delete(v.zset, member)
			deleted++
		}
	}
	e.afterZsetWrite(c, args[1], v, deleted > 0)
	return integer(deleted)
}

func (e *Engine) zcardCommand(c *client, args []string) reply {
	v, wrong := e.sortedSet(c, args[1])
	switch {
	case v == nil:
		return integer(0)
	case wrong:
		return wrongType
	}
	return integer(int64(len(v.zset)))
}

func (e *Engine) zscoreCommand(c *client, args []string) reply {
	v, wrong := e.sortedSet(c, args[1])
	switch {
	case v == nil:
		return null()
	case wrong:
		return wrongType
	}
	score, ok := v.zset[args[2]]
	if !ok {
		return null()
	}
	return double(score)
}

func (e *Engine) zcountCommand(c *client, args []string) reply {
	lo, hi, ok := parseScoreRange(args[2], args[3])
	if !ok {
		return errReply("ERR min or max is not a float")
	}
	v, wrong := e.sortedSet(c, args[1])
	switch {
	case v == nil:
		return integer(0)
	case wrong:
		return wrongType
	}
	var n int64
	for _, score := range v.zset {
		if inRange(score, lo, hi) {
			n++
		}
	}
	return integer(n)
}

// timeCommand is TIME: the engine clock's unix seconds and microseconds.
func (e *Engine) timeCommand(_ *client, _ []string) reply {
	now := e.clock.Now()
	return array(bulk(formatInt(now.Unix())), bulk(formatInt(int64(now.Nanosecond()/int(time.Microsecond)))))
}
