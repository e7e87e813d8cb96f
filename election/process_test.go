package election

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
)

// The candidate processes: the test binary run again with helperEnv set,
// which runs TestElectionHelper_Candidate alone. A candidate campaigns,
// prints "LEADER <unix ns>" once it leads, "LOST <cause>" when its
// leadership's Context ends, and, for each "resign" line on its stdin,
// resigns and prints "RESIGNED <unix ns>" (the wall clock right after the
// delete's reply). It exits when its stdin closes.
const (
	helperEnv      = "RESPIRE_ELECTION_HELPER"
	helperAddr     = "RESPIRE_ELECTION_ADDR"
	helperPassword = "RESPIRE_ELECTION_PASSWORD"
	helperKey      = "RESPIRE_ELECTION_KEY"
	helperTTL      = "RESPIRE_ELECTION_TTL"
	helperLabel    = "RESPIRE_ELECTION_LABEL"
)

// TestElectionHelper_Candidate is the candidate process's body; in a normal
// run it does nothing.
func TestElectionHelper_Candidate(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		return
	}
	ttl, err := time.ParseDuration(os.Getenv(helperTTL))
	if err != nil {
		t.Fatal(err)
	}
	locks := newLocks(t, os.Getenv(helperAddr), os.Getenv(helperPassword))
	e := newElection(t, locks, os.Getenv(helperKey), ttl)
	if err := e.Campaign(context.Background(), os.Getenv(helperLabel)); err != nil {
		fmt.Println("ERROR", err)
		return
	}
	fmt.Println("LEADER", time.Now().UnixNano())
	go func(leadership context.Context) {
		<-leadership.Done()
		fmt.Println("LOST", strings.ReplaceAll(context.Cause(leadership).Error(), "\n", " "))
	}(e.Context())
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		if lines.Text() == "resign" {
			err := e.Resign(context.Background())
			fmt.Println("RESIGNED", time.Now().UnixNano(), err)
		}
	}
}

// candidate is a candidate process and what it printed.
type candidate struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

// startCandidate starts a candidate process for key on s, labelled label;
// it is killed, if still running, when the test ends.
func startCandidate(t *testing.T, s server, key, label string) *candidate {
	t.Helper()
	return startHelper(t, "TestElectionHelper_Candidate", s, key, label)
}

// startHelper starts the test binary again as the helper process helper
// (a TestElectionHelper_… function) for key on s, labelled label; it is
// killed, if still running, when the test ends.
func startHelper(t *testing.T, helper string, s server, key, label string) *candidate {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1", helperAddr+"="+s.addr, helperPassword+"="+s.password,
		helperKey+"="+key, helperTTL+"="+s.ttl.String(), helperLabel+"="+label)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a candidate: %v", err)
	}
	c := &candidate{cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		defer close(c.lines)
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			c.lines <- scanner.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	return c
}

// expect returns the rest of the candidate's next line that starts with
// word, within limit, and fails on an "ERROR" line.
func (c *candidate) expect(t *testing.T, word string, limit time.Duration) string {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				t.Fatalf("the candidate exited before printing %s", word)
			}
			if strings.HasPrefix(line, "ERROR") {
				t.Fatalf("the candidate: %s", line)
			}
			if rest, ok := strings.CutPrefix(line, word+" "); ok {
				return rest
			}
		case <-deadline:
			t.Fatalf("the candidate did not print %s within %v", word, limit)
		}
	}
}

