package sim

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

func isCmd(name string) func(Entry) bool {
	return func(e Entry) bool { return strings.EqualFold(e.Args[0], name) }
}

// TestFaultDelayReplyGateHoldsReplyUntilClosed: the command runs, its
// reply waits for the gate, and the firing is recorded.
func TestFaultDelayReplyGateHoldsReplyUntilClosed(t *testing.T) {
	s := startSim(t, Config{})
	gate, fired := make(chan struct{}), make(chan FaultRecord, 1)
	s.Inject(Fault{Kind: DelayReply, Command: "set", Gate: gate, Fired: fired})
	w := dial(t, s.Addr())
	w.send("SET", "k", "v")
	rec := <-fired
	if rec.Kind != DelayReply || rec.Args[0] != "SET" {
		t.Fatalf("fired %+v", rec)
	}
	close(gate)
	if got := w.read(); got != ok {
		t.Fatalf("delayed reply = %q", got)
	}
	if got := s.Exec("GET", "k"); got != "$1\r\nv\r\n" {
		t.Fatalf("delayed SET not executed: %q", got)
	}
	if got := w.do("SET", "k", "w"); got != ok { // fired once, then removed
		t.Fatalf("second SET = %q", got)
	}
}

// TestFaultDelayReplyDuration delays by real time.
func TestFaultDelayReplyDuration(t *testing.T) {
	s := startSim(t, Config{})
	s.Inject(Fault{Kind: DelayReply, Delay: 20 * time.Millisecond})
	w := dial(t, s.Addr())
	start := time.Now()
	if got := w.do("PING"); got != "+PONG\r\n" || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("PING = %q after %v", got, time.Since(start))
	}
}

// TestFaultDropBeforeAndAfterExec: the connection closes without a reply;
// the command ran only for DropAfterExec.
func TestFaultDropBeforeAndAfterExec(t *testing.T) {
	for _, c := range []struct {
		kind    FaultKind
		applied string
	}{{DropBeforeExec, ":0\r\n"}, {DropAfterExec, ":1\r\n"}} {
		s := startSim(t, Config{})
		s.Inject(Fault{Kind: c.kind, Command: "SET", Match: func(a []string) bool { return a[1] == "lock" }})
		w := dial(t, s.Addr())
		w.do("SET", "other", "x") // not matched
		w.send("SET", "lock", "v")
		if !w.eof() {
			t.Fatalf("kind %d: connection not dropped", c.kind)
		}
		if got := s.Exec("EXISTS", "lock"); got != c.applied {
			t.Fatalf("kind %d: EXISTS lock = %q; want %q", c.kind, got, c.applied)
		}
		if log := s.FaultLog(); len(log) != 1 || log[0].Kind != c.kind {
			t.Fatalf("FaultLog = %+v", log)
		}
	}
}

// TestFaultFailWithRepliesErrorTimesAndClient: FailWith answers the error
// instead of executing, only for its client, Times times.
func TestFaultFailWithRepliesErrorTimesAndClient(t *testing.T) {
	s := startSim(t, Config{})
	w, other := dial(t, s.Addr()), dial(t, s.Addr())
	id, _ := parseInt(strings.Trim(w.do("CLIENT", "ID"), ":\r\n"))
	s.Inject(Fault{Kind: FailWith, Command: "set", ClientID: id, Times: 2, Error: "NOPERM denied"})
	if got := other.do("SET", "b", "1"); got != ok {
		t.Fatalf("other client = %q", got)
	}
	for range 2 {
		if got := w.do("SET", "a", "1"); got != "-NOPERM denied\r\n" {
			t.Fatalf("faulted SET = %q", got)
		}
	}
	if got := s.Exec("EXISTS", "a"); got != ":0\r\n" {
		t.Fatalf("FailWith executed the command")
	}
	if got := w.do("SET", "a", "1"); got != ok {
		t.Fatalf("third SET = %q", got)
	}
	if n := len(s.FaultLog()); n != 2 {
		t.Fatalf("FaultLog has %d records; want 2", n)
	}
}

// TestPauseHoldsCommandsUntilResume: commands are logged on arrival but
// run only after Resume.
func TestPauseHoldsCommandsUntilResume(t *testing.T) {
	s := startSim(t, Config{})
	s.Pause()
	w := dial(t, s.Addr())
	w.send("SET", "k", "v")
	if _, err := s.WaitFor(context.Background(), isCmd("SET")); err != nil {
		t.Fatal(err)
	}
	if got := s.Exec("EXISTS", "k"); got != ":0\r\n" {
		t.Fatalf("paused node executed SET")
	}
	s.Resume()
	if got := w.read(); got != ok {
		t.Fatalf("SET after Resume = %q", got)
	}
}

