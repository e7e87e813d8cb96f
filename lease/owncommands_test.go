package lease

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// deadlineOnly is a client whose connections end their I/O only at a
// deadline, as go-redis' do (they notice no cancellation and do not
// pipeline): it wraps a real client's connections and records every Do
// whose ctx has no deadline — a command such a client could hold for as
// long as the server is frozen.
type deadlineOnly struct {
	conn.Client
	mu       sync.Mutex
	unbound  []string // the commands of every Do without a deadline
	commands int      // every command handed to a connection
}

func (c *deadlineOnly) Dial(ctx context.Context, node string) (conn.Conn, error) {
	inner, err := c.Client.Dial(ctx, node)
	if err != nil {
		return nil, err
	}
	return &deadlineConn{Conn: inner, c: c}, nil
}

// Listen hands out the listener as is when it carries commands itself
// (wrapped so that its commands are recorded too).
func (c *deadlineOnly) Listen(ctx context.Context, node string, fn func(keys []string)) (conn.Listener, error) {
	l, err := c.Client.Listen(ctx, node, fn)
	if err != nil || l.Conn() == nil {
		return l, err
	}
	return deadlineListener{Listener: l, conn: &deadlineConn{Conn: l.Conn(), c: c}}, nil
}

type deadlineListener struct {
	conn.Listener
	conn *deadlineConn
}

func (l deadlineListener) Conn() conn.Conn { return l.conn }

type deadlineConn struct {
	conn.Conn
	c *deadlineOnly
}

func (d *deadlineConn) Pipelined() bool { return false }

func (d *deadlineConn) Do(ctx context.Context, cmds []conn.Command, replies []conn.Reply) error {
	d.c.mu.Lock()
	d.c.commands += len(cmds)
	if _, ok := ctx.Deadline(); !ok {
		names := make([]string, len(cmds))
		for i, cmd := range cmds {
			names[i] = conn.CommandName(cmd)
		}
		d.c.unbound = append(d.c.unbound, strings.Join(names, " "))
	}
	d.c.mu.Unlock()
	return d.Conn.Do(ctx, cmds, replies)
}

// TestOwnCommandsCarryDeadlines_OnAClientThatEndsIOOnlyAtADeadline: on a
// client whose connections end their I/O only at a deadline, every command
// the library sends — the sessions' handshakes and idle PINGs, keep-alive
// renewal batches, a fence, the watcher's setup and reads, the clean-up of
// an abandoned acquisition — is handed over with a deadline, when the
// caller's own calls carry one: none could hold a connection (and Close)
// for as long as a frozen server.
func TestOwnCommandsCarryDeadlines_OnAClientThatEndsIOOnlyAtADeadline(t *testing.T) {
	srv := startSim(t, sim.Config{Profile: sim.Redis84})
	client := &deadlineOnly{Client: newClient(t, []string{srv.Addr()}, "", simPassword, false)}
	locks := newLocks(t, client, WithIdleCheck(20*time.Millisecond))
	ctx := ctxT(t) // every call of the test carries a deadline
	held, err := locks.Acquire(ctx, "held", time.Second, WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	srv.Exec("SET", "busy", "someone-else", "PX", "60000")
	if _, err := locks.Acquire(ctx, "busy", time.Second, WithWait(200*time.Millisecond)); err == nil {
		t.Fatal("acquired a key another owner holds") // the wait parks on the watcher: its setup and reads
	}
	time.Sleep(1200 * time.Millisecond) // renewal batches, idle PINGs
	gate := make(chan struct{})
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "DELEX", Gate: gate})
	cut, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := held.Release(cut); err == nil { // its outcome unknown: a fence
		t.Fatal("Release answered although its reply was held")
	}
	close(gate)
	attempt, cancelAcq := context.WithTimeout(ctx, time.Millisecond)
	defer cancelAcq()
	_, _ = locks.TryAcquire(attempt, "abandoned", time.Minute) // maybe abandoned after its SET: a clean-up
	locks.Close()
	client.mu.Lock()
	defer client.mu.Unlock()
	if client.commands < 10 {
		t.Fatalf("only %d commands were sent; the scenario did not run", client.commands)
	}
	if len(client.unbound) > 0 {
		t.Fatalf("%d of %d pipelines had no deadline: %s", len(client.unbound), client.commands,
			fmt.Sprint(client.unbound))
	}
}
