package conn_test

import (
	"context"
	"errors"
	. "github.com/respire-go/respire/conn"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

func TestWaitReplyIsACountOrAnErrorWithoutMatchingTexts(t *testing.T) {
	for _, tc := range []struct {
		reply Reply
		count int64
		class Class
	}{
		{Reply{Kind: ReplyInt, Int: 0}, 0, 0},
		{Reply{Kind: ReplyInt, Int: 2}, 2, 0},
		{Reply{Kind: ReplyInt, Int: -1}, 0, Definite},
		{errReply("ERR any text at all"), 0, Definite},
		{errReply("NOPERM whatever"), 0, Definite},
		{Reply{Kind: ReplyBulk, Text: "1"}, 0, Definite},
		{nilReply, 0, Definite},
	} {
		count, err := WaitCount(tc.reply, nil)
		if count != tc.count || ClassOf(err) != tc.class || (err == nil) != (tc.class == 0) {
			t.Errorf("waitCount(%+v) = %d, %v; want %d, class %v", tc.reply, count, err, tc.count, tc.class)
		}
	}
}

// scriptAndWaitCommands lists the EVALSHA/EVAL/WAIT commands of log and the
// connections that sent them.
func scriptAndWaitCommands(log []sim.Entry) (names []string, clients map[int64]bool) {
	clients = map[int64]bool{}
	for _, e := range log {
		switch name := strings.ToUpper(e.Args[0]); name {
		case "EVALSHA", "EVAL", "WAIT":
			names = append(names, name)
			clients[e.ClientID] = true
		}
	}
	return names, clients
}

func TestReplicatedFencedAcquisitionPipelinesWaitOnTheScriptsConnection(t *testing.T) {
	for _, p := range sim.Profiles {
		t.Run(string(p), func(t *testing.T) {
			srv := startSim(t, p)
			client := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
			res, err := client.AcquireReplicated(ctxT(t), context.Background(), "{j}:lease", "{j}:fence", "a", 60000, 1, 50)
			// The simulator has no replicas: WAIT answers 0.
			if err != nil || !res.Acquired || res.FencingToken != 1 || res.Acknowledged != 0 || res.WaitErr != nil {
				t.Fatalf("AcquireFencedReplicated = %+v, %v; want token 1, 0 acknowledged", res, err)
			}
			names, clients := scriptAndWaitCommands(srv.Log())
			if want := []string{"EVALSHA", "WAIT", "EVAL", "WAIT"}; !reflect.DeepEqual(names, want) || len(clients) != 1 {
				t.Fatalf("commands = %q on %d connections; want %q on one", names, len(clients), want)
			}
			if log := srv.Log(); !reflect.DeepEqual(log[len(log)-1].Args, []string{"WAIT", "1", "50"}) {
				t.Fatalf("last command = %q; want WAIT 1 50", log[len(log)-1].Args)
			}
			res, err = client.AcquireReplicated(ctxT(t), context.Background(), "{j}:lease", "{j}:fence", "b", 60000, 1, 50)
			if err != nil || res.Acquired || res.WaitErr != nil {
				t.Fatalf("contended AcquireFencedReplicated = %+v, %v; want not acquired", res, err)
			}
		})
	}
}

func TestReplicatedFencedAcquisitionRefusesBadWaitsBeforeSending(t *testing.T) {
	srv := startSim(t, sim.Valkey90)
	client := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	srv.ResetLog()
	for _, tc := range [][2]int64{{0, 100}, {-1, 100}, {1, 0}, {1, -5}} {
		_, err := client.AcquireReplicated(ctxT(t), context.Background(), "{j}:lease", "{j}:fence", "a", 60000, tc[0], tc[1])
		if !errors.Is(err, ErrNotSubmitted) || !errors.Is(err, ErrInvalidWait) {
			t.Errorf("AcquireFencedReplicated(%d replicas, %d ms) = %v; want not submitted, ErrInvalidWait", tc[0], tc[1], err)
		}
	}
	if names, _ := scriptAndWaitCommands(srv.Log()); len(names) != 0 {
		t.Fatalf("commands sent by refused calls: %q", names)
	}
}

// In cluster mode a cross-slot pair is refused before the dedicated
// connection is taken (rueidis would panic on a cross-slot pipeline), and a
// hash-tagged pair runs on the primary of its slot.
func TestReplicatedFencedAcquisitionInClusterModeBindsToTheKeysPrimary(t *testing.T) {
	c := startCluster(t, sim.Redis70, sim.Valkey90)
	client := newPool(t, newClient(t, c.Addrs(), "", simPassword))
	_, err := client.AcquireReplicated(ctxT(t), context.Background(), "a:lease", "b:fence", "tok", 60000, 1, 50)
	if !errors.Is(err, ErrNotSubmitted) || !errors.Is(err, ErrCrossSlot) {
		t.Fatalf("AcquireFencedReplicated(cross-slot) = %v; want not submitted, ErrCrossSlot", err)
	}
	res, err := client.AcquireReplicated(ctxT(t), context.Background(), "{invoice:42}:lease", "{invoice:42}:fence", "tok", 60000, 1, 50)
	if err != nil || res.FencingToken != 1 || res.Acknowledged != 0 {
		t.Fatalf("AcquireFencedReplicated(hash-tagged) = %+v, %v; want token 1, 0 acknowledged", res, err)
	}
	for i := range 2 {
		names, clients := scriptAndWaitCommands(c.Node(i).Log())
		if len(names) != 0 && (names[len(names)-1] != "WAIT" || len(clients) != 1) {
			t.Fatalf("node %d saw %q on %d connections; want the script and WAIT on one", i, names, len(clients))
		}
	}
}

func TestReplicatedFencedAcquisitionWaitErrorReplyIsReportedNotMatched(t *testing.T) {
	srv := startSim(t, sim.Redis70)
	srv.Exec("SCRIPT", "LOAD", FencedAcquireScript)
	client := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	srv.Inject(sim.Fault{Kind: sim.FailWith, Command: "WAIT", Error: "ERR made up by the test"})
	res, err := client.AcquireReplicated(ctxT(t), context.Background(), "{j}:lease", "{j}:fence", "a", 60000, 1, 50)
	if err != nil || !res.Acquired || ClassOf(res.WaitErr) != Definite || !errors.Is(res.WaitErr, ErrServerReply) {
		t.Fatalf("AcquireFencedReplicated = %+v, %v; want acquired with a definite WaitErr", res, err)
	}
}

func TestReplicatedFencedAcquisitionLostReplyIsUncertainAndNotReplayed(t *testing.T) {
	srv := startSim(t, sim.Valkey90)
	srv.Exec("SCRIPT", "LOAD", FencedAcquireScript)
	client := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	srv.Inject(sim.Fault{Kind: sim.DropAfterExec, Command: "EVALSHA"})
	_, err := client.AcquireReplicated(ctxT(t), context.Background(), "{j}:lease", "{j}:fence", "a", 60000, 1, 50)
	if !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("AcquireFencedReplicated after a lost reply = %v; want ErrOutcomeUnknown", err)
	}
	names, _ := scriptAndWaitCommands(srv.Log())
	if !reflect.DeepEqual(names, []string{"EVALSHA"}) || srv.Exec("GET", "{j}:fence") != "$1\r\n1\r\n" {
		t.Fatalf("commands %q, counter %q; want one EVALSHA (never replayed), counter 1", names, srv.Exec("GET", "{j}:fence"))
	}
}