// TestKillClientClosesConnection: KillClient acts like CLIENT KILL ID.
func TestKillClientClosesConnection(t *testing.T) {
	s := startSim(t, Config{})
	w := dial(t, s.Addr())
	id, _ := parseInt(strings.Trim(w.do("CLIENT", "ID"), ":\r\n"))
	if !s.KillClient(id) {
		t.Fatalf("KillClient(%d) = false", id)
	}
	if !w.eof() {
		t.Fatalf("killed connection still open")
	}
	if s.KillClient(id) {
		t.Fatalf("second KillClient = true")
	}
}

// TestCommandLogRecordsArrivalOrderAndClient.
func TestCommandLogRecordsArrivalOrderAndClient(t *testing.T) {
	s := startSim(t, Config{})
	w := dial(t, s.Addr())
	id, _ := parseInt(strings.Trim(w.do("CLIENT", "ID"), ":\r\n"))
	w.nc.Write(append(encodeCommand("SET", "a", "1"), encodeCommand("GET", "a")...)) // pipelined
	if w.read() != ok || w.read() != "$1\r\n1\r\n" {
		t.Fatalf("pipelined replies wrong")
	}
	s.Exec("DEL", "a") // admin commands are not logged
	log := s.Log()
	if len(log) != 3 || log[1].Args[0] != "SET" || log[2].Args[0] != "GET" || log[2].ClientID != id || log[2].Seq != 3 {
		t.Fatalf("Log = %+v", log)
	}
	s.ResetLog()
	if len(s.Log()) != 0 {
		t.Fatalf("ResetLog left entries")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.WaitFor(ctx, isCmd("NEVER")); err == nil {
		t.Fatalf("WaitFor with cancelled ctx returned no error")
	}
}

// TestVirtualClockExpiresKeys: keys expire on the configured clock only.
func TestVirtualClockExpiresKeys(t *testing.T) {
	clock := NewManualClock(testEpoch)
	s := startSim(t, Config{Clock: clock})
	w := dial(t, s.Addr())
	w.do("SET", "lock", "v", "NX", "PX", "1000")
	clock.Advance(999 * time.Millisecond)
	if got := w.do("PTTL", "lock"); got != ":1\r\n" {
		t.Fatalf("PTTL = %q; want :1", got)
	}
	clock.Advance(2 * time.Millisecond)
	if got := w.do("GET", "lock"); got != "$-1\r\n" {
		t.Fatalf("GET after expiry = %q", got)
	}
	if got := w.do("SET", "lock", "w", "NX", "PX", "1000"); got != ok {
		t.Fatalf("SET NX after expiry = %q", got)
	}
}

// TestFailoverStandaloneKeepsKeysForgetsScripts.
func TestFailoverStandaloneKeepsKeysForgetsScripts(t *testing.T) {
	s := startSim(t, Config{Profile: Redis70})
	w := dial(t, s.Addr())
	w.do("SET", "k", "v")
	w.do("SCRIPT", "LOAD", cadScript)
	if err := s.Failover(Valkey90); err != nil {
		t.Fatal(err)
	}
	if !w.eof() {
		t.Fatalf("client survived failover")
	}
	w2 := dial(t, s.Addr())
	if got := w2.do("EVALSHA", cadSHA, "1", "k", "v"); got != "-NOSCRIPT No matching script.\r\n" {
		t.Fatalf("EVALSHA after failover = %q", got)
	}
	if got := w2.do("DELIFEQ", "k", "v"); got != ":1\r\n" {
		t.Fatalf("DELIFEQ after failover to valkey-9.0 = %q", got)
	}
	if err := s.Failover("nope"); err == nil {
		t.Fatalf("Failover to an unknown profile succeeded")
	}
}

// TestEngineInProcessWithoutSockets: the engine alone allocates ids,
// switches protocol after HELLO 3 and reports kills.
func TestEngineInProcessWithoutSockets(t *testing.T) {
	e := NewEngine(Config{Profile: Redis84})
	a, b := e.NewClient("10.0.0.1:1"), e.NewClient("10.0.0.2:2")
	if a < 1 || b <= a {
		t.Fatalf("ids %d, %d", a, b)
	}
	exec := func(id int64, args ...string) string {
		raw := make([][]byte, len(args))
		for i, s := range args {
			raw[i] = []byte(s)
		}
		return string(e.Exec(id, raw...))
	}
	if got := exec(a, "GET", "k"); got != "$-1\r\n" {
		t.Fatalf("RESP2 null = %q", got)
	}
	exec(a, "HELLO", "3")
	if got := exec(a, "GET", "k"); got != "_\r\n" {
		t.Fatalf("RESP3 null = %q", got)
	}
	if got := exec(b, "CLIENT", "KILL", "ADDR", "10.0.0.1:1"); got != ":1\r\n" || !e.Killed(a) {
		t.Fatalf("CLIENT KILL ADDR = %q, Killed = %v", got, e.Killed(a))
	}
	if got := e.Exec(a, []byte("PING")); got != nil {
		t.Fatalf("killed client executed: %q", got)
	}
	e.CloseClient(a)
	if e.Killed(a) {
		t.Fatalf("Killed after CloseClient")
	}
}

// TestKilledInMultiDiscardsQueuedCommands: as on the real servers, a connection killed
// inside MULTI gets EOF on EXEC and its queued SET never applies.
func TestKilledInMultiDiscardsQueuedCommands(t *testing.T) {
	s := startSim(t, Config{Profile: Valkey81})
	a, b := dial(t, s.Addr()), dial(t, s.Addr())
	id := strings.Trim(a.do("CLIENT", "ID"), ":\r\n")
	if a.do("MULTI") != ok || a.do("SET", "kq", "1") != "+QUEUED\r\n" {
		t.Fatal("MULTI/SET not queued")
	}
	if got := b.do("CLIENT", "KILL", "ID", id); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL = %q", got)
	}
	a.send("EXEC")
	if !a.eof() {
		t.Fatal("killed connection answered EXEC")
	}
	if got := b.do("GET", "kq"); got != "$-1\r\n" {
		t.Fatalf("queued SET applied: %q", got)
	}
}

