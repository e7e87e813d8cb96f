package lease

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// TestOwnerLabel_RefusedBeforeAnythingIsSent: a label with a NUL, a
// newline or another control character, one that is not UTF-8 and one
// longer than MaxOwnerLabel are refused with ErrInvalidOption, and nothing
// reaches the server.
func TestOwnerLabel_RefusedBeforeAnythingIsSent(t *testing.T) {
	srv := startSim(t, sim.Config{Profile: sim.Redis70, History: true})
	locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false))
	ctx := ctxT(t)
	srv.ResetLog()
	for _, label := range []string{"a\x00b", "job\n42", "tab\there", "\x7f", "\xff", strings.Repeat("x", MaxOwnerLabel+1)} {
		_, err := locks.Acquire(ctx, "owner:bad", time.Second, WithOwner(label))
		if !errors.Is(err, ErrInvalidOption) {
			t.Errorf("Acquire(WithOwner(%q)) = %v; want ErrInvalidOption", label, err)
		}
	}
	if cmds := lockCommands(srv.Log()); len(cmds) != 0 {
		t.Fatalf("commands sent for refused labels: %v", cmds)
	}
	if _, err := locks.Acquire(ctx, "owner:ok", time.Second, WithOwner(strings.Repeat("é", MaxOwnerLabel/2))); err != nil {
		t.Fatalf("a label of MaxOwnerLabel bytes: %v", err)
	}
}

// TestOwnerLabel_TheWholeValueIsCompared: a lock acquired WithOwner stores
// its token, a NUL byte and the label in the key; its token is that whole
// value, and every owner comparison uses it: renewal, VerifyStillHeld, the
// raw-token API (given Lock.Token, not its secret alone), the push-driven
// holder's read (a third party that writes the secret alone takes the key
// away) and release.
func TestOwnerLabel_TheWholeValueIsCompared(t *testing.T) {
	forEachServer(t, func(t *testing.T, tg *target) {
		ctx := ctxT(t)
		locks := tg.locks(t)
		const key, label = "owner:whole", "web-1 pid=4242 job=é"
		lock, err := locks.Acquire(ctx, key, 30*time.Second, WithOwner(label), WithKeepAlive())
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		value := lock.Token().bytes
		if stored := tg.srv.Exec("GET", key); stored != fmt.Sprintf("$%d\r\n%s\r\n", len(value), value) {
			t.Fatalf("GET = %q; want the lock's token %q", stored, value)
		}
		secret, rest, ok := strings.Cut(value, "\x00")
		if !ok || len(secret) != 32 || rest != label {
			t.Fatalf("stored value %q: want 32 hex characters, a NUL and %q", value, label)
		}
		if got, ok := lock.Token().OwnerLabel(); !ok || got != label || lock.OwnerLabel() != label {
			t.Fatalf("OwnerLabel = %q, %v (Lock.OwnerLabel %q); want %q", got, ok, lock.OwnerLabel(), label)
		}
		if ok, err := lock.ResetExpiry(ctx, 30*time.Second); !ok || err != nil {
			t.Fatalf("ResetExpiry = %v, %v", ok, err)
		}
		if held, err := lock.VerifyStillHeld(ctx); !held || err != nil {
			t.Fatalf("VerifyStillHeld = %v, %v", held, err)
		}
		if ok, err := locks.ResetExpiry(ctx, key, tok(secret), 30*time.Second); ok || err != nil {
			t.Fatalf("raw ResetExpiry with the secret alone = %v, %v; want false (the whole value is compared)", ok, err)
		}
		if ok, err := locks.ResetExpiry(ctx, key, lock.Token(), 30*time.Second); !ok || err != nil {
			t.Fatalf("raw ResetExpiry with Lock.Token = %v, %v", ok, err)
		}
		eventually(t, "the holder's key tracked", func() bool { return holderArmed(locks, key) })
		if lock.Context().Err() != nil {
			t.Fatalf("its own renewals ended the lock: %v", context.Cause(lock.Context()))
		}
		tg.srv.Exec("SET", key, secret, "KEEPTTL")
		waitDone(t, lock.Context())
		if loss := lossOf(t, context.Cause(lock.Context())); loss.Reason != LossReadRefused {
			t.Fatalf("loss %v; want LossReadRefused (the secret alone is another owner's value)", loss)
		}
		if out, err := lock.Release(ctx); out != NotOwned || err != nil {
			t.Fatalf("Release = %v, %v; want NotOwned", out, err)
		}
		relabelled, err := locks.Acquire(ctx, "owner:release", 30*time.Second, WithOwner(label))
		if err != nil {
			t.Fatal(err)
		}
		if out, err := relabelled.Release(ctx); out != Released || err != nil {
			t.Fatalf("Release = %v, %v; want Released", out, err)
		}
	})
}

