package election

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/respire-go/respire/lease"
)

// TestElectionHelper_Shutdown is the body of a service process that runs
// the README's election program (leadProgram) until SIGTERM; in a normal
// run it does nothing. It prints "LEADER <unix ns>" once it leads, "WORK
// ENDED <cause>" when its work's context ends, and "EXIT <error>" when the
// program returned, then exits with status 0.
func TestElectionHelper_Shutdown(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		return
	}
	ttl, err := time.ParseDuration(os.Getenv(helperTTL))
	if err != nil {
		t.Fatal(err)
	}
	locks := newLocks(t, os.Getenv(helperAddr), os.Getenv(helperPassword))
	err = leadProgram(locks, os.Getenv(helperKey), ttl, os.Getenv(helperLabel), func(work context.Context) error {
		fmt.Println("LEADER", time.Now().UnixNano())
		<-work.Done()
		fmt.Println("WORK ENDED", work.Err(), "/", oneLine(context.Cause(work)))
		return nil
	})
	fmt.Println("EXIT", err)
}

// leadProgram is the README's election program, word for word but for its
// parameters: it stops on SIGTERM or os.Interrupt, campaigns, and runs the
// scheduler while it leads under ContextFrom(ctx), resigning when the
// scheduler returns.
func leadProgram(locks *lease.Locks, key string, ttl time.Duration, hostname string,
	runScheduler func(context.Context) error) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	e, err := New(locks, key, ttl)
	if err != nil {
		return err
	}
	if err := e.Campaign(ctx, hostname); err != nil {
		return err // ctx's cause when SIGTERM came first
	}
	defer e.Resign(context.WithoutCancel(ctx)) // hands over at once
	work, cancel := e.ContextFrom(ctx)         // ends on SIGTERM or when the leadership does
	defer cancel()
	return runScheduler(work)
}

// oneLine is err's text on one line.
func oneLine(err error) string { return strings.ReplaceAll(fmt.Sprint(err), "\n", " ") }

// TestElectionStopsOnShutdown_SIGTERM: the README's election program runs
// in a child process, over real sockets, on the sim and the real Redis
// 7.0, with a 30 s lease. SIGTERM ends its work's context (context.Canceled,
// not the leadership's cause), the program resigns and returns, and the
// process exits with status 0 at once; the key is deleted, not left to
// expire: a waiting candidate leads within seconds, far inside the lease,
// and Observe told "no leader" or the new leader, never the old one again.
func TestElectionStopsOnShutdown_SIGTERM(t *testing.T) {
	for _, s := range servers(t) {
		t.Run(s.name, func(t *testing.T) {
			s.ttl = 30 * time.Second // a key left to expire would keep the follower waiting past the test's bounds
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			key := fmt.Sprintf("election:sigterm:%d", time.Now().UnixNano())
			service := startHelper(t, "TestElectionHelper_Shutdown", s, key, "service")
			service.expect(t, "LEADER", 10*time.Second)
			f := startFollower(t, ctx, s, key, "service")
			signalled := time.Now()
			if err := service.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if ended := service.expect(t, "WORK", 10*time.Second); !strings.HasPrefix(ended, "ENDED context canceled") {
				t.Fatalf("the work's context ended with %q; want context canceled (the signal)", ended)
			}
			if exit := service.expect(t, "EXIT", 10*time.Second); exit != "<nil>" {
				t.Fatalf("the program returned %s; want nil", exit)
			}
			exited := make(chan error, 1)
			go func() { exited <- service.cmd.Wait() }()
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("the process exited with %v; want status 0", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the process did not exit within 10 s of its program's return")
			}
			took := f.takeover(t, ctx, 10*time.Second).Sub(signalled)
			t.Logf("%s: the follower led %v after the SIGTERM (lease %v)", s.name, took.Round(time.Microsecond), s.ttl)
			if err := f.e.Resign(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestElectionObserveTellsNoLeader_LeaseEnds: the leader, a child process,
// is killed with SIGKILL, so its lease is neither renewed nor released;
// once it expired Observe tells "no leader" (nobody else campaigns), within
// a lease of the kill, and Leader answers ErrNoLeader.
func TestElectionObserveTellsNoLeader_LeaseEnds(t *testing.T) {
	for _, s := range servers(t) {
		t.Run(s.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			key := fmt.Sprintf("election:expired:%d", time.Now().UnixNano())
			leader := startCandidate(t, s, key, "leader")
			leader.expect(t, "LEADER", 10*time.Second)
			observer := newElection(t, newLocks(t, s.addr, s.password), key, s.ttl)
			states := observer.Observe(ctx)
			if got := next(t, states, "the leader"); got != (Observation{HasLeader: true, Label: "leader"}) {
				t.Fatalf("Observe = %v; want leader \"leader\"", got)
			}
			killed := time.Now()
			if err := leader.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			if got := next(t, states, "no leader"); got != (Observation{}) {
				t.Fatalf("Observe after the leader's death = %v; want no leader", got)
			}
			took := time.Since(killed)
			t.Logf("%s, lease %v: Observe told no leader %v after the SIGKILL", s.name, s.ttl, took.Round(time.Millisecond))
			if took > s.ttl+5*time.Second {
				t.Errorf("no leader told %v after the kill; want within the lease %v", took, s.ttl)
			}
			if _, err := observer.Leader(ctx); !errors.Is(err, ErrNoLeader) {
				t.Fatalf("Leader = %v; want ErrNoLeader", err)
			}
		})
	}
}
