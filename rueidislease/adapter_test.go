package rueidislease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/simtest"
	"github.com/respire-go/respire/sim"
)

// Only two rueidis errors prove that a command never reached a socket;
// every other one — a socket the library closed itself included — may come
// back for a command that was written and even executed. The adapter tells
// the engine with conn.ErrNotWritten, which the engine takes as NotSubmitted.
func TestOnlyProofIsNotSubmitted_OnlyARecycledConnectionOrADialFailureProvesIt(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, err := range []error{
		rueidis.ErrDedicatedClientRecycled,
		fmt.Errorf("wrapped: %w", rueidis.ErrDedicatedClientRecycled),
		dial,
		fmt.Errorf("wrapped: %w", dial),
	} {
		if got := transportError(err); !errors.Is(got, conn.ErrNotWritten) {
			t.Errorf("transportError(%v) = %v; want it to match conn.ErrNotWritten", err, got)
		}
	}
	for _, err := range []error{
		rueidis.ErrClosing, // a socket closed locally answers commands it had written, even executed ones
		io.EOF,
		io.ErrUnexpectedEOF,
		net.ErrClosed,
		syscall.ECONNRESET,
		&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET},
		&net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE},
		os.ErrDeadlineExceeded,
		context.Canceled,
		context.DeadlineExceeded,
		errors.New("anything else"),
	} {
		if got := transportError(err); errors.Is(got, conn.ErrNotWritten) {
			t.Errorf("transportError(%v) = %v; want it not to match conn.ErrNotWritten", err, got)
		}
	}
}

// severalNodes is a Sentinel client that lists more than one node, as one
// made with SendToReplicas does. Only Mode and Nodes may be called: anything
// that would send a command panics on the nil Client.
type severalNodes struct{ rueidis.Client }

func (severalNodes) Mode() rueidis.ClientMode { return rueidis.ClientModeSentinel }

func (severalNodes) Nodes() map[string]rueidis.Client {
	return map[string]rueidis.Client{"10.0.0.1:6379": nil, "10.0.0.2:6379": nil}
}

func TestLocksNeedOnePrimary_ASentinelClientWithSeveralNodesIsRefusedBeforeSending(t *testing.T) {
	e := conn.NewEngine(conn.EngineConfig{Client: NewClient(severalNodes{})})
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for name, call := range map[string]func() error{
		"acquire": func() error { _, err := e.Acquire(ctx, "k", "tok", 1000); return err },
		"extend":  func() error { _, err := e.Extend(ctx, "k", "tok", 1000); return err },
		"release": func() error { _, err := e.Release(ctx, "k", "tok"); return err },
		"owner":   func() error { _, err := e.Owner(ctx, "k"); return err },
	} {
		err := call()
		if !errors.Is(err, conn.ErrAmbiguousPrimary) || conn.ClassOf(err) != conn.NotSubmitted {
			t.Errorf("%s = %v (class %s); want ErrAmbiguousPrimary, NotSubmitted", name, err, conn.ClassOf(err))
		}
	}
}

// A redirect can name a node rueidis does not know yet (added to the cluster
// after the client read the topology). Our sessions' redirects never reach
// rueidis, so the adapter's Dial makes it learn the node (CLUSTER SLOTS,
// then one GET of a key of a slot the node serves, which rueidis follows
// itself) and the command then goes to the new node's session instead of
// failing for good.
func TestARedirectToANodeTheClientDoesNotKnowYetIsFollowed(t *testing.T) {
	c := simtest.StartCluster(t, sim.ClusterConfig{Profiles: []sim.Profile{sim.Redis84, sim.Redis84}, Password: "pw"})
	c.SetHidden(1, true)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs()[:1], Password: "pw", DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, known := client.Nodes()[c.Addrs()[1]]; known {
		t.Fatal("the client knows the hidden node")
	}
	e := conn.NewEngine(conn.EngineConfig{Client: NewClient(client)})
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	key := ""
	for n := 0; key == ""; n++ {
		if k := fmt.Sprintf("lock-%d", n); c.NodeFor(k) == 0 {
			key = k
		}
	}
	if res, err := e.Acquire(ctx, key, "tok", 60000); err != nil || !res.Owned {
		t.Fatalf("Acquire = %+v, %v", res, err)
	}
	if res, err := e.Release(ctx, key, "tok"); err != nil || !res.Owned {
		t.Fatalf("Release = %+v, %v", res, err)
	}
	c.SetHidden(1, false) // the node joined; the client has not refreshed
	c.MoveSlot(sim.Slot(key), 1)
	res, err := e.Acquire(ctx, key, "tok2", 60000)
	if err != nil || !res.Owned || res.Session.Node() != c.Addrs()[1] {
		t.Fatalf("Acquire after the move = %+v, %v; want acquired on the new node", res, err)
	}
	gets := 0
	for _, entry := range c.Node(0).Log() {
		if entry.Args[0] == "GET" {
			gets++
		}
	}
	if gets != 1 {
		t.Fatalf("the old owner saw %d GETs; want the one that taught rueidis the new node", gets)
	}
}
