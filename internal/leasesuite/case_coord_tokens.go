package leasesuite

import (
	"errors"
	"github.com/respire-go/respire/coordination"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

const (
	leaseKey   = "{job}:lease"
	counterKey = "{job}:fence"
)

func caseFencingTokensStartAtOneAndContendersLeaveTheCounterAlone(t *testing.T, tr Transport) {
	forEachCoordServer(t, tr, func(t *testing.T, s coordServer) {
		c := newCoordinator(t, tr, []string{s.addr}, s.password, s.prefix)
		first, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute)
		if err != nil || first.FencingToken() != 1 {
			t.Fatalf("first Acquire = %v, %v; want token 1", first, err)
		}
		var wg sync.WaitGroup
		winners := make(chan int64, 20)
		for range 20 {
			wg.Go(func() {
				attempt, err := c.TryAcquire(ctxT(t), leaseKey, counterKey, time.Minute)
				if err != nil || attempt.Acquired() {
					winners <- attempt.Lock().FencingToken()
				}
			})
		}
		wg.Wait()
		close(winners)
		for token := range winners {
			t.Errorf("a contender acquired (token %d) or failed while the lease was held", token)
		}
		if got := s.exec(t, "GET", s.prefix+counterKey); got != "1" {
			t.Fatalf("counter after 20 contenders = %q; want 1", got)
		}
		if ok, err := first.ResetExpiry(ctxT(t), 2*time.Minute); !ok || err != nil || first.FencingToken() != 1 {
			t.Fatalf("ResetExpiry = %v, %v, token %d; want true, token kept", ok, err, first.FencingToken())
		}
		if out, err := first.Release(ctxT(t)); out != lease.Released || err != nil {
			t.Fatalf("Release = %v, %v; want Released", out, err)
		}
		second, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute)
		if err != nil || second.FencingToken() != 2 {
			t.Fatalf("second owner = %v, %v; want token 2", second, err)
		}
		if got := s.exec(t, "PTTL", s.prefix+counterKey); got != ":-1" {
			t.Fatalf("PTTL(counter) = %s; want :-1 (persistent)", got)
		}
		_ = second.Close()
	})
}

func caseLostLeaseGoesToTheNextOwnerAtTokenPlusOneAndTheStaleOwnerIsRefused(t *testing.T, tr Transport) {
	forEachCoordServer(t, tr, func(t *testing.T, s coordServer) {
		c := newCoordinator(t, tr, []string{s.addr}, s.password, s.prefix)
		stale, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		s.exec(t, "DEL", s.prefix+leaseKey) // the lease is lost (as by expiry)
		next, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute)
		if err != nil || next.FencingToken() != stale.FencingToken()+1 {
			t.Fatalf("next owner = %v, %v; want token %d", next, err, stale.FencingToken()+1)
		}
		if held, err := stale.VerifyStillHeld(ctxT(t)); held || err != nil {
			t.Fatalf("stale VerifyStillHeld = %v, %v; want false", held, err)
		}
		if ok, err := stale.ResetExpiry(ctxT(t), time.Minute); ok || err != nil {
			t.Fatalf("stale ResetExpiry = %v, %v; want false", ok, err)
		}
		if out, err := stale.Release(ctxT(t)); out != lease.NotOwned || err != nil {
			t.Fatalf("stale Release = %v, %v; want NotOwned", out, err)
		}
		if held, err := next.VerifyStillHeld(ctxT(t)); !held || err != nil {
			t.Fatalf("next VerifyStillHeld = %v, %v; want true", held, err)
		}
		resource := &fencedResource{}
		if err := resource.write(next.FencingToken()); err != nil {
			t.Fatalf("next owner's write: %v", err)
		}
		if err := resource.write(stale.FencingToken()); err == nil {
			t.Fatal("the resource accepted the stale token")
		}
		_ = next.Close()
	})
}

func caseTwoClientsRacingGetExactlyOneWinner(t *testing.T, tr Transport) {
	forEachCoordServer(t, tr, func(t *testing.T, s coordServer) {
		coordinators := []*coordination.Coordinator{newCoordinator(t, tr, []string{s.addr}, s.password, s.prefix),
			newCoordinator(t, tr, []string{s.addr}, s.password, s.prefix)}
		var wg sync.WaitGroup
		tokens := make(chan int64, 32)
		for i := range 32 {
			wg.Go(func() {
				attempt, err := coordinators[i%2].TryAcquire(ctxT(t), leaseKey, counterKey, time.Minute)
				if err != nil {
					t.Errorf("TryAcquire: %v", err)
				}
				if attempt.Acquired() {
					tokens <- attempt.Lock().FencingToken()
				}
			})
		}
		wg.Wait()
		close(tokens)
		var won []int64
		for token := range tokens {
			won = append(won, token)
		}
		if len(won) != 1 || won[0] != 1 {
			t.Fatalf("winners' tokens = %v; want exactly one winner with token 1", won)
		}
	})
}

