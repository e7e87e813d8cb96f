package leasetest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/leakcheck"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/leasetest"
	"github.com/respire-go/respire/sim"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m, leakcheck.RueidisBackground()...) }

// bound is the longest any wait of these tests lasts. What they wait for
// comes in milliseconds, or at a renewal (half a lease of at most 2 s): the
// bound only turns a broken promise into a failure instead of a hang.
const bound = 10 * time.Second

// forEachProfile runs test on a server of each profile, in parallel.
func forEachProfile(t *testing.T, test func(t *testing.T, srv *leasetest.Server)) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			t.Parallel()
			test(t, leasetest.Start(t, leasetest.WithProfile(profile)))
		})
	}
}

// boundedCtx is the test's context, ended after bound.
func boundedCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	t.Cleanup(cancel)
	return ctx
}

// acquire takes key with a keep-alive and fails the test otherwise.
func acquire(t *testing.T, ctx context.Context, locks *lease.Locks, key string, ttl time.Duration) *lease.Lock {
	t.Helper()
	lock, err := locks.Acquire(ctx, key, ttl, lease.WithKeepAlive())
	if err != nil {
		t.Fatalf("Acquire(%q, %v) = %v", key, ttl, err)
	}
	t.Cleanup(func() { lock.Close() })
	return lock
}

// lossOf waits (within ctx) for lock's context to end and returns its
// cause as a *lease.LossError, failing the test for any other cause.
func lossOf(t *testing.T, ctx context.Context, lock *lease.Lock) *lease.LossError {
	t.Helper()
	select {
	case <-lock.Context().Done():
	case <-ctx.Done():
		t.Fatalf("Lock.Context did not end within %v (state %v)", bound, lock.State())
	}
	cause := context.Cause(lock.Context())
	var loss *lease.LossError
	if !errors.As(cause, &loss) || !errors.Is(cause, lease.ErrOwnershipLost) {
		t.Fatalf("context.Cause = %v, want a *lease.LossError matching ErrOwnershipLost", cause)
	}
	return loss
}

// lastClientID returns the highest client id that has sent a command.
func lastClientID(srv *leasetest.Server) int64 {
	var id int64
	for _, e := range srv.Sim().Log() {
		id = max(id, e.ClientID)
	}
	return id
}

// waitRenewals waits for n renewals of key sent on connections opened
// after the client with id after.
func waitRenewals(ctx context.Context, srv *leasetest.Server, key string, after int64, n int) error {
	var seq int64
	for range n {
		e, err := srv.Sim().WaitFor(ctx, func(e sim.Entry) bool {
			return e.Seq > seq && e.ClientID > after && isRenewal(e.Args, key)
		})
		if err != nil {
			return err
		}
		seq = e.Seq
	}
	return nil
}

// isRenewal reports whether args renews key: SET key token IFEQ token PX
// ms, or the extension script (EVALSHA|EVAL script 1 key token ms; the
// release script has no ms).
func isRenewal(args []string, key string) bool {
	switch {
	case len(args) == 7 && strings.EqualFold(args[0], "SET") && args[1] == key && strings.EqualFold(args[3], "IFEQ"):
		return true
	case len(args) == 6 && (strings.EqualFold(args[0], "EVALSHA") || strings.EqualFold(args[0], "EVAL")):
		return args[2] == "1" && args[3] == key
	}
	return false
}

// reply runs a command on the node's administrator connection and returns
// its reply without the line end.
func reply(srv *leasetest.Server, args ...string) string {
	return strings.TrimSuffix(srv.Sim().Exec(args...), "\r\n")
}