// A connection lost while WAIT is pending, after the script's reply arrived
// (rueidis keeps earlier replies of a pipeline in its background mode),
// gives an acquired result with an uncertain WaitErr.
func TestReplicatedFencedAcquisitionLostWaitAfterTheScriptIsAnUncertainWait(t *testing.T) {
	srv := startSim(t, sim.Redis84)
	srv.Exec("SCRIPT", "LOAD", FencedAcquireScript)
	client := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	srv.Inject(sim.Fault{Kind: sim.DropBeforeExec, Command: "WAIT"})
	ctx, cancel := context.WithCancel(context.Background()) // cancellable, no deadline: background mode
	defer cancel()
	res, err := client.AcquireReplicated(ctx, context.Background(), "{j}:lease", "{j}:fence", "a", 60000, 1, 50)
	if err != nil || !res.Acquired || ClassOf(res.WaitErr) != Uncertain {
		t.Fatalf("AcquireFencedReplicated = %+v, %v; want acquired with an uncertain WaitErr", res, err)
	}
}

func TestReplicatedFencedAcquisitionOnARealServerWithoutReplicasIsNotAcknowledged(t *testing.T) {
	addr := os.Getenv("RESPIRE_REAL_REDIS70")
	if addr == "" {
		t.Skip("RESPIRE_REAL_REDIS70 not set: no real redis-server 7.0 to test against (the Makefile starts one)")
	}
	lockRealServer(t, addr)
	password := os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD")
	client := newPool(t, newClient(t, []string{addr}, "", password))
	admin := newOutsider(t, []string{addr}, "", password)
	prefix := "conn-fenced-wait:" + time.Now().Format(time.RFC3339Nano) + ":"
	lease, fence := prefix+"{j}:lease", prefix+"{j}:fence"
	defer admin.Do(context.Background(), admin.B().Del().Key(lease, fence).Build())
	start := time.Now()
	res, err := client.AcquireReplicated(ctxT(t), context.Background(), lease, fence, "a", 60000, 1, 200)
	if err != nil || !res.Acquired || res.FencingToken != 1 || res.Acknowledged != 0 || res.WaitErr != nil {
		t.Fatalf("AcquireFencedReplicated = %+v, %v; want token 1, 0 acknowledged", res, err)
	}
	if elapsed := time.Since(start); elapsed < 190*time.Millisecond {
		t.Fatalf("WAIT 1 200 answered after %v; want it to wait its timeout", elapsed)
	}
}

