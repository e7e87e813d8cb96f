//go:build !goredisadapter

package goredis

import (
	"context"
	"errors"
	"fmt"

	"github.com/respire-go/respire/conn"
)

// This file is one round trip on a watcher's reader. The reader is a
// go-redis Conn, which one goroutine at a time may use and which honours no
// cancellation during I/O, so a read waits for its turn and for its reply
// with its ctx (rule GoRedisCallerNeverWaitsOnTheSocket): once the ctx
// ends the caller leaves, not submitted, and a round trip already on the
// wire goes on (on its own goroutine, holding the turn) until it ends, the
// watcher serving the next read after it, as conn.Pool's watcher does; a
// cancelled read ends no watcher. Close ends it at once by closing the
// reader's private client.

// Errors of a read that sent nothing it waits for.
var (
	// errWatcherEnded: the watcher ended before the read's turn came.
	errWatcherEnded = errors.New("the watcher ended")
	// errReadLeft: the read's ctx ended first (it wraps the ctx's cause).
	errReadLeft = errors.New("the read's ctx ended")
)

// tripReply is what a round trip on the reader returned.
type tripReply struct {
	results []result
	err     error
}

// trip sends cmds on w's reader when its turn comes and returns what
// go-redis read, or errWatcherEnded or errReadLeft (nothing more to wait
// for: the watcher is not to be retired for them). A ctx that cannot end
// (ctx.Done() nil) runs the round trip on the caller's goroutine.
func (w *watcher) trip(ctx context.Context, cmds []conn.Command) ([]result, error) {
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%w: %w", errReadLeft, context.Cause(ctx))
	}
	select {
	case w.turn <- struct{}{}:
	case <-w.quit:
		return nil, errWatcherEnded
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", errReadLeft, context.Cause(ctx))
	}
	if ctx.Done() == nil {
		r := w.roundTrip(ctx, cmds)
		<-w.turn
		return r.results, r.err
	}
	got := make(chan tripReply, 1)
	if !w.t.goWatch(func() {
		r := w.roundTrip(ctx, cmds)
		<-w.turn
		got <- r
	}) {
		<-w.turn
		return nil, errWatcherEnded
	}
	select {
	case r := <-got:
		return r.results, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", errReadLeft, context.Cause(ctx))
	}
}

// roundTrip is one round trip on the reader, the turn held: a failure of
// the round trip or of any command's I/O (the socket is bad) retires the
// watcher, whether its caller still waits or not.
func (w *watcher) roundTrip(ctx context.Context, cmds []conn.Command) tripReply {
	rs, err := w.w.roundTrip(ctx, w.reader, cmds)
	failed := err != nil
	for _, r := range rs {
		failed = failed || r.transport != nil
	}
	if failed {
		w.t.retireWatcher(w)
	} else {
		w.last.Store(monoNow())
	}
	return tripReply{results: rs, err: err}
}

// goWatch runs f on a goroutine Close waits for (t.running), unless Close
// has begun: then it reports false and runs nothing.
func (t *Transport) goWatch(f func()) bool {
	t.watch.mu.Lock()
	defer t.watch.mu.Unlock()
	if t.watch.closed {
		return false
	}
	t.running.Go(f) // under watch.mu before closed is set: before Close's Wait
	return true
}
