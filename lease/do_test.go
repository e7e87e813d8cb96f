package lease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

var errReportFailed = errors.New("the report failed")

// TestDoRunsUnderTheLock_HoldsThenReleases: Do acquires the key with a
// keep-alive, runs fn while the key holds the lock's token (fn's context
// is live and carries the caller's values), releases it afterwards, and
// returns nil; when fn fails it returns fn's error as is, the key released
// all the same.
func TestDoRunsUnderTheLock_HoldsThenReleases(t *testing.T) {
	forEachServer(t, func(t *testing.T, tg *target) {
		type ctxKey struct{}
		ctx := context.WithValue(ctxT(t), ctxKey{}, "v")
		locks := tg.locks(t)
		ran := false
		err := locks.Do(ctx, "do:k", 30*time.Second, func(work context.Context) error {
			ran = true
			if work.Err() != nil || work.Value(ctxKey{}) != "v" {
				t.Errorf("fn's context: %v, value %v; want live, with the caller's values", work.Err(), work.Value(ctxKey{}))
			}
			if h, found, err := locks.Holder(work, "do:k"); !found || err != nil || h.Remaining <= 0 {
				t.Errorf("Holder during the work = %+v, %v, %v; want held", h, found, err)
			}
			return nil
		}, WithOwner("do-test"))
		if err != nil || !ran {
			t.Fatalf("Do = %v (ran %v); want nil", err, ran)
		}
		if got := tg.srv.Exec("EXISTS", "do:k"); got != ":0\r\n" {
			t.Fatalf("EXISTS after Do = %q; want the key released", got)
		}
		err = locks.Do(ctx, "do:k", 30*time.Second, func(context.Context) error { return errReportFailed })
		if err != errReportFailed {
			t.Fatalf("Do = %v; want fn's error as is", err)
		}
		if got := tg.srv.Exec("EXISTS", "do:k"); got != ":0\r\n" {
			t.Fatalf("EXISTS after a failed work = %q; want the key released", got)
		}
	})
}

// TestDoRunsUnderTheLock_NotAcquiredRunsNothing: while another owner holds
// the key, Do returns an error matching ErrNotAcquired (after the wait its
// options ask for) and never runs fn; a nil fn is refused before anything
// is sent.
func TestDoRunsUnderTheLock_NotAcquiredRunsNothing(t *testing.T) {
	srv := startSim(t, sim.Config{Profile: sim.Valkey90, History: true})
	locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false))
	ctx := ctxT(t)
	srv.Exec("SET", "do:held", "another-owner", "PX", "60000")
	for _, opts := range [][]AcquireOption{nil, {WithWait(50 * time.Millisecond)}} {
		err := locks.Do(ctx, "do:held", time.Second, func(context.Context) error {
			t.Error("fn ran without the lock")
			return nil
		}, opts...)
		if !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("Do = %v; want ErrNotAcquired", err)
		}
	}
	srv.ResetLog()
	if err := locks.Do(ctx, "do:held", time.Second, nil); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("Do(nil fn) = %v; want ErrInvalidOption", err)
	}
	if cmds := lockCommands(srv.Log()); len(cmds) != 0 {
		t.Fatalf("Do(nil fn) sent %v", cmds)
	}
}

// TestDoRunsUnderTheLock_LostDuringWork: a third party takes the key while
// fn runs; fn's context ends with the loss, and Do's error matches
// ErrLostDuringWork and the cause (a *LossError) and holds fn's error,
// whether or not fn noticed. With push the loss is seen during the work;
// without it at the release, which finds the key not ours. The new
// owner's key is left alone.
func TestDoRunsUnderTheLock_LostDuringWork(t *testing.T) {
	forEachServer(t, func(t *testing.T, tg *target) {
		ctx := ctxT(t)
		for _, tc := range []struct {
			name   string
			opts   []Option
			notice bool // fn waits for its context to end
		}{{"push, fn stops", nil, true}, {"push, fn ignores it", nil, false}, {"without push", []Option{WithoutPush()}, false}} {
			t.Run(tc.name, func(t *testing.T) {
				locks := tg.locks(t, tc.opts...)
				err := locks.Do(ctx, "do:stolen", 30*time.Second, func(work context.Context) error {
					tg.srv.Exec("SET", "do:stolen", "thief", "KEEPTTL")
					if !tc.notice {
						return errReportFailed
					}
					<-work.Done()
					return context.Cause(work)
				})
				var we *WorkError
				if !errors.Is(err, ErrLostDuringWork) || !errors.Is(err, ErrOwnershipLost) || !errors.As(err, &we) {
					t.Fatalf("Do = %v; want ErrLostDuringWork with the loss", err)
				}
				var loss *LossError
				if !errors.As(err, &loss) || we.Release != nil {
					t.Fatalf("Do = %#v; want a *LossError cause and no release error", err)
				}
				if !tc.notice && !errors.Is(err, errReportFailed) {
					t.Fatalf("Do = %v; want fn's error in it too", err)
				}
				if !strings.Contains(err.Error(), "lost while the work ran") {
					t.Errorf("Do's error reads %q", err)
				}
				if got := tg.srv.Exec("GET", "do:stolen"); got != "$5\r\nthief\r\n" {
					t.Fatalf("GET after Do = %q; want the new owner's value", got)
				}
				tg.srv.Exec("DEL", "do:stolen")
			})
		}
	})
}

// TestDoRunsUnderTheLock_ReleaseOutcomeUnknown: when the release after the
// work gets no reply (the connection drops after the delete ran), Do's
// error matches ErrOutcomeUnknown, not ErrLostDuringWork: the work ran
// under the lock; only the release's outcome is unknown.
func TestDoRunsUnderTheLock_ReleaseOutcomeUnknown(t *testing.T) {
	srv := startSim(t, sim.Config{Profile: sim.Valkey90})
	locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false))
	ctx := ctxT(t)
	isRelease := func(args []string) bool {
		name := strings.ToUpper(args[0])
		return name == "DELEX" || name == "DELIFEQ"
	}
	err := locks.Do(ctx, "do:unknown", 30*time.Second, func(context.Context) error {
		srv.Inject(sim.Fault{Kind: sim.DropAfterExec, Match: isRelease})
		return nil
	})
	var we *WorkError
	if !errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrLostDuringWork) || !errors.As(err, &we) || we.Release == nil {
		t.Fatalf("Do = %v; want the release's unknown outcome alone", err)
	}
	if we.Work != nil || we.Lost != nil {
		t.Fatalf("WorkError = %+v; want only the release", we)
	}
}

// TestDoRunsUnderTheLock_APanicReleases: a panic in fn goes on through Do,
// and the lock is released on its way.
func TestDoRunsUnderTheLock_APanicReleases(t *testing.T) {
	srv := startSim(t, sim.Config{Profile: sim.Redis84})
	locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false))
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v; want fn's panic", r)
			}
		}()
		_ = locks.Do(ctxT(t), "do:panic", 30*time.Second, func(context.Context) error { panic("boom") })
	}()
	if got := srv.Exec("EXISTS", "do:panic"); got != ":0\r\n" {
		t.Fatalf("EXISTS after the panic = %q; want the key released", got)
	}
}