// TestHolderRevealsNoToken_LabelAndRemaining: Locks.Holder reports a
// labelled lock's label and the lease it has left, nothing for a key that
// does not exist, no label for an unlabelled lock or a raw token (even one
// holding a NUL byte), and NoExpiry for a key without expiry; the Holder,
// printed, holds no byte of any token.
func TestHolderRevealsNoToken_LabelAndRemaining(t *testing.T) {
	forEachServer(t, func(t *testing.T, tg *target) {
		ctx := ctxT(t)
		locks := tg.locks(t)
		if h, found, err := locks.Holder(ctx, "holder:none"); found || err != nil || h != (Holder{}) {
			t.Fatalf("Holder(missing) = %+v, %v, %v; want not found", h, found, err)
		}
		labelled, err := locks.Acquire(ctx, "holder:labelled", 30*time.Second, WithOwner("host-a/pid 7"))
		if err != nil {
			t.Fatal(err)
		}
		defer labelled.Close()
		plain, err := locks.Acquire(ctx, "holder:plain", 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer plain.Close()
		rawSecret := "binary\x00secret\xff"
		if ok, err := locks.TryTake(ctx, "holder:raw", tok(rawSecret), 30*time.Second); !ok || err != nil {
			t.Fatalf("TryTake = %v, %v", ok, err)
		}
		tg.srv.Exec("SET", "holder:persistent", "v")
		secrets := []string{labelled.Token().bytes[:32], plain.Token().bytes, "secret"}
		for _, tc := range []struct {
			key   string
			label string
			lease bool
		}{{"holder:labelled", "host-a/pid 7", true}, {"holder:plain", "", true}, {"holder:raw", "", true}, {"holder:persistent", "", false}} {
			h, found, err := locks.Holder(ctx, tc.key)
			if err != nil || !found {
				t.Fatalf("Holder(%s) = %+v, %v, %v", tc.key, h, found, err)
			}
			if h.Label != tc.label || h.NoExpiry == tc.lease {
				t.Errorf("Holder(%s) = %+v; want label %q, a lease %v", tc.key, h, tc.label, tc.lease)
			}
			if tc.lease && (h.Remaining <= 0 || h.Remaining > 30*time.Second) {
				t.Errorf("Holder(%s).Remaining = %v; want in (0, 30s]", tc.key, h.Remaining)
			}
			printed := fmt.Sprintf("%v %+v %#v", h, h, h)
			for _, s := range secrets {
				if strings.Contains(printed, s) {
					t.Errorf("Holder(%s) printed %q shows a token's bytes", tc.key, printed)
				}
			}
		}
		if _, _, err := locks.Holder(ctx, ""); !errors.Is(err, ErrEmptyKey) {
			t.Fatalf("Holder(\"\") = %v; want ErrEmptyKey", err)
		}
	})
}

// TestHolderRevealsNoToken_OnlyTheLabelledFormHasALabel: a token has a
// label only in the form a WithOwner acquisition writes (32 lowercase hex
// characters, a NUL byte, a valid label); any other token — binary, with a
// NUL elsewhere, upper-case hex, a label with a control character — has
// none, so nothing of it is ever shown as one.
func TestHolderRevealsNoToken_OnlyTheLabelledFormHasALabel(t *testing.T) {
	hex := "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		value, label string
		ok           bool
	}{
		{hex + "\x00job 42", "job 42", true},
		{hex, "", false},
		{hex + "\x00", "", false},
		{strings.ToUpper(hex) + "\x00job", "", false},
		{"abc\x00job", "", false},
		{hex[:31] + "g\x00job", "", false},
		{hex + "\x00job\nsecret", "", false},
		{hex + "\x00\xff", "", false},
		{hex + "x" + "job", "", false},
	} {
		if label, ok := tok(tc.value).OwnerLabel(); label != tc.label || ok != tc.ok {
			t.Errorf("OwnerLabel(%q) = %q, %v; want %q, %v", tc.value, label, ok, tc.label, tc.ok)
		}
	}
}

