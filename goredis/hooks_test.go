//go:build !goredisadapter

package goredis

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/internal/realserver"
)

// attempts returns how often srv was asked to run command name since the
// last CONFIG RESETSTAT, refused attempts included.
func attempts(t *testing.T, srv *realserver.Private, name string) int {
	t.Helper()
	info := srv.MustExec(t, "INFO", "commandstats")
	total := 0
	for _, line := range strings.Split(info, "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_"+name+":")
		if !ok {
			continue
		}
		for _, f := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			if k == "calls" || k == "rejected_calls" || k == "failed_calls" {
				n, _ := strconv.Atoi(v)
				total += n
			}
		}
	}
	return total
}

// TestGoRedisRetriesOff_RetryableReplyIsNotResent: go-redis re-sends a
// command answered NOREPLICAS (MaxRetries 3 by default); the transport's
// is sent once and its Definite did-not-run error returned.
func TestGoRedisRetriesOff_RetryableReplyIsNotResent(t *testing.T) {
	srv, _, client := private(t, false)
	tr := newTransport(t, client)
	srv.MustExec(t, "CONFIG", "SET", "min-replicas-to-write", "1")
	srv.MustExec(t, "CONFIG", "RESETSTAT")
	_, err := tr.Do(ctxFor(t, 5*time.Second), conn.AcquireOp(key(t, "k"), token(t), 10000), nil)
	if conn.ClassOf(err) != conn.Definite || !strings.Contains(err.Error(), "NOREPLICAS") {
		t.Fatalf("NOREPLICAS: %v", err)
	}
	if n := attempts(t, srv, "set"); n != 1 {
		t.Fatalf("SET attempted %d times, want 1", n)
	}
}

// rewriter is a user's hook that lies: every command, alone or in a
// pipeline, is made to look like it answered OK with no error, whatever
// really happened.
var rewriter = hookFunc(func(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		_ = next(ctx, cmds)
		for _, c := range cmds {
			c.SetErr(nil)
			if cmd, ok := c.(interface{ SetVal(any) }); ok {
				cmd.SetVal("OK")
			}
		}
		return nil
	}
})

// TestGoRedisHooksCannotRewrite_FakeReplies: with a user hook that turns
// every reply into OK and every error into none, a taken key is still
// reported taken, and a lost reply is still uncertain.
func TestGoRedisHooksCannotRewrite_FakeReplies(t *testing.T) {
	srv, p, client := private(t, true)
	client.AddHook(rewriter)
	tr := newTransport(t, client)
	k := key(t, "k")
	srv.MustExec(t, "SET", k, "someone-else")
	res, err := tr.Do(ctxFor(t, 5*time.Second), conn.AcquireOp(k, token(t), 10000), nil)
	if err != nil || res.Owned {
		t.Fatalf("taken key behind a lying hook: %+v %v", res, err)
	}
	s, err := tr.SessionForKey(ctxFor(t, 5*time.Second), k)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range s.ExtendMany(ctxFor(t, 5*time.Second), []conn.ExtendRequest{{Key: k, Token: "mine", TTLMillis: 1000},
		{Key: k + "2", Token: "mine", TTLMillis: 1000}}) { // one pipeline
		if r.Err != nil || r.Owned {
			t.Fatalf("renewal of a key not ours behind a lying hook: %+v", r)
		}
	}
	p.Conns()[0].BlackHole(faultproxy.ToClient)
	done := make(chan error, 1)
	go func() {
		_, err := tr.Do(ctxFor(t, 10*time.Second), conn.ReleaseOp(k, "someone-else"), nil)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	p.Conns()[0].Close()
	if err := <-done; conn.ClassOf(err) != conn.Uncertain {
		t.Fatalf("lost reply behind a lying hook: %v (%s), want uncertain", err, classOf(err))
	}
}

// hookFunc is a user's hook built from a pipeline hook function, applied
// to single commands too (as a pipeline of one): the transport sends a
// lone command with Process, several with a pipeline.
type hookFunc func(next redis.ProcessPipelineHook) redis.ProcessPipelineHook

func (h hookFunc) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h hookFunc) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h(func(ctx context.Context, cmds []redis.Cmder) error { return next(ctx, cmds[0]) })(ctx, []redis.Cmder{cmd})
	}
}
func (h hookFunc) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return h(next)
}

// TestGoRedisHooksCannotRewrite_ShortCircuitAndReplay: a hook that
// returns without calling next (a circuit breaker) sent nothing: not
// submitted; one that calls next twice (a retrying hook) re-sent the
// commands: uncertain, and the session is retired.
func TestGoRedisHooksCannotRewrite_ShortCircuitAndReplay(t *testing.T) {
	var breaker, replay atomic.Bool
	srv, _, client := private(t, false)
	client.AddHook(hookFunc(func(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
		return func(ctx context.Context, cmds []redis.Cmder) error {
			if breaker.Load() {
				return errors.New("circuit open")
			}
			err := next(ctx, cmds)
			if replay.Load() {
				err = next(ctx, cmds)
			}
			return err
		}
	}))
	tr := newTransport(t, client)
	k := key(t, "k")
	s, err := tr.SessionForKey(ctxFor(t, 5*time.Second), k)
	if err != nil {
		t.Fatal(err)
	}
	breaker.Store(true)
	srv.MustExec(t, "CONFIG", "RESETSTAT")
	if _, err := tr.Do(ctxFor(t, 5*time.Second), conn.AcquireOp(k, "tok", 10000), nil); conn.ClassOf(err) != conn.NotSubmitted {
		t.Fatalf("short-circuited: %v (%s), want not submitted", err, classOf(err))
	}
	if n := attempts(t, srv, "set"); n != 0 || s.Retired() {
		t.Fatalf("short-circuited: SET attempted %d times, session retired %v", n, s.Retired())
	}
	breaker.Store(false)
	replay.Store(true)
	if _, err := tr.Do(ctxFor(t, 5*time.Second), conn.AcquireOp(k, "tok", 10000), nil); conn.ClassOf(err) != conn.Uncertain {
		t.Fatalf("replayed: %v (%s), want uncertain", err, classOf(err))
	}
	if !s.Retired() {
		t.Fatal("session kept after a hook re-sent its commands")
	}
}

// TestGoRedisHooksCannotRewrite_ArgumentRewrittenInPlace: a hook that
// rewrites an argument in place (go-redis is given *string arguments)
// before calling next makes the command uncertain, never a definite
// answer about the key it did not send: the witness compares what goes
// out with the command built, which keeps its own copy.
func TestGoRedisHooksCannotRewrite_ArgumentRewrittenInPlace(t *testing.T) {
	var rewrite atomic.Bool
	_, _, client := private(t, false)
	client.AddHook(hookFunc(func(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
		return func(ctx context.Context, cmds []redis.Cmder) error {
			if rewrite.Load() {
				for _, c := range cmds {
					if p, ok := c.Args()[1].(*string); ok {
						*p = "someone-elses-key"
					}
				}
			}
			return next(ctx, cmds)
		}
	}))
	tr := newTransport(t, client)
	k := key(t, "k")
	if _, err := tr.SessionForKey(ctxFor(t, 5*time.Second), k); err != nil {
		t.Fatal(err)
	}
	rewrite.Store(true)
	_, err := tr.Do(ctxFor(t, 5*time.Second), conn.AcquireOp(k, "tok", 10000), nil)
	if conn.ClassOf(err) != conn.Uncertain || !errors.Is(err, errHookAltered) {
		t.Fatalf("an argument rewritten in place: %v (%s), want uncertain (%v)", err, classOf(err), errHookAltered)
	}
}
