package lease

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/sim"
)

// logBuffer collects a JSON handler's records.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// records parses the JSON lines.
func (b *logBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("a record is not JSON: %v: %s", err, line)
		}
		out = append(out, r)
	}
	return out
}

// matching returns the records with message msg whose fields include want.
func matching(records []map[string]any, msg string, want map[string]string) []map[string]any {
	var out []map[string]any
	for _, r := range records {
		if r["msg"] != msg {
			continue
		}
		ok := true
		for k, v := range want {
			if s, _ := r[k].(string); s != v {
				ok = false
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

func debugLogger(w *logBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestLogEvents_OneRecordPerOperatorEventWithoutTokens: with WithLogger,
// an acquisition (debug), a fallback learned (info, once per session and
// capability), a release that found the lock not owned, a loss with its
// cause, a release with an unknown outcome and its fence (warn), and a
// retired session with its reason (debug) are each one record. No record
// shows a token; keys appear only with WithKeysInLogs.
func TestLogEvents_OneRecordPerOperatorEventWithoutTokens(t *testing.T) {
	for _, keys := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "WithKeysInLogs"}[keys], func(t *testing.T) {
			w := &logBuffer{}
			opts := []Option{WithLogger(debugLogger(w)), WithoutPush()} // c's loss is its renewal's
			if keys {
				opts = append(opts, WithKeysInLogs())
			}
			srv, locks := managedSim(t, sim.Redis70, opts...)
			tokens := playOperatorEvents(t, srv, locks)
			locks.Close() // waits for the records written in the background
			records := w.records(t)
			want := []struct {
				msg   string
				level string
				attrs map[string]string
				n     int
			}{
				{msgAcquired, "DEBUG", nil, 5},
				{msgFallbackLearned, "INFO", map[string]string{"capability": "set-ifeq", "server": srv.Addr()}, 1},
				{msgFallbackLearned, "INFO", map[string]string{"capability": "delex"}, 1},
				{msgFallbackLearned, "INFO", map[string]string{"capability": "delifeq"}, 1},
				{msgReleaseRefused, "WARN", map[string]string{"outcome": "not-owned"}, 1},
				{msgLost, "WARN", map[string]string{"cause": "refused", "event": "renewal-refused"}, 1},
				{msgReleaseUnknown, "WARN", map[string]string{"outcome": "unknown"}, 1},
				{msgFenced, "WARN", map[string]string{"result": "ok"}, 1},
				{msgSessionRetired, "DEBUG", map[string]string{"reason": "fenced", "server": srv.Addr()}, 1},
				{msgSessionRetired, "DEBUG", map[string]string{"reason": "closed"}, 1},
			}
			for _, w := range want {
				got := matching(records, w.msg, w.attrs)
				if len(got) != w.n {
					t.Errorf("%d records %q %v; want %d", len(got), w.msg, w.attrs, w.n)
				}
				for _, r := range got {
					if r["level"] != w.level {
						t.Errorf("%q at level %v; want %s", w.msg, r["level"], w.level)
					}
				}
			}
			for _, r := range matching(records, msgAcquired, nil) {
				if _, ok := r["key"]; ok != keys {
					t.Errorf("acquired record %v: key shown = %v; want %v", r, ok, keys)
				}
			}
			noSecretIn(t, "the log", w.String(), tokens...)
			if !keys && strings.Contains(w.String(), `"key"`) {
				t.Errorf("records show keys without WithKeysInLogs:\n%s", w.String())
			}
		})
	}
}

// playOperatorEvents plays, on a Redis 7.0 sim, one of each operator
// event, and returns the tokens of the locks it took.
func playOperatorEvents(t *testing.T, srv *sim.Server, locks *Locks) []Token {
	t.Helper()
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	ctx := ctxT(t)
	acquire := func(key string, ttl time.Duration, opts ...AcquireOption) *Lock {
		lock, err := locks.Acquire(ctx, key, ttl, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return lock
	}
	a := acquire("a", time.Minute) // the session learns its fallbacks
	if ok, err := a.ResetExpiry(ctx, time.Minute); !ok || err != nil {
		t.Fatalf("ResetExpiry = %v, %v", ok, err)
	}
	if out, err := a.Release(ctx); out != Released || err != nil {
		t.Fatalf("Release = %v, %v", out, err)
	}
	b := acquire("b", time.Minute) // its key is taken over: the release finds it not owned
	srv.Exec("SET", "b", "another-owner")
	if out, err := b.Release(ctx); out != NotOwned || err != nil {
		t.Fatalf("Release of a taken-over key = %v, %v", out, err)
	}
	c := acquire("c", 10*time.Second, WithKeepAlive()) // lost: its renewal is refused
	srv.Exec("SET", "c", "another-owner")
	clock.Advance(5 * time.Second)
	waitDone(t, c.Context())
	d := acquire("d", time.Minute) // its delete's reply never comes: fenced
	gate := make(chan struct{})
	defer close(gate)
	srv.Inject(sim.Fault{Kind: sim.DelayReply, Command: "EVALSHA", Gate: gate,
		Match: func(args []string) bool { return len(args) > 3 && args[3] == "d" }})
	releaseCtx, cancel := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { // the caller stops waiting once the delete reached the server
		defer close(watched)
		_, _ = srv.WaitFor(releaseCtx, isDelete(d.Token().wire()))
		cancel()
	}()
	_, err := d.Release(releaseCtx)
	cancel()
	<-watched
	if err == nil {
		t.Fatal("Release succeeded although its reply was held")
	}
	eventually(t, "the fence answered", func() bool { return d.State() == StateLost })
	e := acquire("e", time.Minute) // on a fresh session, which Locks.Close retires
	return []Token{a.Token(), b.Token(), c.Token(), d.Token(), e.Token()}
}

// TestWarningsAreRateLimited_OnePerCauseAndSecondWithTheSuppressedCount:
// two locks lost to the same cause within a second give one warning; the
// next one, a second later, says how many were suppressed.
func TestWarningsAreRateLimited_OnePerCauseAndSecondWithTheSuppressedCount(t *testing.T) {
	w := &logBuffer{}
	// WithoutPush: both losses must be found by a refused renewal (one cause).
	srv, locks := managedSim(t, sim.Redis84, WithLogger(debugLogger(w)), WithoutPush())
	var now atomic.Int64
	locks.core.obs.log.limit.now = func() time.Duration { return time.Duration(now.Load()) }
	clock := &actor.ManualClock{}
	useClock(locks, clock)
	ctx := ctxT(t)
	lose := func(keys ...string) {
		var held []*Lock
		for _, key := range keys {
			lock, err := locks.Acquire(ctx, key, 10*time.Second, WithKeepAlive())
			if err != nil {
				t.Fatal(err)
			}
			srv.Exec("SET", key, "another-owner")
			held = append(held, lock)
		}
		clock.Advance(5 * time.Second)
		for _, lock := range held {
			waitDone(t, lock.Context())
		}
		// The context ends within the step of the refused renewal, which
		// then starts the warning's write: wait for that step, then for it.
		locks.driver().WaitIdle()
		locks.driver().WaitIdle() // the warnings are written
	}
	lose("x", "y")
	if got := matching(w.records(t), msgLost, nil); len(got) != 1 {
		t.Fatalf("%d loss warnings for two losses within a second; want 1:\n%s", len(got), w.String())
	}
	now.Add(int64(warnInterval))
	lose("z")
	got := matching(w.records(t), msgLost, nil)
	if len(got) != 2 || got[1]["suppressed"] != float64(1) {
		t.Fatalf("loss warnings %v; want a second one, saying 1 was suppressed", got)
	}
}