// TestConcurrentClientsKeepMutualExclusion: many pipelining rueidis
// clients racing SET NX / compare-and-delete never both own the key.
func TestConcurrentClientsKeepMutualExclusion(t *testing.T) {
	s := startSim(t, Config{Profile: Redis84})
	c := newRueidis(t, rueidis.ClientOption{InitAddress: []string{s.Addr()}, DisableCache: true})
	ctx := context.Background()
	var owners atomic.Int32
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			token := fmt.Sprintf("owner-%d", g)
			for range 50 {
				err := c.Do(ctx, c.B().Set().Key("lock").Value(token).Nx().PxMilliseconds(60000).Build()).Error()
				if rueidis.IsRedisNil(err) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				if n := owners.Add(1); n != 1 {
					errs <- fmt.Errorf("%d owners at once", n)
				}
				owners.Add(-1)
				if err := c.Do(ctx, c.B().Arbitrary("DELEX").Keys("lock").Args("IFEQ", token).Build()).Error(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestBareCommandRepliesWithEveryCommandsEntry: COMMAND without a
// subcommand (go-redis' ClusterClient sends it to learn routing policies)
// is answered with an entry per command, as COMMAND INFO gives them, and
// the node keeps serving (it once panicked with the engine locked, which
// hung every later command and the node's Close).
func TestBareCommandRepliesWithEveryCommandsEntry(t *testing.T) {
	s := startSim(t, Config{})
	w := dial(t, s.Addr())
	w.send("COMMAND")
	if got := w.read(); !strings.HasPrefix(got, fmt.Sprintf("*%d\r\n", len(commands))) || !strings.Contains(got, "$3\r\nset\r\n") {
		t.Fatalf("COMMAND = %.80q…; want an entry per command (%d)", got, len(commands))
	}
	if got := w.do("SET", "k", "v"); got != ok {
		t.Fatalf("SET after COMMAND = %q", got)
	}
}

// tickingClock is a Clock that moves forward by step every time it is
// read: a script that reads the time twice sees time pass inside it, as a
// script preempted on a loaded machine does.
type tickingClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *tickingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

// TestScriptTimeIsFrozenForExpiry: as on a real server, a key that was
// live when a script started stays live for the whole script, however
// long the script runs: keys expire by the script's start time, never in
// the middle of it (else a script that reads TIME, then a key, can find
// the key gone before the time it read: a semaphore permit taken over
// before its end).
func TestScriptTimeIsFrozenForExpiry(t *testing.T) {
	clock := &tickingClock{now: testEpoch, step: 40 * time.Millisecond}
	s := startSim(t, Config{Clock: clock, ExpireEvery: -1})
	w := dial(t, s.Addr())
	w.do("SET", "k", "v", "PX", "100") // expires 100 ms after one tick
	script := "redis.call('time') redis.call('time') redis.call('time') redis.call('time')\n" +
		"return redis.call('get', KEYS[1])"
	if got := w.do("EVAL", script, "1", "k"); got != "$1\r\nv\r\n" {
		t.Fatalf("GET after TIME×4 in one script = %q; want the key, live when the script started", got)
	}
	if got := w.do("GET", "k"); got != "$-1\r\n" {
		t.Fatalf("GET after the script = %q; want the key expired", got)
	}
}
