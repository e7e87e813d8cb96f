//go:build !goredisadapter

package goredis

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
)

// sendLog is a user's ProcessHook that records, for each lone command,
// its key, whether the session's drainer goroutine handed it over (the
// drainer's frame is on the stack), and the order it entered and left
// next; a command on key "slow" waits for release first.
type sendLog struct {
	mu      sync.Mutex
	entries []sendEntry
	seq     int
	slowIn  chan struct{}
	release chan struct{}
}

type sendEntry struct {
	key       string
	byDrainer bool
	in, out   int
}

func (l *sendLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *sendLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (l *sendLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if _, ours := cmd.(*wireCmd); !ours || len(cmd.Args()) < 2 {
			return next(ctx, cmd)
		}
		key := *cmd.Args()[1].(*string)
		buf := make([]byte, 1<<16)
		stack := string(buf[:runtime.Stack(buf, false)])
		l.mu.Lock()
		l.seq++
		e := sendEntry{key: key, byDrainer: strings.Contains(stack, "(*session).drain"), in: l.seq}
		l.mu.Unlock()
		if key == "slow" {
			close(l.slowIn)
			<-l.release
		}
		err := next(ctx, cmd)
		l.mu.Lock()
		l.seq++
		e.out = l.seq
		l.entries = append(l.entries, e)
		l.mu.Unlock()
		return err
	}
}

func (l *sendLog) of(t *testing.T, key string) sendEntry {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.entries {
		if e.key == key {
			return e
		}
	}
	t.Fatalf("no command on %s reached the hook", key)
	return sendEntry{}
}

// TestGoRedisIdleCallerSendsItself_OnItsOwnGoroutine: on an idle session a
// caller whose ctx cannot end sends its command on its own goroutine (no
// hand-off to the drainer); a caller whose ctx can end hands it to the
// drainer (it must be free to return the moment its ctx ends); a caller
// that finds the Conn in another caller's hands queues, and the drainer
// sends its command once the Conn is free.
func TestGoRedisIdleCallerSendsItself_OnItsOwnGoroutine(t *testing.T) {
	_, _, client := private(t, false)
	l := &sendLog{slowIn: make(chan struct{}), release: make(chan struct{})}
	client.AddHook(l)
	tr := newTransport(t, client)
	if _, err := tr.SessionForKey(ctxFor(t, 5*time.Second), "idle"); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Do(context.Background(), conn.OwnerOp("idle"), nil); err != nil {
		t.Fatal(err)
	}
	if l.of(t, "idle").byDrainer {
		t.Fatal("an idle caller whose ctx cannot end was handed to the drainer")
	}
	if _, err := tr.Do(ctxFor(t, 5*time.Second), conn.OwnerOp("cancellable"), nil); err != nil {
		t.Fatal(err)
	}
	if !l.of(t, "cancellable").byDrainer {
		t.Fatal("a caller whose ctx can end sent its command itself")
	}
	slow := make(chan error, 1)
	go func() { _, err := tr.Do(context.Background(), conn.OwnerOp("slow"), nil); slow <- err }()
	<-l.slowIn // the first caller owns the Conn
	queued := make(chan error, 1)
	go func() { _, err := tr.Do(context.Background(), conn.OwnerOp("queued"), nil); queued <- err }()
	s, _ := tr.SessionForKey(ctxFor(t, 5*time.Second), "x")
	eventually(t, "the second caller queued", func() bool {
		ss := s.(*session)
		ss.mu.Lock()
		defer ss.mu.Unlock()
		return len(ss.queue) == 1
	})
	close(l.release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	if err := <-queued; err != nil {
		t.Fatal(err)
	}
	first, second := l.of(t, "slow"), l.of(t, "queued")
	if first.byDrainer || !second.byDrainer || second.in < first.out {
		t.Fatalf("slow %+v, queued %+v: want the first sent by its caller, the second by the drainer after it", first, second)
	}
}

// eventually polls cond (bounded) for state that settles asynchronously.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
