package leasesuite

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/coordination"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// wrongTypeWait is the wait every acquisition of the case below is given:
// far longer than the test's own 10 s context, so that an acquisition that
// read a key of the wrong type as a holder could only end with that
// context, never with an answer.
const wrongTypeWait = time.Minute

// TestWrongTypeIsRefusedAtOnce_WaitingAcquisitionsOfEveryKind: a key of the
// wrong type under a semaphore's, a read/write lock's or a fenced lock's
// name (a hash on the real server, `HSET {n}:w f v`; a list on the sim
// profiles) makes every waiting acquisition that reads it fail at once with
// the server's WRONGTYPE reply, after one script: a read hold under a
// writer key of the wrong type, a write hold whose readers key is of the
// wrong type while another writer holds the lock, a permit, and a fenced
// lock whose lease key is of the wrong type. None waits, and none says
// another owner holds the lock.
func caseWrongTypeIsRefusedAtOnce_WaitingAcquisitionsOfEveryKind(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		other := func(key string) { tg.srv.Exec("RPUSH", key, "x") }
		if tg.real {
			other = func(key string) { tg.srv.Exec("HSET", key, "f", "v") }
		}
		locks := tg.locks(t, lease.WithoutPush())
		fenced, err := coordination.New(locks)
		if err != nil {
			t.Fatal(err)
		}
		wait := lease.WithWait(wrongTypeWait)
		for _, c := range []struct {
			name    string
			setup   func()
			acquire func(ctx context.Context) error
		}{
			{"read-hold/writer-key", func() { other("{wt}:w") },
				func(ctx context.Context) error {
					_, err := locks.RWLock("wt").RLock(ctx, time.Minute, wait)
					return err
				}},
			{"write-hold/readers-key-under-another-writer", func() { tg.srv.Exec("SET", "{wt}:w", "someone", "PX", "60000"); other("{wt}:r") },
				func(ctx context.Context) error { _, err := locks.RWLock("wt").Lock(ctx, time.Minute, wait); return err }},
			{"permit/holders-key", func() { other("{wt}:sem") },
				func(ctx context.Context) error {
					_, err := locks.Semaphore("wt", 2).Acquire(ctx, time.Minute, wait)
					return err
				}},
			{"fenced/lease-key", func() { other("{wt}:lease") },
				func(ctx context.Context) error {
					_, err := fenced.Acquire(ctx, "{wt}:lease", "{wt}:fence", time.Minute, wait)
					return err
				}},
		} {
			t.Run(c.name, func(t *testing.T) {
				tg.srv.Exec("DEL", "{wt}:w", "{wt}:r", "{wt}:sem", "{wt}:lease", "{wt}:fence")
				c.setup()
				tg.srv.ResetLog()
				err := c.acquire(ctxT(t))
				reply, ok := tr.ServerError(err)
				if !ok || !strings.HasPrefix(reply, "WRONGTYPE") || errors.Is(err, lease.ErrNotAcquired) ||
					!errors.Is(err, lease.ErrServerReply) {
					t.Fatalf("acquisition over a key of the wrong type = %v; want the server's WRONGTYPE at once", err)
				}
				// A real server's MONITOR does not show a command that failed.
				if scripts := countScripts(tg.srv.Log()); scripts > 2 || scripts == 0 && !tg.real {
					t.Fatalf("%d acquisition scripts sent; want one (EVALSHA, and EVAL after NOSCRIPT)", scripts)
				}
			})
		}
	})
}

// countScripts counts the EVALSHA and EVAL commands in log.
func countScripts(log []sim.Entry) int {
	n := 0
	for _, e := range log {
		if strings.EqualFold(e.Args[0], "EVALSHA") || strings.EqualFold(e.Args[0], "EVAL") {
			n++
		}
	}
	return n
}

func init() {
	register(Case{"WrongTypeIsRefusedAtOnce_WaitingAcquisitionsOfEveryKind", caseWrongTypeIsRefusedAtOnce_WaitingAcquisitionsOfEveryKind})
}
