package leasesuite

import (
	"context"
	"github.com/respire-go/respire/lease"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/realserver"
)

// TestKnownClosedSessionIsSkipped_AfterTheServerClosedEveryConnection: the
// server closes every connection of the client (as a restart or failover
// does) while a keep-alive lock is held, its key tracked on the node's
// watcher. The session, in rueidis' synchronous mode (contexts without a
// Done channel) and recently used (no idle PING due), reads nothing between
// commands; the watcher's close is what the process knows. The next
// TryAcquire — one try, no wait — must not be handed to the closed socket:
// it goes to a fresh session, acquires, and nothing is fenced (every sim
// profile and the real server, through a fault proxy).
func caseKnownClosedSessionIsSkipped_AfterTheServerClosedEveryConnection(t *testing.T, tr Transport) {
	forEachFaultyServer(t, tr, func(t *testing.T, f *faulty) {
		locks := newLocks(t, tr, clientOf([]string{f.proxy.Addr()}, "", f.password, false), lease.WithIdleCheck(time.Hour))
		ctx := context.Background()
		holder, err := locks.Acquire(ctx, "held", time.Minute, lease.WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		eventually(t, "the held key tracked on the watcher", func() bool { return countArgs(f.srv.Log(), "GET", "held") >= 1 })
		for _, c := range f.proxy.Conns() {
			c.Close() // FIN, as a server that closed the connection
		}
		// The watcher's loss was handled once the holder read its key again
		// on a fresh watcher.
		eventually(t, "the held key read again", func() bool { return countArgs(f.srv.Log(), "GET", "held") >= 2 })
		before := kills(f.target)
		f.srv.ResetLog()
		a, err := locks.TryAcquire(ctx, "job", time.Minute)
		if err != nil || !a.Acquired() {
			t.Fatalf("TryAcquire after the server closed every connection = %v, %v; want acquired on a fresh session, "+
				"the closed one skipped", a.Acquired(), err)
		}
		defer a.Close()
		if n := countArgs(f.srv.Log(), "SET", "job", "NX"); n != 1 {
			t.Fatalf("%d SET NX of the key reached the server; want 1", n)
		}
		if kills(f.target) != before {
			t.Fatal("a fence was sent: the SET went to the closed socket and became uncertain")
		}
	})
}

// TestKnownClosedSessionIsSkipped_AfterARestartOnTheSamePort: the issue's
// case without a wait. A private redis-server is restarted while a
// keep-alive lock is held; a TryAcquire on the same Locks, whose session
// nothing has read since, acquires on a fresh session.
func caseKnownClosedSessionIsSkipped_AfterARestartOnTheSamePort(t *testing.T, tr Transport) {
	r := realserver.StartPrivate(t)
	locks := newLocks(t, tr, clientOf([]string{r.Addr}, "", r.Password, false), lease.WithIdleCheck(time.Hour))
	ctx := context.Background()
	holder, err := locks.Acquire(ctx, "held", time.Minute, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	eventually(t, "the held key tracked on the watcher", func() bool { return commandCalls(t, r, "get") >= 1 })
	r.Stop(t)
	r.Start(t)
	eventually(t, "the held key read again after the restart", func() bool { return commandCalls(t, r, "get") >= 1 })
	a, err := locks.TryAcquire(ctx, "job", 2*time.Second)
	if err != nil || !a.Acquired() {
		t.Fatalf("TryAcquire after a restart = %v, %v; want acquired on a fresh session", a.Acquired(), err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

// commandCalls returns how often the private server ran command (INFO
// commandstats, lower-case name).
func commandCalls(t *testing.T, r *realserver.Private, command string) int {
	t.Helper()
	for _, line := range strings.Split(r.MustExec(t, "INFO", "commandstats"), "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+command+":calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

func init() {
	register(
		Case{"KnownClosedSessionIsSkipped_AfterTheServerClosedEveryConnection", caseKnownClosedSessionIsSkipped_AfterTheServerClosedEveryConnection},
		Case{"KnownClosedSessionIsSkipped_AfterARestartOnTheSamePort", caseKnownClosedSessionIsSkipped_AfterARestartOnTheSamePort},
	)
}
