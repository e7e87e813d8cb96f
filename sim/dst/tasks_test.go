package dst

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/actor"
	sm "github.com/respire-go/respire/statemachine"
)

// taskWorld is a world with one process and no workload: the scheduler and
// the task runtime alone.
func taskWorld(seed uint64) (*world, *process) {
	w := &world{rng: rand.New(rand.NewPCG(seed, seed))}
	p := &process{name: "p1"}
	w.procs = append(w.procs, p)
	return w, p
}

// runAll steps w until nothing is pending.
func runAll(w *world) {
	for w.step() {
	}
	w.stopTasks()
}

// TestTasksInterleaveBySeed: tasks that wait on channels closed by timers
// run in an order that is a function of the seed alone: the same seed gives
// the same trace, and some seed gives another one.
func TestTasksInterleaveBySeed(t *testing.T) {
	trace := func(seed uint64) string {
		w, p := taskWorld(seed)
		spawn := w.spawnFor(p)
		var log []string
		for i := range 4 {
			spawn.Go(func() {
				for step := range 3 {
					ready := make(chan struct{})
					w.schedule(p, w.now, func() { close(ready) })
					if err := spawn.Wait(context.Background(), ready); err != nil {
						t.Errorf("Wait = %v", err)
					}
					log = append(log, strconv.Itoa(i)+"."+strconv.Itoa(step))
				}
			})
		}
		runAll(w)
		return strings.Join(log, " ")
	}
	first := trace(1)
	if got := trace(1); got != first {
		t.Fatalf("seed 1 gave two traces:\n%s\n%s", first, got)
	}
	if strings.Count(first, ".") != 12 {
		t.Fatalf("trace %q: want 12 steps", first)
	}
	for seed := uint64(2); seed < 50; seed++ {
		if trace(seed) != first {
			return
		}
	}
	t.Fatal("49 seeds gave the same interleaving: the scheduler does not choose")
}

// TestTasksWaitEndsWithTheContext: a task waiting on a channel that never
// fires returns ctx's cause once ctx is cancelled by another event, and
// an AfterFunc registered on that ctx runs as a task of its own.
func TestTasksWaitEndsWithTheContext(t *testing.T) {
	w, p := taskWorld(7)
	spawn := w.spawnFor(p)
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("given up")
	var got error
	after := false
	spawn.AfterFunc(ctx, func() { after = true })
	spawn.Go(func() { got = spawn.Wait(ctx, make(chan struct{})) })
	w.schedule(p, 10*time.Millisecond, func() { cancel(cause) })
	runAll(w)
	if !errors.Is(got, cause) || !after {
		t.Fatalf("Wait = %v, AfterFunc ran %v; want %v and true", got, after, cause)
	}
}

// TestTasksParkedAtTheEndAreUnwound: a task still waiting when the
// schedule ends is unwound (its deferred calls run), and Wait outside a
// task panics.
func TestTasksParkedAtTheEndAreUnwound(t *testing.T) {
	w, p := taskWorld(3)
	spawn := w.spawnFor(p)
	unwound := false
	spawn.Go(func() {
		defer func() { unwound = true }()
		_ = spawn.Wait(context.Background(), make(chan struct{}))
		t.Error("Wait returned after the schedule ended")
	})
	runAll(w)
	if !unwound {
		t.Fatal("the parked task was not unwound")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Wait outside a task did not panic")
		}
	}()
	_ = spawn.Wait(context.Background(), make(chan struct{}))
}

// TestTasksSleepOnTheVirtualClock: actor.Sleep through a task and a
// virtual clock ends at the virtual time asked for.
func TestTasksSleepOnTheVirtualClock(t *testing.T) {
	w, p := taskWorld(5)
	spawn := w.spawnFor(p)
	clock := &virtualClock{w: w, p: p}
	var woke time.Duration
	spawn.Go(func() {
		if err := actor.Sleep(context.Background(), spawn, clock, 250*time.Millisecond); err != nil {
			t.Errorf("Sleep = %v", err)
		}
		woke = w.now
	})
	runAll(w)
	if woke != 250*time.Millisecond {
		t.Fatalf("woke at %v; want 250ms", woke)
	}
}

// The transcript names every input kind and outcome of the core: a kind
// added to statemachine must be named here too (observer.go).
func TestTranscriptNamesEveryInput(t *testing.T) {
	if got, want := len(inputNames), int(sm.InputAcquireSettled)+1; got != want {
		t.Errorf("inputNames has %d names; statemachine has %d input kinds (and 0)", got, want-1)
	}
	if got, want := len(outcomeNames), int(sm.OutcomeUncertain)+1; got != want {
		t.Errorf("outcomeNames has %d names; statemachine has %d outcomes (and 0)", got, want-1)
	}
}
