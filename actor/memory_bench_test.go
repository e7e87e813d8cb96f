package actor

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Memory per idle lock handle, measured as the lease package will use the
// actor: one mailbox, one armed keep-alive alarm, one message already handled
// (so the queue's small backing array exists). Compared in the same run to a
// permanent goroutine per handle selecting on a channel mailbox and a timer.
//
//	go test -run '^$' -bench IdleActorMemory -benchtime 1x ./actor/

const idleActors = 100_000

// handleMessage is a lease-like message: a kind, a generation and a reply.
type handleMessage struct {
	kind       uint8
	generation uint64
	reply      Reply[int]
}

func keepAliveTick(generation uint64) handleMessage {
	return handleMessage{kind: 1, generation: generation}
}

type mailboxHandle struct {
	mailbox *Mailbox[handleMessage]
	alarm   *Alarm[handleMessage]
	handled int
	done    *sync.WaitGroup
}

func (h *mailboxHandle) handle(m handleMessage) {
	h.handled++
	m.reply.Send(h.handled)
	h.done.Done()
}

type goroutineHandle struct {
	mailbox chan handleMessage
	timer   *time.Timer
	stop    chan struct{}
	handled int
}

func (h *goroutineHandle) run(handled *sync.WaitGroup, exited *sync.WaitGroup) {
	defer exited.Done()
	for {
		select {
		case m := <-h.mailbox:
			h.handled++
			m.reply.Send(h.handled)
			handled.Done()
		case <-h.timer.C:
		case <-h.stop:
			return
		}
	}
}

// memoryInUse returns heap plus goroutine stacks after a full collection.
func memoryInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return stats.HeapAlloc + stats.StackInuse
}

// waitGoroutines yields until at most n goroutines exist.
func waitGoroutines(n int) {
	for runtime.NumGoroutine() > n {
		runtime.Gosched()
	}
}

func BenchmarkIdleActorMemory(b *testing.B) {
	b.Run("mailbox+alarm", func(b *testing.B) {
		for b.Loop() {
			b.ReportMetric(measureMailboxHandles(b, true), "B/actor")
		}
	})
	b.Run("mailbox-only", func(b *testing.B) {
		for b.Loop() {
			b.ReportMetric(measureMailboxHandles(b, false), "B/actor")
		}
	})
	b.Run("goroutine-per-actor", func(b *testing.B) {
		for b.Loop() {
			b.ReportMetric(measureGoroutineHandles(b), "B/actor")
		}
	})
}

func measureMailboxHandles(b *testing.B, withAlarm bool) float64 {
	baseGoroutines := runtime.NumGoroutine()
	before := memoryInUse()
	var handled sync.WaitGroup
	handled.Add(idleActors)
	handles := make([]*mailboxHandle, idleActors)
	for i := range handles {
		h := &mailboxHandle{done: &handled}
		h.mailbox = NewMailbox(16, h.handle)
		if withAlarm {
			h.alarm = NewAlarm(RealClock(), h.mailbox, keepAliveTick)
			h.alarm.Arm(time.Hour)
		}
		if err := h.mailbox.Send(handleMessage{kind: 2}); err != nil {
			b.Fatal(err)
		}
		handles[i] = h
	}
	handled.Wait()
	waitGoroutines(baseGoroutines)
	after := memoryInUse()
	b.ReportMetric(float64(runtime.NumGoroutine()-baseGoroutines), "goroutines")
	for _, h := range handles {
		if h.alarm != nil {
			h.alarm.Stop()
		}
		h.mailbox.Stop()
	}
	runtime.KeepAlive(handles)
	return float64(after-before) / idleActors
}

func measureGoroutineHandles(b *testing.B) float64 {
	baseGoroutines := runtime.NumGoroutine()
	before := memoryInUse()
	var handled, exited sync.WaitGroup
	handled.Add(idleActors)
	exited.Add(idleActors)
	handles := make([]*goroutineHandle, idleActors)
	for i := range handles {
		h := &goroutineHandle{
			mailbox: make(chan handleMessage, 16),
			timer:   time.NewTimer(time.Hour),
			stop:    make(chan struct{}),
		}
		go h.run(&handled, &exited)
		h.mailbox <- handleMessage{kind: 2}
		handles[i] = h
	}
	handled.Wait()
	after := memoryInUse()
	b.ReportMetric(float64(runtime.NumGoroutine()-baseGoroutines), "goroutines")
	for _, h := range handles {
		h.timer.Stop()
		close(h.stop)
	}
	exited.Wait()
	runtime.KeepAlive(handles)
	return float64(after-before) / idleActors
}

func BenchmarkSendToHandler(b *testing.B) {
	var handled sync.WaitGroup
	mb := NewMailbox(1<<20, func(int) { handled.Done() })
	defer mb.Stop()
	b.ReportAllocs()
	for b.Loop() {
		handled.Add(1)
		for mb.Send(1) == ErrMailboxFull {
			runtime.Gosched()
		}
	}
	handled.Wait()
}

func BenchmarkSendToHandlerParallel(b *testing.B) {
	var handled sync.WaitGroup
	mb := NewMailbox(1<<20, func(int) { handled.Done() })
	defer mb.Stop()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			handled.Add(1)
			for mb.Send(1) == ErrMailboxFull {
				runtime.Gosched()
			}
		}
	})
	handled.Wait()
}

func BenchmarkAskRoundTrip(b *testing.B) {
	mb := NewMailbox(0, func(m handleMessage) { m.reply.Send(1) })
	defer mb.Stop()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Ask(ctx, mb, func(r Reply[int]) handleMessage { return handleMessage{reply: r} }); err != nil {
			b.Fatal(err)
		}
	}
}
