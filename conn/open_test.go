package conn_test

import (
	"context"
	. "github.com/respire-go/respire/conn"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/respire-go/respire/sim"
)

// A burst of first callers must not open one socket each: the Pool opens one
// session per node and every caller shares it (one CLIENT ID on the server).
func TestConcurrentFirstCallersShareOneSessionOpen(t *testing.T) {
	srv := startSim(t, sim.Valkey90)
	pool := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	const callers = 64
	sessions := make([]*Pinned, callers)
	errs := make([]error, callers)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range callers {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			sessions[i], errs[i] = pool.SessionForT(ctxT(t), srv.Addr())
		}()
	}
	start.Done()
	done.Wait()
	for i := range callers {
		require.NoError(t, errs[i], "caller %d", i)
		require.Same(t, sessions[0], sessions[i], "caller %d got another session", i)
	}
	var clientIDs int
	for _, e := range srv.Log() {
		if strings.EqualFold(e.Args[0], "CLIENT") && len(e.Args) > 1 && strings.EqualFold(e.Args[1], "ID") {
			clientIDs++
		}
	}
	require.Equal(t, 1, clientIDs, "CLIENT ID commands on the server: one session open for %d callers", callers)
}

// A caller whose ctx ends stops waiting for a shared open; the others still
// get the session.
func TestACallerGivingUpDoesNotFailASharedSessionOpen(t *testing.T) {
	srv := startSim(t, sim.Redis84)
	pool := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	gate := make(chan struct{})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "CLIENT", Gate: gate,
		Match: func(args []string) bool { return strings.EqualFold(args[1], "ID") }})
	leaderCtx, cancelLeader := context.WithCancel(ctxT(t))
	leaderErr := make(chan error, 1)
	go func() { _, err := pool.SessionForT(leaderCtx, srv.Addr()); leaderErr <- err }()
	_, err := srv.WaitFor(ctxT(t), func(e sim.Entry) bool { return strings.EqualFold(e.Args[0], "CLIENT") })
	require.NoError(t, err)
	follower := make(chan *Pinned, 1)
	go func() { s, _ := pool.SessionForT(ctxT(t), srv.Addr()); follower <- s }()
	cancelLeader()
	require.ErrorIs(t, <-leaderErr, context.Canceled)
	close(gate)
	s := <-follower
	require.NotNil(t, s, "the follower must get the session the shared open made")
	require.False(t, s.Retired())
}