func caseFencingTokensKeepFullInt64Precision(t *testing.T, tr Transport) {
	forEachCoordServer(t, tr, func(t *testing.T, s coordServer) {
		c := newCoordinator(t, tr, []string{s.addr}, s.password, s.prefix)
		for preset, want := range map[string]int64{"9007199254740992": 9007199254740993,
			"9223372036854775806": 9223372036854775807} {
			s.exec(t, "SET", s.prefix+counterKey, preset)
			lock, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute)
			if err != nil || lock.FencingToken() != want {
				t.Fatalf("Acquire after counter %s = %v, %v; want token %d", preset, lock, err, want)
			}
			_ = lock.Close()
		}
	})
}

func caseInvalidCounterIsAServerErrorWithoutLeaseAndUnchanged(t *testing.T, tr Transport) {
	forEachCoordServer(t, tr, func(t *testing.T, s coordServer) {
		c := newCoordinator(t, tr, []string{s.addr}, s.password, s.prefix)
		for _, preset := range []string{"9223372036854775807", "-1", "01", "garbage", "with-ttl"} {
			value, args := preset, []string{"SET", s.prefix + counterKey, preset}
			if preset == "with-ttl" {
				value = "5"
				args = []string{"SET", s.prefix + counterKey, value, "PX", "600000"}
			}
			s.exec(t, args...)
			attempt, err := c.TryAcquire(ctxT(t), leaseKey, counterKey, time.Minute)
			if !errors.Is(err, conn.ErrServerReply) || errors.Is(err, coordination.ErrMalformedFencingToken) || attempt.Acquired() {
				t.Errorf("counter %s: TryAcquire = %v, %v; want a server error", preset, attempt.Acquired(), err)
			}
			if got := s.exec(t, "GET", s.prefix+counterKey); got != value {
				t.Errorf("counter %s changed to %q", preset, got)
			}
			if got := s.exec(t, "EXISTS", s.prefix+leaseKey); got != ":0" {
				t.Errorf("counter %s: lease EXISTS = %s; want :0", preset, got)
			}
		}
	})
}

func casePrefixesApplyToBothKeysForEveryOperation(t *testing.T, tr Transport) {
	forEachCoordServer(t, tr, func(t *testing.T, s coordServer) {
		c := newCoordinator(t, tr, []string{s.addr}, s.password, s.prefix+"app:")
		lock, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if lock.Key() != leaseKey || lock.CounterKey() != counterKey {
			t.Fatalf("Key, CounterKey = %q, %q; want them without prefix", lock.Key(), lock.CounterKey())
		}
		owner, _ := lock.Token().Text()
		if got := s.exec(t, "GET", s.prefix+"app:"+leaseKey); got != owner {
			t.Fatalf("prefixed lease holds %q; want the owner token", got)
		}
		if got := s.exec(t, "GET", s.prefix+"app:"+counterKey); got != "1" {
			t.Fatalf("prefixed counter = %q; want 1", got)
		}
		if held, err := lock.VerifyStillHeld(ctxT(t)); !held || err != nil {
			t.Fatalf("VerifyStillHeld = %v, %v", held, err)
		}
		if ok, err := lock.ResetExpiry(ctxT(t), time.Hour); !ok || err != nil {
			t.Fatalf("ResetExpiry = %v, %v", ok, err)
		}
		if out, err := lock.Release(ctxT(t)); out != lease.Released || err != nil {
			t.Fatalf("Release = %v, %v", out, err)
		}
		if got := s.exec(t, "EXISTS", s.prefix+"app:"+leaseKey, s.prefix+leaseKey); got != ":0" {
			t.Fatalf("EXISTS after release = %s; want :0", got)
		}
	})
}

// fencedResource is what a protected resource must do: accept a write only
// when its token is >= the largest accepted so far, atomically.
type fencedResource struct {
	mu   sync.Mutex
	last int64
}

var errStaleToken = errors.New("stale fencing token")

func (r *fencedResource) write(token int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token <= 0 || token < r.last {
		return errStaleToken
	}
	r.last = token
	return nil
}

func init() {
	register(
		Case{"FencingTokensStartAtOneAndContendersLeaveTheCounterAlone", caseFencingTokensStartAtOneAndContendersLeaveTheCounterAlone},
		Case{"LostLeaseGoesToTheNextOwnerAtTokenPlusOneAndTheStaleOwnerIsRefused", caseLostLeaseGoesToTheNextOwnerAtTokenPlusOneAndTheStaleOwnerIsRefused},
		Case{"TwoClientsRacingGetExactlyOneWinner", caseTwoClientsRacingGetExactlyOneWinner},
		Case{"FencingTokensKeepFullInt64Precision", caseFencingTokensKeepFullInt64Precision},
		Case{"InvalidCounterIsAServerErrorWithoutLeaseAndUnchanged", caseInvalidCounterIsAServerErrorWithoutLeaseAndUnchanged},
		Case{"PrefixesApplyToBothKeysForEveryOperation", casePrefixesApplyToBothKeysForEveryOperation},
	)
}
