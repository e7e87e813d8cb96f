package dst

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
)

// quietWorld is a world with one process and no workload (its horizon has
// passed), push off, for tests of the simulated client and the engine
// over it.
func quietWorld(t *testing.T) (*world, *process) {
	t.Helper()
	opt := Options{Seed: 1, Processes: 1, Horizon: time.Nanosecond, WithoutPush: true,
		LatencyMin: time.Millisecond, LatencyMax: time.Millisecond}.withDefaults()
	w := newWorld(opt)
	return w, w.procs[0]
}

// inTask runs f as a task of p and steps w until f returned and, after
// that, for 100ms of virtual time more (what f left travelling arrives;
// the engine's own timers, a listen-only watcher's liveness check, would
// keep a world busy for ever), or until nothing is pending.
func inTask(w *world, p *process, f func()) {
	done, doneAt := false, time.Duration(0)
	p.spawn.Go(func() {
		f()
		done, doneAt = true, w.now
	})
	for (!done || w.now < doneAt+100*time.Millisecond) && w.step() {
	}
	w.stopTasks()
}

// dialIn dials the first node from a task of p (in a test's task).
func dialIn(t *testing.T, p *process) *simConn {
	t.Helper()
	c, err := p.client.Dial(context.Background(), p.w.nodes[0].addr)
	if err != nil {
		t.Fatalf("Dial = %v", err)
	}
	return c.(*simConn)
}

// do runs one command on c and returns its reply and error.
func do(ctx context.Context, c conn.Conn, args ...string) (conn.Reply, error) {
	replies := make([]conn.Reply, 1)
	err := c.Do(ctx, []conn.Command{{Args: args, Key: -1}}, replies)
	return replies[0], err
}

// TestOnlyProofIsNotSubmitted_TheSimulatedClientSaysNotWrittenOnlyBeforeTheWrite:
// the simulated connection matches conn.ErrNotWritten only when nothing
// was written — the ctx ended first, the client closed it, or it was
// known dead — and never after a write: a caller that gave up, a
// connection the server closed under the command (io.EOF once noticed),
// or one the client closed while the command was in flight (the server
// still runs it).
func TestOnlyProofIsNotSubmitted_TheSimulatedClientSaysNotWrittenOnlyBeforeTheWrite(t *testing.T) {
	w, p := quietWorld(t)
	inTask(w, p, func() {
		c := dialIn(t, p)
		if r, err := do(context.Background(), c, "SET", "k", "v"); err != nil || r.Text != "OK" {
			t.Fatalf("SET = %+v, %v; want OK", r, err)
		}
		done, cancel := context.WithCancel(context.Background())
		cancel()
		ran := w.stats.Commands
		if _, err := do(done, c, "SET", "k", "v2"); !errors.Is(err, conn.ErrNotWritten) || w.stats.Commands != ran {
			t.Errorf("ctx done before the write: %v; want ErrNotWritten and nothing run", err)
		}
		ctx, giveUp := context.WithCancel(context.Background())
		p.clock.AfterFunc(time.Millisecond/2, giveUp) // the command takes 1ms to arrive
		if _, err := do(ctx, c, "SET", "k", "v3"); err == nil || errors.Is(err, conn.ErrNotWritten) || c.Err() != nil {
			t.Errorf("caller gave up after the write: %v (conn err %v); want an error that is not ErrNotWritten, conn usable",
				err, c.Err())
		}
		w.serverClose(c.c)
		w.opt.NoticeDeadPercent = -1
		if _, err := do(context.Background(), c, "SET", "k", "v4"); !errors.Is(err, io.EOF) || errors.Is(err, conn.ErrNotWritten) {
			t.Errorf("written into a socket the server closed: %v; want io.EOF, not ErrNotWritten", err)
		}
		if _, err := do(context.Background(), c, "GET", "k"); !errors.Is(err, conn.ErrNotWritten) || c.Err() == nil {
			t.Errorf("on a connection known dead: %v (conn err %v); want ErrNotWritten", err, c.Err())
		}
		busy := dialIn(t, p)
		w.pauseNode(w.nodes[0], 20*time.Millisecond)
		p.clock.AfterFunc(time.Millisecond, busy.Close)
		ran = w.stats.Commands
		if _, err := do(context.Background(), busy, "SET", "k", "v5"); !errors.Is(err, errClosedLocally) ||
			errors.Is(err, conn.ErrNotWritten) {
			t.Errorf("closed by the client while in flight: %v; want errClosedLocally, not ErrNotWritten", err)
		}
		if _, err := do(context.Background(), busy, "GET", "k"); !errors.Is(err, conn.ErrNotWritten) {
			t.Errorf("after Close: %v; want ErrNotWritten", err)
		}
		ctx, stop := context.WithCancel(context.Background())
		p.clock.AfterFunc(30*time.Millisecond, stop)
		_ = p.spawn.Wait(ctx, nil) // let the paused node resume
		if w.stats.Commands != ran+1 {
			t.Errorf("the server ran %d commands of the closed busy connection; want its written SET", w.stats.Commands-ran)
		}
	})
	if len(w.check.violations) != 0 {
		t.Fatalf("violations: %v", w.check.violations)
	}
}

