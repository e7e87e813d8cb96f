package actor

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

func TestMailboxKeepsEachSendersOrderUnderManyConcurrentSenders(t *testing.T) {
	const senders, perSender = 16, 500
	last := make([]int, senders) // only touched by the handler
	for i := range last {
		last[i] = -1
	}
	var handled sync.WaitGroup
	handled.Add(senders * perSender)
	var outOfOrder atomic.Int64
	mb := NewMailbox(senders*perSender, func(m [2]int) {
		if m[1] != last[m[0]]+1 {
			outOfOrder.Add(1)
		}
		last[m[0]] = m[1]
		handled.Done()
	})
	var sent sync.WaitGroup
	for s := range senders {
		sent.Go(func() {
			for i := range perSender {
				if err := mb.Send([2]int{s, i}); err != nil {
					t.Errorf("Send = %v; want nil", err)
				}
			}
		})
	}
	sent.Wait()
	handled.Wait()
	mb.Stop()
	if n := outOfOrder.Load(); n != 0 {
		t.Fatalf("%d messages handled out of their sender's order; want 0", n)
	}
}

func TestMailboxHandlesInAcceptanceOrder(t *testing.T) {
	var got []int // handler-only, read after Stop
	mb := NewMailbox(0, func(m int) { got = append(got, m) })
	for i := range 1000 {
		if err := mb.Deliver(i); err != nil {
			t.Fatalf("Deliver(%d) = %v; want nil", i, err)
		}
	}
	waitHandled(t, mb)
	mb.Stop()
	for i, m := range got {
		if m != i {
			t.Fatalf("message %d handled as %d-th; want FIFO", m, i)
		}
	}
	if len(got) != 1000 {
		t.Fatalf("handled %d messages; want 1000", len(got))
	}
}

func TestMailboxRunsAtMostOneHandlerAtATime(t *testing.T) {
	var running atomic.Int32
	var overlaps atomic.Int32
	plain := 0 // unsynchronised on purpose: -race flags a missing happens-before
	var handled sync.WaitGroup
	const senders, perSender = 32, 300
	handled.Add(senders * perSender)
	mb := NewMailbox(senders*perSender, func(int) {
		if running.Add(1) != 1 {
			overlaps.Add(1)
		}
		plain++
		running.Add(-1)
		handled.Done()
	})
	var sent sync.WaitGroup
	for range senders {
		sent.Go(func() {
			for i := range perSender {
				_ = mb.Send(i)
			}
		})
	}
	sent.Wait()
	handled.Wait()
	mb.Stop()
	if overlaps.Load() != 0 || plain != senders*perSender {
		t.Fatalf("overlaps = %d, handled = %d; want 0, %d", overlaps.Load(), plain, senders*perSender)
	}
}

func TestIdleMailboxesHoldNoGoroutine(t *testing.T) {
	const mailboxes = 1000
	var handled sync.WaitGroup
	handled.Add(mailboxes * 3)
	boxes := make([]*Mailbox[int], mailboxes)
	for i := range boxes {
		boxes[i] = NewMailbox(0, func(int) { handled.Done() })
		for j := range 3 {
			_ = boxes[i].Send(j)
		}
	}
	handled.Wait()
	// goleak retries until every drain goroutine has exited or it times out.
	goleak.VerifyNone(t)
	for _, mb := range boxes {
		if mb.isDraining() {
			t.Fatal("mailbox still owns a drain goroutine after goroutines exited")
		}
		mb.Stop()
	}
}

func TestMailboxRejectsSendsPastCapacity(t *testing.T) {
	gate := make(chan struct{})
	started := make(chan struct{}, 1)
	mb := NewMailbox(2, func(int) {
		started <- struct{}{}
		<-gate
	})
	_ = mb.Send(0)
	<-started // message 0 is being handled, so the queue is empty again
	for i := 1; i <= 2; i++ {
		if err := mb.Send(i); err != nil {
			t.Fatalf("Send(%d) = %v; want nil", i, err)
		}
	}
	if err := mb.Send(3); !errors.Is(err, ErrMailboxFull) {
		t.Fatalf("Send past capacity = %v; want ErrMailboxFull", err)
	}
	if err := mb.Deliver(4); err != nil {
		t.Fatalf("Deliver past capacity = %v; want nil", err)
	}
	mb.RequestStop()
	close(gate)
	mb.Stop()
}

func TestStopIsIdempotentWaitsForRunningHandlerAndRejectsLaterSends(t *testing.T) {
	gate := make(chan struct{})
	started := make(chan struct{})
	handled := 0
	mb := NewMailbox(0, func(m int) {
		handled++
		if m == 0 {
			close(started)
			<-gate
		}
	})
	_ = mb.Send(0)
	<-started
	_ = mb.Send(1) // queued behind the blocked handler; discarded by Stop
	stopped := make(chan struct{})
	go func() { mb.Stop(); close(stopped) }()
	waitStopRequested(mb)
	select {
	case <-stopped:
		t.Fatal("Stop returned while the handler was still running")
	default:
	}
	if err := mb.Send(2); !errors.Is(err, ErrStopped) {
		t.Fatalf("Send after Stop = %v; want ErrStopped", err)
	}
	close(gate)
	<-stopped
	mb.Stop() // idempotent, returns at once
	if handled != 1 {
		t.Fatalf("handled %d messages; want 1 (the queued one is discarded)", handled)
	}
	if err := mb.Deliver(3); !errors.Is(err, ErrStopped) {
		t.Fatalf("Deliver after Stop = %v; want ErrStopped", err)
	}
}

func TestRequestStopFromHandlerDoesNotDeadlock(t *testing.T) {
	var mb *Mailbox[int]
	mb = NewMailbox(0, func(int) { mb.RequestStop() })
	_ = mb.Send(1)
	<-mb.Done()
	mb.Stop()
}

func TestStopOnIdleMailboxNeedsNoGoroutine(t *testing.T) {
	mb := NewMailbox(0, func(int) {})
	mb.Stop()
	mb.Stop()
	select {
	case <-mb.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
}

// waitHandled yields until mb has no pending message and no drain goroutine.
func waitHandled[M any](t *testing.T, mb *Mailbox[M]) {
	t.Helper()
	for mb.Pending() > 0 || mb.isDraining() {
		runtime.Gosched()
	}
}

// waitStopRequested spins (yielding) until RequestStop has taken effect.
func waitStopRequested[M any](mb *Mailbox[M]) {
	for {
		mb.mu.Lock()
		s := mb.stopped
		mb.mu.Unlock()
		if s {
			return
		}
		runtime.Gosched()
	}
}

func (mb *Mailbox[M]) isDraining() bool {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return mb.draining
}