// A slot that moved after rueidis read the slot map answers MOVED on the
// dedicated connection, which rueidis does not follow there: a definite
// error that proves nothing ran (ErrDidNotRun), so a later try is safe.
func TestReplicatedFencedAcquisitionMovedSlotIsDefiniteAndDidNotRun(t *testing.T) {
	c := startCluster(t, sim.Redis70, sim.Valkey90)
	client := newPool(t, newClient(t, c.Addrs(), "", simPassword))
	key, fence := "{invoice:7}:lease", "{invoice:7}:fence"
	if _, err := acquireFenced(ctxT(t), client, "{invoice:7}:warm", fence, "w", 60000); err != nil {
		t.Fatal(err) // the engine has read the slot map
	}
	from := c.NodeFor(key)
	c.MoveSlot(sim.Slot(key), 1-from)
	_, err := client.AcquireReplicated(ctxT(t), context.Background(), key, fence, "tok", 60000, 1, 50)
	if ClassOf(err) != Definite || !errors.Is(err, ErrDidNotRun) {
		t.Fatalf("AcquireFencedReplicated after a slot move = %v; want a definite MOVED that did not run", err)
	}
	if got := c.Node(1-from).Exec("EXISTS", key); got != ":0\r\n" {
		t.Fatalf("lease EXISTS on the new owner = %q; want :0", got)
	}
}

// A stop that ends while WAIT is pending closes the dedicated connection at
// once, whatever ctx (here one with a deadline far off: rueidis' synchronous
// mode ignores its cancellation): the call returns within moments with an
// error that says it was stopped, not after WAIT's timeout. A stop already
// ended sends nothing.
func TestBoundedLocksClose_AStopEndingDuringWaitClosesTheDedicatedConnection(t *testing.T) {
	srv := startSim(t, sim.Redis84)
	srv.Exec("SCRIPT", "LOAD", FencedAcquireScript)
	client := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	gate := make(chan struct{})
	defer close(gate)
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "WAIT", Gate: gate})
	stop, abort := context.WithCancel(context.Background())
	type answer struct {
		res ReplicatedFencedResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := client.AcquireReplicated(ctxT(t), stop, "{j}:lease", "{j}:fence", "a", 60000, 1, 60000)
		answered <- answer{res, err}
	}()
	if _, err := srv.WaitFor(ctxT(t), func(e sim.Entry) bool { return e.Args[0] == "WAIT" }); err != nil {
		t.Fatal(err)
	}
	abort()
	var a answer
	select {
	case a = <-answered:
	case <-time.After(5 * time.Second): // WAIT's own timeout is a minute
		t.Fatal("AcquireFencedReplicated still blocked 5s after its stop ended")
	}
	stoppedErr := a.err
	if a.err == nil {
		stoppedErr = a.res.WaitErr
	}
	if !errors.Is(stoppedErr, ErrWaitStopped) || ClassOf(stoppedErr) != Uncertain {
		t.Fatalf("AcquireFencedReplicated stopped during WAIT = %+v, %v; want an uncertain error wrapping ErrWaitStopped", a.res, a.err)
	}
	t.Log(stoppedErr)
	before := len(srv.Log())
	_, err := client.AcquireReplicated(ctxT(t), stop, "{j}:lease", "{j}:fence", "b", 60000, 1, 50)
	if !errors.Is(err, ErrWaitStopped) || ClassOf(err) != NotSubmitted || len(srv.Log()) != before {
		t.Fatalf("AcquireFencedReplicated with its stop ended = %v (%d commands sent); want not submitted, nothing sent", err, len(srv.Log())-before)
	}
}
