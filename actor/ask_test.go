package actor

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// request is a message asking the handler to double n.
type request struct {
	n     int
	reply Reply[int]
}

func TestAskReturnsTheHandlersAnswer(t *testing.T) {
	mb := NewMailbox(0, func(r request) { r.reply.Send(r.n * 2) })
	defer mb.Stop()
	got, err := Ask(context.Background(), mb, func(reply Reply[int]) request {
		return request{n: 21, reply: reply}
	})
	if err != nil || got != 42 {
		t.Fatalf("Ask = %d, %v; want 42, nil", got, err)
	}
}

func TestAskCancelledCallerStopsWaitingWhileHandlerStillAnswers(t *testing.T) {
	gate := make(chan struct{})
	started := make(chan struct{})
	answered := make(chan bool, 1)
	mb := NewMailbox(0, func(r request) {
		close(started)
		<-gate
		answered <- r.reply.Send(r.n) // must not block: the slot is buffered
	})
	defer mb.Stop()
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("caller gave up")
	result := make(chan error, 1)
	go func() {
		_, err := Ask(ctx, mb, func(reply Reply[int]) request { return request{n: 1, reply: reply} })
		result <- err
	}()
	<-started
	cancel(cause)
	if err := <-result; !errors.Is(err, cause) {
		t.Fatalf("Ask after cancel = %v; want the cancel cause", err)
	}
	close(gate)
	if !<-answered {
		t.Fatal("handler could not store its answer for a caller that gave up")
	}
}

func TestAskWithDoneContextSendsNothing(t *testing.T) {
	handled := make(chan struct{}, 1)
	mb := NewMailbox(0, func(request) { handled <- struct{}{} })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Ask(ctx, mb, func(reply Reply[int]) request { return request{reply: reply} })
	mb.Stop()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Ask = %v; want context.Canceled", err)
	}
	if len(handled) != 0 {
		t.Fatal("a request with an already-done context was handled")
	}
}

func TestAskReturnsErrStoppedWhenMailboxStopsBeforeAnswering(t *testing.T) {
	var mb *Mailbox[request]
	mb = NewMailbox(0, func(request) { mb.RequestStop() }) // never answers
	_, err := Ask(context.Background(), mb, func(reply Reply[int]) request { return request{reply: reply} })
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("Ask = %v; want ErrStopped", err)
	}
	_, err = Ask(context.Background(), mb, func(reply Reply[int]) request { return request{reply: reply} })
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("Ask after stop = %v; want ErrStopped", err)
	}
}

func TestAskPrefersAnAnswerGivenJustBeforeStop(t *testing.T) {
	for range 200 {
		var mb *Mailbox[request]
		mb = NewMailbox(0, func(r request) { r.reply.Send(7); mb.RequestStop() })
		got, err := Ask(context.Background(), mb, func(reply Reply[int]) request { return request{reply: reply} })
		if err != nil || got != 7 {
			t.Fatalf("Ask = %d, %v; want 7, nil", got, err)
		}
	}
}

func TestReplyAnswersOnce(t *testing.T) {
	r := NewReply[int]()
	if !r.Send(1) || r.Send(2) {
		t.Fatal("Send = second answer accepted; want only the first")
	}
	if got, _ := r.Wait(context.Background(), nil); got != 1 {
		t.Fatalf("Wait = %d; want 1", got)
	}
	var zero Reply[int]
	if zero.Send(1) {
		t.Fatal("zero Reply accepted an answer")
	}
}

func TestOutcomeIsDecidedOnceForEveryWaiter(t *testing.T) {
	o := NewOutcome[string]()
	var waiters sync.WaitGroup
	results := make(chan string, 10)
	for range 10 {
		waiters.Go(func() {
			v, err := o.Wait(context.Background(), nil)
			if err != nil {
				t.Errorf("Wait = %v", err)
			}
			results <- v
		})
	}
	if !o.Resolve("released", nil) || o.Resolve("other", nil) {
		t.Fatal("Resolve: want only the first call to decide")
	}
	waiters.Wait()
	close(results)
	for v := range results {
		if v != "released" {
			t.Fatalf("waiter got %q; want %q", v, "released")
		}
	}
}

func TestOutcomeWaiterThatGivesUpLeavesItUndecided(t *testing.T) {
	o := NewOutcome[int]()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := o.Wait(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v; want context.Canceled", err)
	}
	stopped := make(chan struct{})
	close(stopped)
	if _, err := o.Wait(context.Background(), stopped); !errors.Is(err, ErrStopped) {
		t.Fatalf("Wait on stopped = %v; want ErrStopped", err)
	}
	o.Resolve(3, nil)
	if v, err := o.Wait(context.Background(), stopped); v != 3 || err != nil {
		t.Fatalf("Wait after Resolve = %d, %v; want 3, nil", v, err)
	}
}
