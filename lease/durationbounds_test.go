package lease

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// TestDurationOptionsBounded_OptionsLongerThanMaxTTLAreRefusedBeforeSending:
// every duration an acquisition option or a New option takes is refused
// above MaxTTL with ErrInvalidOption, in a message naming the limit, before
// anything is sent; MaxTTL itself is accepted. (A retry interval of 200
// years used to be accepted and drew negative sleeps: a tight SET NX loop.)
func TestDurationOptionsBounded_OptionsLongerThanMaxTTLAreRefusedBeforeSending(t *testing.T) {
	srv, locks := managedSim(t, sim.Redis70)
	ctx := ctxT(t)
	const longest = time.Duration(1<<63 - 1)
	years200 := 200 * 365 * 24 * time.Hour
	refused := map[string][]AcquireOption{
		"WithRetryEvery(200 years)":     {WithWait(time.Second), WithRetryEvery(years200)},
		"WithRetryEvery(longest)":       {WithWaitUntilDone(), WithRetryEvery(longest)},
		"WithRetryEvery(MaxTTL+1ns)":    {WithRetryEvery(MaxTTL + 1)},
		"WithWait(MaxTTL+1ns)":          {WithWait(MaxTTL + 1)},
		"WithWait(longest)":             {WithWait(longest)},
		"WithWait(longest), keep-alive": {WithWait(longest), WithKeepAlive()},
	}
	for name, opts := range refused {
		_, err := locks.TryAcquire(ctx, "k", time.Second, opts...)
		if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "MaxTTL") {
			t.Errorf("TryAcquire with %s = %v; want ErrInvalidOption naming MaxTTL", name, err)
		}
	}
	newRefused := map[string]Option{
		"WithCommandTimeout(MaxTTL+1ns)":  WithCommandTimeout(MaxTTL + 1),
		"WithIdleCheck(longest)":          WithIdleCheck(longest),
		"WithDriftMargin(0.01, MaxTTL+1)": WithDriftMargin(0.01, MaxTTL+1),
		"WithDriftMargin(0.01, longest)":  WithDriftMargin(0.01, longest),
		"WithCommandTimeout(longest)":     WithCommandTimeout(longest),
		"WithIdleCheck(MaxTTL+1ns)":       WithIdleCheck(MaxTTL + 1),
	}
	client := newClient(t, []string{srv.Addr()}, "", simPassword, false)
	for name, opt := range newRefused {
		if _, err := New(client, opt); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "MaxTTL") {
			t.Errorf("New(%s) = %v; want ErrInvalidOption naming MaxTTL", name, err)
		}
	}
	if got := lockCommands(srv.Log()); len(got) != 0 {
		t.Fatalf("refused options sent %v", got)
	}
	for _, opt := range []Option{WithCommandTimeout(MaxTTL), WithIdleCheck(MaxTTL), WithDriftMargin(0.01, MaxTTL)} {
		l, err := New(client, opt)
		if err != nil {
			t.Fatalf("New with a duration of MaxTTL = %v; want it accepted", err)
		}
		l.Close()
	}
	a, err := locks.TryAcquire(ctx, "k", time.Second, WithWait(MaxTTL), WithRetryEvery(MaxTTL))
	if err != nil || !a.Acquired() {
		t.Fatalf("TryAcquire(WithWait(MaxTTL), WithRetryEvery(MaxTTL)) on a free key = %v, %v; want acquired", a.Acquired(), err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}