// unixTime parses a candidate's "<unix ns>".
func unixTime(t *testing.T, field string) time.Time {
	t.Helper()
	ns, err := strconv.ParseInt(strings.Fields(field)[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(0, ns)
}

// follower is an in-process candidate that campaigns once the leader in a
// candidate process leads; won receives when its Campaign returned.
type follower struct {
	e        *Election
	locks    *lease.Locks
	observed <-chan Observation
	won      chan time.Time
}

// startFollower observes key's election until it sees leaderLabel, then
// campaigns as "follower" and waits until its wait is parked on the
// tracked key.
func startFollower(t *testing.T, ctx context.Context, s server, key, leaderLabel string) *follower {
	t.Helper()
	locks := newLocks(t, s.addr, s.password)
	f := &follower{e: newElection(t, locks, key, s.ttl), locks: locks, won: make(chan time.Time, 1)}
	f.observed = f.e.Observe(ctx)
	if got := next(t, f.observed, "the first leader"); got != (Observation{HasLeader: true, Label: leaderLabel}) {
		t.Fatalf("Observe = %v; want leader %q", got, leaderLabel)
	}
	go func() {
		if err := f.e.Campaign(ctx, "follower"); err != nil {
			t.Errorf("the follower's Campaign: %v", err)
		}
		f.won <- time.Now()
	}()
	deadline := time.Now().Add(10 * time.Second)
	for k := leaseinternal.Driver(locks).PushKey(key); !k.Armed || k.Waiters != 1; k = leaseinternal.Driver(locks).PushKey(key) {
		if time.Now().After(deadline) {
			t.Fatal("the follower's wait never parked on the tracked key")
		}
		time.Sleep(time.Millisecond)
	}
	return f
}

// takeover waits for the follower's Campaign and checks that it is the
// leader for Leader and Observe; it returns when the Campaign returned.
func (f *follower) takeover(t *testing.T, ctx context.Context, within time.Duration) time.Time {
	t.Helper()
	var at time.Time
	select {
	case at = <-f.won:
	case <-time.After(within):
		t.Fatalf("the follower did not lead within %v", within)
	}
	if got := nextLeader(t, f.observed, "the new leader"); got != "follower" {
		t.Fatalf("Observe = %q; want follower", got)
	}
	if leader, err := f.e.Leader(ctx); leader != "follower" || err != nil {
		t.Fatalf("Leader = %q, %v; want follower", leader, err)
	}
	return at
}

// summary renders durations as min / median / max.
func summary(samples []time.Duration) string {
	s := slices.Clone(samples)
	slices.Sort(s)
	return fmt.Sprintf("min %v, median %v, max %v (%d runs)", s[0].Round(time.Microsecond),
		s[len(s)/2].Round(time.Microsecond), s[len(s)-1].Round(time.Microsecond), len(s))
}

// runs is how many times a takeover is measured on s.
func runs(s server, real, sim int) int {
	if strings.HasPrefix(s.name, "real") {
		return real
	}
	return sim
}

// TestElectionSurvivesALeadersDeath_SIGKILL: the leader, a child process,
// is killed with SIGKILL at a random moment: its lease is neither renewed
// nor released, and the follower leads once it expired, within a lease of
// the kill (more than half a lease after it when the kill came right after
// a renewal); Leader and Observe tell the follower's label.
func TestElectionSurvivesALeadersDeath_SIGKILL(t *testing.T) {
	for _, s := range servers(t) {
		t.Run(s.name, func(t *testing.T) {
			var samples []time.Duration
			for run := range runs(s, 3, 1) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				key := fmt.Sprintf("election:kill:%d:%d", time.Now().UnixNano(), run)
				leader := startCandidate(t, s, key, "leader")
				leader.expect(t, "LEADER", 10*time.Second)
				f := startFollower(t, ctx, s, key, "leader")
				// Killed at a random moment of its renewal cycle (renewals come
				// every half lease), so the runs sample the takeover's range.
				time.Sleep(rand.N(s.ttl))
				killed := time.Now()
				if err := leader.cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				took := f.takeover(t, ctx, s.ttl+5*time.Second).Sub(killed)
				samples = append(samples, took)
				if took > s.ttl+time.Second {
					t.Errorf("takeover %v after the kill; want within the lease %v (and the expiry's delay)", took, s.ttl)
				}
				_ = f.e.Resign(ctx)
				cancel()
			}
			t.Logf("%s, lease %v: takeover after SIGKILL of the leader: %s", s.name, s.ttl, summary(samples))
		})
	}
}

// TestElectionSurvivesALeadersDeath_SIGSTOP: the leader is paused with
// SIGSTOP past its lease: the follower leads once the lease expired; when
// the paused leader is continued, its leadership's Context has ended (its
// deadline passed while it was stopped), so it does not act as leader, and
// the follower still leads.
func TestElectionSurvivesALeadersDeath_SIGSTOP(t *testing.T) {
	for _, s := range servers(t) {
		t.Run(s.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			key := fmt.Sprintf("election:stop:%d", time.Now().UnixNano())
			leader := startCandidate(t, s, key, "leader")
			leader.expect(t, "LEADER", 10*time.Second)
			f := startFollower(t, ctx, s, key, "leader")
			stopped := time.Now()
			if err := leader.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			took := f.takeover(t, ctx, s.ttl+5*time.Second).Sub(stopped)
			t.Logf("%s, lease %v: takeover after SIGSTOP of the leader: %v", s.name, s.ttl, took.Round(time.Microsecond))
			if err := leader.cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			cause := leader.expect(t, "LOST", 5*time.Second)
			t.Logf("the continued leader's leadership ended: %s", cause)
			if leaderLabel, err := f.e.Leader(ctx); leaderLabel != "follower" || err != nil {
				t.Fatalf("Leader after the old leader resumed = %q, %v; want follower", leaderLabel, err)
			}
			if f.e.Context().Err() != nil {
				t.Fatalf("the follower lost its leadership: %v", context.Cause(f.e.Context()))
			}
			_ = f.e.Resign(ctx)
		})
	}
}

// TestElectionSurvivesALeadersDeath_Resign: the leader resigns gracefully:
// its lease is deleted, and the waiting follower, told by a push, leads
// within milliseconds of the delete's reply.
func TestElectionSurvivesALeadersDeath_Resign(t *testing.T) {
	for _, s := range servers(t) {
		t.Run(s.name, func(t *testing.T) {
			var samples []time.Duration
			for run := range runs(s, 10, 3) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				key := fmt.Sprintf("election:resign:%d:%d", time.Now().UnixNano(), run)
				leader := startCandidate(t, s, key, "leader")
				leader.expect(t, "LEADER", 10*time.Second)
				f := startFollower(t, ctx, s, key, "leader")
				if _, err := io.WriteString(leader.stdin, "resign\n"); err != nil {
					t.Fatal(err)
				}
				resigned := unixTime(t, leader.expect(t, "RESIGNED", 10*time.Second))
				took := max(0, f.takeover(t, ctx, 10*time.Second).Sub(resigned))
				samples = append(samples, took)
				if took > s.ttl/2 {
					t.Errorf("takeover %v after the resignation; want far less than the lease %v", took, s.ttl)
				}
				_ = f.e.Resign(ctx)
				cancel()
			}
			t.Logf("%s, lease %v: takeover after a graceful Resign (from its reply): %s", s.name, s.ttl, summary(samples))
		})
	}
}
