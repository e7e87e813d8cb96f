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
// command answered NOREPLICAS (MaxRetries 3 by default); the adapter's is
// sent once, and its reply is the server's error reply.
func TestGoRedisRetriesOff_RetryableReplyIsNotResent(t *testing.T) {
	srv, _, client := private(t, false)
	cn := dial(t, newAdapter(t, client), srv.Addr)
	srv.MustExec(t, "CONFIG", "SET", "min-replicas-to-write", "1")
	srv.MustExec(t, "CONFIG", "RESETSTAT")
	r, err := do(ctxFor(t, 5*time.Second), cn, "SET", key(t, "k"), token(t), "NX", "PX", "10000")
	if err != nil || r.Kind != conn.ReplyError || !strings.HasPrefix(r.Text, "NOREPLICAS") {
		t.Fatalf("NOREPLICAS: %+v %v", r, err)
	}
	var re redis.Error
	if !errors.As(r.Err, &re) {
		t.Fatalf("the reply's Err %T is not go-redis' redis.Error", r.Err)
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

// TestGoRedisHooksCannotRewrite_FakeReplies: behind a user hook that turns
// every reply into OK and every error into none, a connection still reads
// what the server answered (a value, a nil, an error reply), a lost reply
// is still an error that does not claim "not written", and a lock on a
// taken key is still refused.
func TestGoRedisHooksCannotRewrite_FakeReplies(t *testing.T) {
	srv, p, client := private(t, true)
	client.AddHook(rewriter)
	k := key(t, "k")
	srv.MustExec(t, "SET", k, "someone-else")
	srv.MustExec(t, "HSET", k+"h", "f", "v")
	locks, err := New(client)
	if err != nil {
		t.Fatal(err)
	}
	defer locks.Close()
	if a, err := locks.TryAcquire(ctxFor(t, 5*time.Second), k, 10*time.Second); err != nil || a.Acquired() {
		t.Fatalf("a taken key behind a lying hook: acquired %v, %v", a.Acquired(), err)
	}
	locks.Close()
	cn := dial(t, newAdapter(t, client), p.Addr())
	replies := make([]conn.Reply, 3)
	cmds := []conn.Command{{Args: []string{"GET", k}}, {Args: []string{"GET", k + "none"}}, {Args: []string{"GET", k + "h"}}}
	if err := cn.Do(ctxFor(t, 5*time.Second), cmds, replies); err != nil {
		t.Fatal(err)
	}
	if replies[0].Text != "someone-else" || replies[1].Kind != conn.ReplyNil || replies[2].Kind != conn.ReplyError ||
		!strings.HasPrefix(replies[2].Text, "WRONGTYPE") {
		t.Fatalf("replies behind a lying hook: %+v", replies)
	}
	if r, err := do(ctxFor(t, 5*time.Second), cn, "GET", k); err != nil || r.Text != "someone-else" {
		t.Fatalf("a lone command behind a lying hook: %+v %v", r, err)
	}
	conns := p.Conns()
	conns[len(conns)-1].BlackHole(faultproxy.ToClient)
	done := make(chan error, 1)
	go func() {
		_, err := do(ctxFor(t, 10*time.Second), cn, "DEL", k)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	conns[len(conns)-1].Close()
	if err := <-done; err == nil || errors.Is(err, conn.ErrNotWritten) {
		t.Fatalf("lost reply behind a lying hook: %v, want an error that is not ErrNotWritten", err)
	}
}

// hookFunc is a user's hook built from a pipeline hook function, applied
// to single commands too (as a pipeline of one): the adapter sends a lone
// command with Process, several with a pipeline.
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
// returns without calling next (a circuit breaker) sent nothing: the error
// matches ErrNotWritten, the server saw no SET, and the connection stays
// usable; one that calls next twice (a retrying hook) re-sent the
// commands: an error that is not ErrNotWritten, and the connection is
// broken.
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
	cn := dial(t, newAdapter(t, client), srv.Addr)
	k := key(t, "k")
	if _, err := do(ctxFor(t, 5*time.Second), cn, "GET", k); err != nil {
		t.Fatal(err)
	}
	breaker.Store(true)
	srv.MustExec(t, "CONFIG", "RESETSTAT")
	if _, err := do(ctxFor(t, 5*time.Second), cn, "SET", k, "tok", "NX", "PX", "10000"); !errors.Is(err, conn.ErrNotWritten) {
		t.Fatalf("short-circuited: %v, want ErrNotWritten", err)
	}
	if n := attempts(t, srv, "set"); n != 0 || cn.Err() != nil {
		t.Fatalf("short-circuited: SET attempted %d times, connection broken by %v", n, cn.Err())
	}
	breaker.Store(false)
	replay.Store(true)
	if _, err := do(ctxFor(t, 5*time.Second), cn, "SET", k, "tok", "NX", "PX", "10000"); err == nil ||
		errors.Is(err, conn.ErrNotWritten) || !errors.Is(err, errHookAltered) {
		t.Fatalf("replayed: %v, want %v", err, errHookAltered)
	}
	if cn.Err() == nil {
		t.Fatal("the connection is kept after a hook re-sent its commands")
	}
}

// TestGoRedisHooksCannotRewrite_ArgumentRewrittenInPlace: a hook that
// rewrites an argument in place (go-redis is given *string arguments), or
// replaces a command's name, before calling next makes the round trip's
// outcome unknown, never a definite answer about a command it did not
// send: the witness compares what goes out with the command built, which
// keeps its own copy.
func TestGoRedisHooksCannotRewrite_ArgumentRewrittenInPlace(t *testing.T) {
	for _, at := range []int{1, 0} {
		t.Run(strconv.Itoa(at), func(t *testing.T) {
			var rewrite atomic.Bool
			srv, _, client := private(t, false)
			client.AddHook(hookFunc(func(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
				return func(ctx context.Context, cmds []redis.Cmder) error {
					if rewrite.Load() {
						for _, c := range cmds {
							if p, ok := c.Args()[at].(*string); ok {
								*p = "someone-elses-key"
							} else {
								c.Args()[at] = "GET"
							}
						}
					}
					return next(ctx, cmds)
				}
			}))
			cn := dial(t, newAdapter(t, client), srv.Addr)
			k := key(t, "k")
			if _, err := do(ctxFor(t, 5*time.Second), cn, "GET", k); err != nil {
				t.Fatal(err)
			}
			rewrite.Store(true)
			_, err := do(ctxFor(t, 5*time.Second), cn, "SET", k, "tok", "NX", "PX", "10000")
			if err == nil || errors.Is(err, conn.ErrNotWritten) || !errors.Is(err, errHookAltered) {
				t.Fatalf("a command rewritten in place: %v, want %v", err, errHookAltered)
			}
		})
	}
}

// TestGoRedisHooksCannotRewrite_TracingSeesTheCommands: a user's hook (a
// tracer) sees each command by its name (Cmd.Name), alone and in a
// pipeline, the first one's included (its name is the witness' marker).
func TestGoRedisHooksCannotRewrite_TracingSeesTheCommands(t *testing.T) {
	srv, _, client := private(t, false)
	seen := make(chan string, 16)
	client.AddHook(hookFunc(func(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
		return func(ctx context.Context, cmds []redis.Cmder) error {
			for _, c := range cmds {
				seen <- c.Name()
			}
			return next(ctx, cmds)
		}
	}))
	cn := dial(t, newAdapter(t, client), srv.Addr)
	if _, err := do(ctxFor(t, 5*time.Second), cn, "GET", "a"); err != nil {
		t.Fatal(err)
	}
	if err := cn.Do(ctxFor(t, 5*time.Second), []conn.Command{{Args: []string{"GET", "b"}}, {Args: []string{"PTTL", "c"}}},
		make([]conn.Reply, 2)); err != nil {
		t.Fatal(err)
	}
	close(seen)
	var names []string
	for name := range seen {
		if name != "hello" && name != "client" && name != "ping" { // the handshake (go-redis', Dial's PING) passes the hooks too
			names = append(names, name)
		}
	}
	if strings.Join(names, " ") != "get get pttl" {
		t.Fatalf("the hook saw %q, want get, get, pttl", names)
	}
}
