package conn_test

import (
	"errors"
	. "github.com/respire-go/respire/conn"
	"strings"
	"testing"
)

// wrongTypeCase is one operation run against keys of the wrong type: set
// up the keys (other is a key of another type: a list, or a hash on the
// real server), run op, and expect a definite error at once.
type wrongTypeCase struct {
	name  string
	setup func(s primServer, other func(key string))
	op    Op
	// code is the error code the server answers with ("WRONGTYPE" for
	// every script; a native command answers with its own text).
	code string
}

// wrongTypeCases are every script of the semaphore, the read/write lock,
// the fenced acquisition and the mutex (and the native commands beside
// them), each with each key of the wrong type, including the keys a script
// could skip (a writer key held by another, a lease that exists).
func wrongTypeCases(s primServer) []wrongTypeCase {
	sem := Semaphore{HoldersKey: s.prefix + "{wt}:sem", Limit: 2}
	rw := RWLock{WriterKey: s.prefix + "{wt}:w", ReadersKey: s.prefix + "{wt}:r"}
	lease, counter := s.prefix+"{wt}:lease", s.prefix+"{wt}:fence"
	held := func(key string) { s.exec("SET", key, "someone", "PX", "60000") }
	wrong := func(keys ...string) func(primServer, func(string)) {
		return func(_ primServer, other func(string)) {
			for _, k := range keys {
				other(k)
			}
		}
	}
	wrongWith := func(heldKey string, keys ...string) func(primServer, func(string)) {
		return func(_ primServer, other func(string)) {
			held(heldKey)
			for _, k := range keys {
				other(k)
			}
		}
	}
	return []wrongTypeCase{
		{"semaphore-acquire", wrong(sem.HoldersKey), sem.AcquireOp("a", 60000), "WRONGTYPE"},
		{"semaphore-renew", wrong(sem.HoldersKey), sem.RenewOp("a", 60000), "WRONGTYPE"},
		{"semaphore-release", wrong(sem.HoldersKey), sem.ReleaseOp("a"), "WRONGTYPE"},
		{"semaphore-lease", wrong(sem.HoldersKey), sem.LeaseOp("a"), "WRONGTYPE"},
		{"semaphore-holders", wrong(sem.HoldersKey), sem.HoldersOp(), "WRONGTYPE"},
		{"read-acquire/writer", wrong(rw.WriterKey), rw.ReadAcquireOp("r", 60000), "WRONGTYPE"},
		{"read-acquire/readers", wrong(rw.ReadersKey), rw.ReadAcquireOp("r", 60000), "WRONGTYPE"},
		{"read-acquire/readers-under-a-writer", wrongWith(rw.WriterKey, rw.ReadersKey), rw.ReadAcquireOp("r", 60000), "WRONGTYPE"},
		{"write-acquire/writer", wrong(rw.WriterKey), rw.WriteAcquireOp("w", 60000, 5000), "WRONGTYPE"},
		{"write-acquire/readers", wrong(rw.ReadersKey), rw.WriteAcquireOp("w", 60000, 5000), "WRONGTYPE"},
		{"write-acquire/readers-under-another-writer", wrongWith(rw.WriterKey, rw.ReadersKey), rw.WriteAcquireOp("w", 60000, 5000), "WRONGTYPE"},
		{"read-renew", wrong(rw.ReadersKey), rw.ReadRenewOp("r", 60000), "WRONGTYPE"},
		{"read-release", wrong(rw.ReadersKey), rw.ReadReleaseOp("r"), "WRONGTYPE"},
		{"read-lease", wrong(rw.ReadersKey), rw.ReadLeaseOp("r"), "WRONGTYPE"},
		{"readers", wrong(rw.ReadersKey), rw.ReadersOp(), "WRONGTYPE"},
		{"writer", wrong(rw.WriterKey), rw.WriterOp(), "WRONGTYPE"},
		{"fenced-acquire/lease", wrong(lease), FencedAcquireOp(lease, counter, "f", 60000), "WRONGTYPE"},
		{"fenced-acquire/counter", wrong(counter), FencedAcquireOp(lease, counter, "f", 60000), "WRONGTYPE"},
		{"fenced-acquire/counter-under-a-lease", wrongWith(lease, counter), FencedAcquireOp(lease, counter, "f", 60000), "WRONGTYPE"},
		{"owner-lease", wrong(lease), OwnerLeaseOp(lease, "x"), "WRONGTYPE"},
		{"owner", wrong(lease), OwnerOp(lease), "WRONGTYPE"},
		{"hand-over", wrong(lease), HandOverOp(lease, "x", "y", 60000), "WRONGTYPE"},
		// The mutex's renewal and release: a script on Redis 7.0 (WRONGTYPE), a
		// native command elsewhere (SET IFEQ: WRONGTYPE; DELEX IFEQ: "ERR Key
		// should be of string type…"): a definite error at once either way.
		{"extend", wrong(lease), ExtendOp(lease, "x", 60000), ""},
		{"release", wrong(lease), ReleaseOp(lease, "x"), ""},
		{"write-renew", wrong(rw.WriterKey), rw.WriteRenewOp("w", 60000), ""},
		{"write-release", wrong(rw.WriterKey), rw.WriteReleaseOp("w"), ""},
	}
}

// Goal: every script refuses a key of the wrong type with the server's
// WRONGTYPE error at once, never reading it as a holder, a writer or a
// lease (which would make a waiting caller wait for nothing): each key of
// each script, also the ones a script could skip because another key
// already answered, on every sim profile (a list as the wrong type) and on
// the real redis-server 7.0 (a hash).
func TestWrongTypeIsRefusedAtOnce_EveryScriptEveryKey(t *testing.T) {
	for _, s := range primitiveServers(t) {
		t.Run(s.name, func(t *testing.T) {
			other := func(key string) { s.exec("RPUSH", key, "x") }
			if s.name == "real-redis-7.0" {
				other = func(key string) { s.exec("HSET", key, "f", "v") }
			}
			for _, c := range wrongTypeCases(s) {
				t.Run(c.name, func(t *testing.T) {
					s.exec("DEL", s.prefix+"{wt}:sem", s.prefix+"{wt}:w", s.prefix+"{wt}:r", s.prefix+"{wt}:lease", s.prefix+"{wt}:fence")
					c.setup(s, other)
					res, err := s.pool.Do(ctxT(t), c.op, nil)
					var e *Error
					if !errors.As(err, &e) || e.Class != Definite {
						t.Fatalf("%s on a key of the wrong type = %+v, %v; want a definite error", c.op.Name(), res, err)
					}
					if c.code != "" && (e.Code != c.code || !strings.Contains(err.Error(), "wrong kind of value")) {
						t.Fatalf("%s on a key of the wrong type: %v (code %q); want %s", c.op.Name(), err, e.Code, c.code)
					}
					if errors.Is(err, ErrDidNotRun) {
						t.Fatalf("%s: %v matches ErrDidNotRun; a wrong type is no reason to try again", c.op.Name(), err)
					}
				})
			}
		})
	}
}