// TestOwnerLabel_CostsNothingWhenUnused: without WithOwner an uncontended
// TryAcquire + Release pair allocates what it did before labels existed
// (pairAllocsBaseline) and puts the 32-byte token on the wire; with a label
// it sends the same commands, each carrying the label's length plus one
// byte more. It logs both pairs' allocations and times.
func TestOwnerLabel_CostsNothingWhenUnused(t *testing.T) {
	const label = "worker-7 pid=31337"
	srv := startSim(t, sim.Config{Profile: sim.Valkey90, History: true})
	wire := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false))
	ctx := context.Background()
	sent := func(opts ...AcquireOption) [][]string {
		srv.ResetLog()
		a, err := wire.TryAcquire(ctx, "owner:cost", time.Minute, opts...)
		if err != nil || !a.Acquired() {
			t.Fatalf("TryAcquire = %v, %v", a.Acquired(), err)
		}
		if out, err := a.Lock().Release(ctx); out != Released || err != nil {
			t.Fatalf("Release = %v, %v", out, err)
		}
		return lockArgs(srv.Log())
	}
	sent() // the session learns its server's release command first
	plain, labelled := sent(), sent(WithOwner(label))
	if len(plain) != len(labelled) {
		t.Fatalf("commands without a label %q, with one %q: want the same commands", plain, labelled)
	}
	token := plain[0][2]
	for i := range plain {
		extra, tokens := 0, 0
		for j := range labelled[i] {
			extra += len(labelled[i][j]) - len(plain[i][j])
			if plain[i][j] == token {
				tokens++
			}
		}
		if extra != tokens*(len(label)+1) {
			t.Errorf("%s: %d bytes more with the label; want %d", plain[i][0], extra, tokens*(len(label)+1))
		}
	}
	if len(plain[0][2]) != 32 {
		t.Errorf("the unlabelled SET carries %d token bytes; want 32", len(plain[0][2]))
	}

	addr := startSimProcess(t)
	locks := newLocks(t, newClient(t, []string{addr}, "", simPassword, false))
	withOwner := []AcquireOption{WithOwner(label)}
	pair := func(opts []AcquireOption) func() {
		return func() {
			a, err := locks.TryAcquire(ctx, "k", time.Minute, opts...)
			if err != nil || !a.Acquired() {
				t.Fatalf("TryAcquire = %v, %v", a.Acquired(), err)
			}
			if out, err := a.Lock().Release(ctx); out != Released || err != nil {
				t.Fatalf("Release = %v, %v", out, err)
			}
		}
	}
	least := func(f func()) float64 {
		n := testing.AllocsPerRun(200, f)
		for range 2 {
			n = min(n, testing.AllocsPerRun(200, f))
		}
		return n
	}
	unlabelledAllocs, labelledAllocs := least(pair(nil)), least(pair(withOwner))
	timeOf := func(f func()) time.Duration {
		start := time.Now()
		for range 500 {
			f()
		}
		return time.Since(start) / 500
	}
	t.Logf("per pair: %v allocs, %v without a label; %v allocs, %v with %q (%d bytes)",
		unlabelledAllocs, timeOf(pair(nil)), labelledAllocs, timeOf(pair(withOwner)), label, len(label))
	if unlabelledAllocs > pairAllocsBaseline {
		t.Errorf("a pair without a label allocates %v times; want at most %d (the baseline)", unlabelledAllocs, pairAllocsBaseline)
	}
}
