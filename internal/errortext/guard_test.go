package errortext

import (
	"errors"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/coordination"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
)

// guardMessages: the guarded writes' errors, from real calls (the settled
// and unknown outcomes built as the library builds them).
func guardMessages(t *testing.T) []message {
	srv := leasetest.Start(t)
	locks := srv.Locks()
	ctx := t.Context()
	stolen := held(t, locks, "{g1}:lock")
	srv.Steal("{g1}:lock")
	refused := stolen.Guard(ctx, lease.Command("HSET", "{g1}:h", "f", "v"))
	lock := held(t, locks, "{g2}:lock")
	permit, err := locks.Semaphore("workers-g", 2).Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer permit.Close()
	coord, err := coordination.New(locks)
	if err != nil {
		t.Fatal(err)
	}
	fenced, err := coord.Acquire(ctx, "{inv}:lease", "{inv}:fence", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer fenced.Close()
	srv.Sim().Exec("SET", conn.GuardFenceKey("{inv}:fence"), "9")
	unknown := &conn.Error{Class: conn.Uncertain, Op: "guarded-write", Addr: "127.0.0.1:6379",
		Err: errors.New("read tcp 127.0.0.1:50312->127.0.0.1:6379: i/o timeout")}
	write := lease.Command("HSET", "{g2}:h", "f", "v")
	return []message{
		{name: "Lock.Guard, another owner took the key", err: refused, is: []error{lease.ErrOwnershipLost},
			as: []any{new(*lease.LossError)}},
		{name: "Lock.Guard on the lock it ended", err: stolen.Guard(ctx, write), is: []error{lease.ErrNotHeld, lease.ErrOwnershipLost}},
		{name: "coordination Lock.Guard, a larger fencing token wrote",
			err: fenced.Guard(ctx, lease.Command("HSET", "{inv}:h", "f", "v")), is: []error{lease.ErrOwnershipLost, lease.ErrServerReply}},
		{name: "Lock.Guard(FLUSHALL)", err: lock.Guard(ctx, lease.Command("FLUSHALL")),
			is: []error{lease.ErrWriteNotAllowed, lease.ErrNotSubmitted}, as: []any{new(*lease.WriteError)}},
		{name: `Lock.Guard(HSET "{g2}:h" "f")`, err: lock.Guard(ctx, lease.Command("HSET", "{g2}:h", "f")),
			is: []error{lease.ErrWriteArgs}, as: []any{new(*lease.WriteError)}},
		{name: "Lock.Guard(DEL of its own key)", err: lock.Guard(ctx, lease.Command("DEL", "{g2}:lock")),
			is: []error{lease.ErrReservedKey}},
		{name: "Lock.Guard()", err: lock.Guard(ctx), is: []error{lease.ErrNoWrites}},
		{name: "Lock.Guard of a permit", err: permit.Guard(ctx, write), is: []error{lease.ErrGuardKind}},
		{name: "Lock.GuardWith(Replicas 1, 10ms) with no replica", err: lock.GuardWith(ctx, lease.Guarded{
			Writes: []lease.Write{write}, Replicas: 1, ReplicaTimeout: 10 * time.Millisecond}),
			is: []error{lease.ErrWriteNotReplicated}, as: []any{new(*lease.WriteNotReplicatedError)}},
		{name: "Lock.Guard, no reply, settled: never ran",
			err: &lease.OpError{Op: "Guard", Key: "k", Err: &lease.NotWrittenError{Cause: unknown}},
			is:  []error{lease.ErrNotWritten}, as: []any{new(*lease.NotWrittenError)}},
		{name: "Lock.Guard, no reply, not settled", err: &lease.OpError{Op: "Guard", Key: "k", Err: unknown},
			is: []error{lease.ErrOutcomeUnknown}},
	}
}