// TestSimulatorSimulatesConnectionsOnly_DialFollowsTheTopology: the
// simulated client dials the nodes the schedule has (an unknown address is
// ErrUnknownNode, a paused node's dial ends with its ctx), and every node
// answers CLUSTER SLOTS from the schedule's slot map.
func TestSimulatorSimulatesConnectionsOnly_DialFollowsTheTopology(t *testing.T) {
	w, p := quietWorld(t)
	inTask(w, p, func() {
		if _, err := p.client.Dial(context.Background(), "10.9.9.9:6379"); !errors.Is(err, conn.ErrUnknownNode) {
			t.Errorf("Dial of an unknown address = %v; want ErrUnknownNode", err)
		}
		moved := newNode(w, w.opt.Profile, w.nodeKeys())
		w.moveSlot("lock:1", moved)
		c := dialIn(t, p)
		r, err := do(context.Background(), c, "CLUSTER", "SLOTS")
		if err != nil || r.Kind != conn.ReplyArray || len(r.Array) != 3 {
			t.Fatalf("CLUSTER SLOTS = %+v, %v; want three ranges", r, err)
		}
		mid := r.Array[1].Array
		if host := mid[2].Array[0].Text + ":" + "6379"; mid[0].Int != mid[1].Int || host != moved.addr {
			t.Errorf("the moved key's slot range = %+v; want one slot on %s", mid, moved.addr)
		}
		w.pauseNode(w.nodes[0], 50*time.Millisecond)
		ctx, cancel := context.WithCancel(context.Background())
		p.clock.AfterFunc(10*time.Millisecond, cancel)
		if _, err := p.client.Dial(ctx, w.nodes[0].addr); !errors.Is(err, context.Canceled) {
			t.Errorf("Dial of a paused node = %v; want its ctx's end", err)
		}
	})
}

// TestPushDetectsLoss_TheSimulatedListenerHandsOverInvalidations: both
// ways a client listens reach the engine's handler — a RESP3 connection
// that tracks its own reads, and a listen-only one that another
// connection REDIRECTs its tracking to — and a listener's connection that
// ends tells the handler that everything may be forgotten (nil).
func TestPushDetectsLoss_TheSimulatedListenerHandsOverInvalidations(t *testing.T) {
	for _, redirect := range []bool{false, true} {
		w, p := quietWorld(t)
		w.opt.ListenRedirect = redirect
		var got [][]string
		inTask(w, p, func() {
			ctx := context.Background()
			l, err := p.client.Listen(ctx, w.nodes[0].addr, func(keys []string) { got = append(got, keys) })
			if err != nil {
				t.Fatalf("Listen = %v", err)
			}
			reader := l.Conn()
			tracking := []string{"CLIENT", "TRACKING", "ON", "OPTIN", "NOLOOP"}
			if redirect {
				if reader != nil || l.ID() == 0 {
					t.Fatalf("listen-only listener: Conn %v, ID %d; want nil and its CLIENT ID", reader, l.ID())
				}
				reader = dialIn(t, p)
				tracking = []string{"CLIENT", "TRACKING", "ON", "REDIRECT", strconv.FormatInt(l.ID(), 10), "OPTIN", "NOLOOP"}
			}
			cmds := []conn.Command{{Args: tracking, Key: -1}, {Args: []string{"CLIENT", "CACHING", "YES"}, Key: -1},
				{Args: []string{"GET", "lock:1"}, Key: 1}}
			replies := make([]conn.Reply, len(cmds))
			if err := reader.Do(ctx, cmds, replies); err != nil || replies[0].Kind == conn.ReplyError {
				t.Fatalf("tracked read = %+v, %v", replies, err)
			}
			writer := dialIn(t, p)
			if _, err := do(ctx, writer, "SET", "lock:1", "x"); err != nil {
				t.Fatal(err)
			}
			_, _ = do(ctx, writer, "PING") // the push travels meanwhile
			_, _ = do(ctx, writer, "PING")
			w.killClients(w.nodes[0])
		})
		want := [][]string{{"lock:1"}, nil}
		if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
			t.Errorf("redirect %v: the handler got %q; want %q", redirect, got, want)
		}
	}
}

// TestSimulatorSimulatesConnectionsOnly_NoTransportOfItsOwn: sim/dst
// builds each process's transport with conn.NewEngine — the wire engine
// production runs — over its simulated conn.Client, and declares nothing
// a transport has: no session, fence, watcher, renewal batch or routing
// method (its transport copy is gone).
func TestSimulatorSimulatesConnectionsOnly_NoTransportOfItsOwn(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	transportMethods := []string{"SessionForKey", "SessionFor", "Fence", "ExtendMany", "ProbeKill", "WatchRead",
		"WatchReadMany", "WatchScoreMany", "SetInvalidationHandler", "RetireAll", "Identity", "Retired", "Demoted"}
	newEngine := false
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Recv != nil && slices.Contains(transportMethods, n.Name.Name) && !isObserver(n.Recv) {
					t.Errorf("%s: sim/dst declares method %s: a transport of its own", fset.Position(n.Pos()), n.Name.Name)
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "conn" && n.Sel.Name == "NewEngine" {
					newEngine = true
				}
			}
			return true
		})
	}
	if !newEngine {
		t.Error("sim/dst never calls conn.NewEngine: it does not run the engine that ships")
	}
	var _ conn.Client = (*simClient)(nil)
	var _ conn.Conn = (*simConn)(nil)
	var _ conn.Listener = (*simListener)(nil)
	if f, _ := reflect.TypeFor[process]().FieldByName("engine"); f.Type != reflect.TypeFor[*conn.Engine]() {
		t.Errorf("a process's transport is a %v; want *conn.Engine", f.Type)
	}
}

// isObserver reports whether a method's receiver is the actor.Observer
// (whose Fence watches the driver's fences; it sends nothing).
func isObserver(recv *ast.FieldList) bool {
	star, ok := recv.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	return ok && id.Name == "observer"
}
