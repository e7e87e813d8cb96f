package coordination

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// fmt (every verb) and slog (text and JSON) show a fenced lock's keys,
// fencing token and state, never its owner token.
func TestFencedLockPrintsAndLogsWithoutItsOwnerToken(t *testing.T) {
	_, c := simCoordinator(t, sim.Valkey90)
	lock, err := c.Acquire(ctxT(t), leaseKey, counterKey, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	owner, _ := lock.Token().Text()
	secrets := []string{owner, lock.Token().Hex(), strings.ToLower(lock.Token().Hex())}
	attempt := Attempt{lock: lock}
	var out []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %p"} {
		out = append(out, fmt.Sprintf(verb, lock), fmt.Sprintf(verb, *lock), fmt.Sprintf(verb, attempt))
	}
	out = append(out, fmt.Sprint(lock), fmt.Sprintln(attempt))
	var text, json bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("held", "lock", lock, "attempt", attempt, "value", *lock)
	slog.New(slog.NewJSONHandler(&json, nil)).Info("held", "lock", lock, "attempt", attempt, "value", *lock)
	out = append(out, text.String(), json.String())
	for _, s := range out {
		for _, secret := range secrets {
			if strings.Contains(s, secret) {
				t.Fatalf("the owner token shows in %q", s)
			}
		}
	}
	if got := fmt.Sprint(lock); !strings.Contains(got, `fencingToken: 1`) || !strings.Contains(got, counterKey) {
		t.Errorf("fmt = %q; want the fencing token and the counter key", got)
	}
	if !strings.Contains(text.String(), "lock.fencingToken=1") || !strings.Contains(json.String(), `"fencingToken":1`) {
		t.Errorf("slog = %q / %q; want the fencing token", text.String(), json.String())
	}
}
