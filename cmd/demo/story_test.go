package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/respire-go/respire/lease"
)

// storyStageT opens the story's server for a test, closed when it ends.
func storyStageT(t *testing.T) (context.Context, *storyStage) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	t.Cleanup(cancel)
	s, err := openStoryStage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return ctx, s
}

// TestDemoShowsWhyInOneScreen_PausedHolder: a holder paused past its
// lease, measured in real time on the story's server. With the naive lock
// both workers' writes are accepted, the stale one last, and the paused
// holder's DEL deletes the other's lock; with respire-go the paused
// holder's lock.Context() has ended with ErrExpired when it resumes, its
// write with the older fencing token is refused, and so is its guarded write
// to the invoice's Redis hash (lock.Guard), the store and the hash keep the
// new owner's writes, and its Release answers NotOwned.
func TestDemoShowsWhyInOneScreen_PausedHolder(t *testing.T) {
	ctx, s := storyStageT(t)
	naive, err := s.pausedNaive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if naive.writers != 2 || naive.kept != "total=100" || !naive.deletedOther {
		t.Errorf("naive lock: %+v; want 2 writers, A's stale total=100 kept, B's lock deleted by A", naive)
	}
	safe, err := s.pausedSafe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(safe.cause, lease.ErrExpired) {
		t.Errorf("A's lock.Context() cause after the pause = %v; want lease.ErrExpired", safe.cause)
	}
	if !errors.Is(safe.lateWrite, errStaleToken) || safe.tokenB != safe.tokenA+1 {
		t.Errorf("A's late write with token %d (B's %d) = %v; want it refused as stale", safe.tokenA, safe.tokenB, safe.lateWrite)
	}
	if !errors.Is(safe.guarded, lease.ErrNotHeld) || strings.TrimSpace(safe.hashKept) != "$3\r\n120" {
		t.Errorf("A's guarded write after the pause = %v, the hash keeps %q; want it refused, B's 120 kept", safe.guarded, safe.hashKept)
	}
	if safe.kept != "total=120" || safe.release != lease.NotOwned {
		t.Errorf("respire-go: %+v; want B's total=120 kept and A's Release NotOwned", safe)
	}
	if naive.takenAfter < pausedLease || safe.takenAfter < pausedLease || naive.paused < naive.takenAfter ||
		safe.paused < safe.takenAfter {
		t.Errorf("naive %+v, respire-go %+v; want B to take the lock only once A's lease %v ran out, and A to resume after",
			naive, safe, pausedLease)
	}
}

// TestDemoShowsWhyInOneScreen_LossSeenAtOnce: another client overwrites a
// keep-alive holder's key; its lock.Context() ends told by the key's push
// (LossReadRefused), before any renewal could have told it.
func TestDemoShowsWhyInOneScreen_LossSeenAtOnce(t *testing.T) {
	ctx, s := storyStageT(t)
	run, err := s.lossSeen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var loss *lease.LossError
	if !errors.As(run.cause, &loss) || loss.Reason != lease.LossReadRefused {
		t.Fatalf("cause %v; want a *lease.LossError with LossReadRefused (told by the push)", run.cause)
	}
	if run.seenAfter >= lossLease/2 {
		t.Errorf("seen after %v; want before the first renewal (%v)", run.seenAfter, lossLease/2)
	}
}

// TestDemoShowsWhyInOneScreen_SemaphoreCapsWorkers: every job ran, and
// never more at once than the semaphore's limit.
func TestDemoShowsWhyInOneScreen_SemaphoreCapsWorkers(t *testing.T) {
	ctx, s := storyStageT(t)
	run, err := s.semaphoreCaps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if run.done != semaphoreJobs || run.most < 1 || run.most > semaphoreLimit {
		t.Fatalf("%+v; want all %d jobs done, at most %d at once", run, semaphoreJobs, semaphoreLimit)
	}
}

// TestDemoShowsWhyInOneScreen_ElectionHandsOverOnSIGTERM: the leader's work
// under ContextFrom ends with the signal's context.Canceled, and the
// waiting candidate leads after the leader resigned, within the lease (a
// leader that had not resigned would keep it waiting until its lease
// expired).
func TestDemoShowsWhyInOneScreen_ElectionHandsOverOnSIGTERM(t *testing.T) {
	ctx, s := storyStageT(t)
	run, err := s.electionTakeover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if run.workCause != context.Canceled || run.ledAfter >= electionLease {
		t.Fatalf("%+v; want the work ended by the signal and b leading within the lease %v", run, electionLease)
	}
}

// TestDemoShowsWhyInOneScreen_FitsOneScreen: the story prints at most 40
// lines of at most 100 characters, each scene with the facts and figures
// its run measured, and no token.
func TestDemoShowsWhyInOneScreen_FitsOneScreen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	var buf bytes.Buffer
	if err := runStory(ctx, &buf); err != nil {
		t.Fatalf("runStory: %v\n%s", err, buf.String())
	}
	out := buf.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) > 40 {
		t.Errorf("%d lines; want one screen (at most 40):\n%s", len(lines), out)
	}
	for _, line := range lines {
		if n := utf8.RuneCountInString(line); n > 100 {
			t.Errorf("a line of %d characters (at most 100): %q", n, line)
		}
	}
	for _, want := range []string{
		"naive SET NX PX + DEL", "respire-go (coordination.Acquire)",
		"A  resumes after", ": lock.Context() ended", "(the lease ran out): A skips its write",
		"A  writes anyway with token 1 → refused: token 1 < 2",
		"A  DEL → deletes B's lock", "A  Release → NotOwned: B's lock untouched",
		"✗ 2 writers; A's stale total=100 kept", "✓ 1 writer; B's total=120 kept",
		"A's lock.Context() ended", "ownership lost: another owner took or deleted the key",
		"ran at once (counted as they ran); all 10 done in",
		"a's work ends (context canceled), a resigns: b leads", "make demo ARGS=-wire",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the story lacks %q:\n%s", want, out)
		}
	}
	if tokenPattern.MatchString(out) || strings.Contains(out, "another-owner") {
		t.Errorf("the story shows a token:\n%s", out)
	}
}
