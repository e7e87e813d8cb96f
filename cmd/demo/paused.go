package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/coordination"
	"github.com/respire-go/respire/lease"
)

// The keys of the paused scene: a fencing-token lock's lease and its
// persistent counter, with one hash tag so that they share a cluster slot.
const (
	invoiceLease   = "{invoice:42}:lease"
	invoiceCounter = "{invoice:42}:fence"
)

// invoiceStore is the resource the paused scene protects, as
// docs/fencing.md asks of one: with every write it checks the writer's
// fencing token, accepts it when it is at least the largest it accepted
// (so one holder may write repeatedly) and remembers the largest; a
// smaller token is a holder that lost the lock, and its write is refused.
// One goroutine uses it; a real store checks and writes in one atomic step.
type invoiceStore struct {
	largest int64  // the largest fencing token accepted; 0 before any write
	total   string // the invoice's content, as the latest accepted write left it
}

// errStaleToken is the store's refusal of a token below the largest it
// accepted.
var errStaleToken = errors.New("stale fencing token")

// WriteIfNewer stores total if token is at least the largest accepted.
func (st *invoiceStore) WriteIfNewer(token int64, total string) error {
	if token < st.largest {
		return fmt.Errorf("%w: token %d < %d, the largest accepted", errStaleToken, token, st.largest)
	}
	st.largest, st.total = token, total
	return nil
}

// paused: worker-a takes a fencing-token lock, checks that it still holds
// it and, about to write, is paused (a GC, swap, SIGSTOP) past its lease.
// The demo stands for the pause by moving the server's clock instead of
// stopping worker-a, so the story is the same on every run: the lease
// expires on the server while worker-a, by its own clock, has not moved.
// worker-b takes the lock with the next token and writes; worker-a resumes
// and writes with its old token, which the store refuses.
func (s *stage) paused(ctx context.Context) error {
	coordA, errA := coordination.New(s.a.locks)
	coordB, errB := coordination.New(s.b.locks)
	if err := errors.Join(errA, errB); err != nil {
		return err
	}
	lockA, err := coordA.Acquire(ctx, invoiceLease, invoiceCounter, longLease)
	if err != nil {
		return fmt.Errorf("fenced acquire: %w", err)
	}
	defer lockA.Close()
	s.say("paused", "worker-a Acquire(%q, %q, %v) → fencing token %d", invoiceLease, invoiceCounter, longLease, lockA.FencingToken())
	s.say("", "worker-a lock.Context().Err() = %v: it holds the lock and is about to write … when it is paused", lockA.Context().Err())
	s.clock.Advance(longLease + time.Second)
	s.say("", "server clock +%v while worker-a is paused (GC, swap, SIGSTOP): its lease expired (PTTL: %s)",
		longLease+time.Second, s.pttlOf(invoiceLease))
	lockB, err := coordB.Acquire(ctx, invoiceLease, invoiceCounter, longLease)
	if err != nil {
		return fmt.Errorf("fenced acquire: %w", err)
	}
	defer lockB.Close()
	store := &invoiceStore{}
	s.say("", "worker-b Acquire(the same keys) → fencing token %d; store.WriteIfNewer(%d, %q) → %s",
		lockB.FencingToken(), lockB.FencingToken(), "total=120", writeResult(store.WriteIfNewer(lockB.FencingToken(), "total=120")))
	s.say("", "worker-a resumes: store.WriteIfNewer(%d, %q) → %s",
		lockA.FencingToken(), "total=100", writeResult(store.WriteIfNewer(lockA.FencingToken(), "total=100")))
	if err := s.guardedWrites(ctx, lockA, lockB); err != nil {
		return err
	}
	outA, errA := lockA.Release(ctx)
	outB, errB := lockB.Release(ctx)
	if err := errors.Join(errA, errB); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	s.say("", "the store keeps %q (token %d); worker-a Release → %v, worker-b Release → %v", store.total, store.largest, outA, outB)
	return nil
}

// invoiceState is the Redis hash the paused scene's guarded writes update,
// under the locks' hash tag.
const invoiceState = "{invoice:42}:state"

// guardedWrites is the same story for data kept in Redis: worker-b writes
// the invoice's hash through a guarded write (Lock.Guard), which the
// server runs only while worker-b's token holds the lease key; resumed
// worker-a's guarded write is refused — nothing written, and its lock ends
// there — while its naive HSET, sent like any write, lands over worker-b's.
func (s *stage) guardedWrites(ctx context.Context, lockA, lockB *coordination.Lock) error {
	errB := lockB.Guard(ctx, lease.Command("HSET", invoiceState, "total", "120"))
	s.say("", "worker-b lock.Guard(ctx, HSET %s total 120) → %s", invoiceState, guardResult(errB))
	errA := lockA.Guard(ctx, lease.Command("HSET", invoiceState, "total", "100"))
	s.say("", "worker-a lock.Guard(ctx, HSET %s total 100) → %s; state %s", invoiceState, guardResult(errA), lockA.State())
	s.say("", "  the hash keeps total=%s; the same write sent naively by worker-a:", s.hget(invoiceState, "total"))
	naive := s.a.send(ctx, "HSET", invoiceState, "total", "100")
	s.say("", "worker-a HSET %s total 100 → %v: total=%s, worker-b's write overwritten", invoiceState, naive, s.hget(invoiceState, "total"))
	if errB != nil || !errors.Is(errA, lease.ErrOwnershipLost) || naive != nil {
		return fmt.Errorf("guarded writes: worker-b %v, worker-a %v, naive %v", errB, errA, naive)
	}
	return nil
}

// send sends one command as any write is sent, on a connection of the
// worker's own client: nothing checks who holds the lock.
func (w *worker) send(ctx context.Context, args ...string) error {
	nodes, err := w.client.Nodes(ctx)
	if err != nil {
		return err
	}
	c, err := w.client.Dial(ctx, nodes[0])
	if err != nil {
		return err
	}
	defer c.Close()
	replies := make([]conn.Reply, 1)
	if err := c.Do(ctx, []conn.Command{{Args: args, Key: 1}}, replies); err != nil {
		return err
	}
	if replies[0].Kind == conn.ReplyError {
		return errors.New(replies[0].Text)
	}
	return nil
}

// guardResult tells what a guarded write answered.
func guardResult(err error) string {
	var loss *lease.LossError
	switch {
	case err == nil:
		return "written"
	case errors.As(err, &loss):
		return "refused, nothing written (ErrOwnershipLost, " + loss.Reason.String() + ")"
	}
	return err.Error()
}

// hget reads one field of a hash as an administrator.
func (s *stage) hget(key, field string) string {
	reply := strings.TrimSpace(s.srv.Exec("HGET", key, field))
	if i := strings.LastIndex(reply, "\n"); i >= 0 {
		return reply[i+1:]
	}
	return reply
}

// writeResult tells what the store answered a write.
func writeResult(err error) string {
	if err == nil {
		return "accepted"
	}
	return "refused: " + strings.TrimPrefix(err.Error(), errStaleToken.Error()+": ")
}
