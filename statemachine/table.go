package statemachine

import (
	"context"
	"errors"
	"fmt"

	"github.com/looplab/fsm"
)

// Edge is one row of the graph: Event moves a handle from any state in From to To. Doc is
// the sentence docs/states.md prints for the edge; it lives here so it cannot drift.
type Edge struct {
	Event Event
	From  []State
	To    State
	Doc   string
}

func edge(e Event, to State, doc string, from ...State) Edge {
	return Edge{Event: e, From: from, To: to, Doc: doc}
}

// graph is the single definition of the handle's state graph. Step may only move a handle
// along these edges; any other (state, event) pair panics. Graph returns a copy.
var graph = []Edge{
	edge(EventAcquired, Held, "The SET NX PX replied OK: the handle owns the lease from the timestamp taken before the send.", Acquiring),
	edge(EventContended, NotAcquired, "The SET NX PX replied nil: another owner holds the key; nothing else is sent.", Acquiring),
	edge(EventAcquireFailed, Abandoned, "The SET was provably not submitted or got a definite server error: nothing was written, no cleanup.", Acquiring),
	edge(EventAcquireAbandoned, Abandoned, "The caller gave up, or the SET outcome is uncertain, after the SET may have been written, or its reply came after the lease could have expired: the handle is never returned and a cleanup delete is emitted once the SET may have applied (the runtime orders it after the SET: same socket, or after fencing that socket).", Acquiring),
	edge(EventAcquireSettling, Acquiring, "A waiting acquisition's SET has an unknown outcome (its connection reset, its reply lost): instead of giving up, the socket that carried it is fenced and the key read on a fresh session (EffectSettleAcquire); nothing else is sent meanwhile.", Acquiring),
	edge(EventAcquireConfirmed, Held, "The settling found the key holding this try's token: the SET ran, so the handle owns the lease, counted from the SET's first send.", Acquiring),
	edge(EventAcquireNotTaken, NotAcquired, "The settling found the key missing or another owner's: after the fence the SET can never run, so nothing needs cleaning up and the wait goes on.", Acquiring),
	edge(EventAcquireSettled, Abandoned, "A SET completion arrives after the caller gave up: a reply that may have applied it triggers the cleanup delete.", Abandoned),
	edge(EventResetRequested, Held, "A reset-expiry request is sent now, or queued behind the renewal in flight (resets are serialised in request order).", Held),
	edge(EventResetRequested, Recovering, "A reset-expiry while the lock recovers is queued: it is sent once the recovery renewal confirmed the lease, and answered false if it did not.", Recovering),
	edge(EventResetRefused, Releasing, "A reset-expiry while releasing is answered false without sending.", Releasing),
	edge(EventResetRefused, Uncertain, "A reset-expiry after ownership was given up is answered false without sending.", Uncertain),
	edge(EventResetRefused, Lost, "A reset-expiry on a lost handle is answered false without sending.", Lost),
	edge(EventResetRefused, Released, "A reset-expiry on a released handle is answered false without sending.", Released),
	edge(EventRenewalDue, Held, "The keep-alive renewal timer fired while held: a renewal with the latest Duration is sent, or skipped while another renewal is in flight.", Held),
	edge(EventRenewalDue, Releasing, "The keep-alive renewal timer fired while releasing: nothing is sent; the keep-alive waits for the release outcome, at most until the lease deadline.", Releasing),
	edge(EventRenewalDue, Recovering, "The retry timer of a recovery renewal that was not submitted fired: the recovery renewal is sent again once no fence or renewal is in flight.", Recovering),
	edge(EventRenewed, Held, "A renewal replied OK: Duration and the renewal's send timestamp are published and the keep-alive is rescheduled.", Held),
	edge(EventRenewed, Releasing, "A renewal that was in flight when the release started replied OK: the new Duration is published; the release goes on.", Releasing),
	edge(EventRenewalRetry, Held, "A keep-alive renewal provably did not run (not submitted, or a reply such as CLUSTERDOWN, TRYAGAIN, READONLY, LOADING that proves it did not run): nothing changed on the server, so it is sent again after a short delay while the lease deadline lasts; the deadline watch, not the error, guards safety.", Held),
	edge(EventRenewalRetry, Releasing, "A keep-alive renewal in flight when the release started provably did not run: nothing is re-sent; the release outcome decides.", Releasing),
	edge(EventRenewalRetry, Recovering, "The recovery renewal provably did not run: it is sent again after a short delay while the lease deadline lasts.", Recovering),
	edge(EventResetRejected, Held, "A manual reset got a definite server error or was not submitted: the error goes to its caller, state unchanged.", Held),
	edge(EventResetRejected, Releasing, "A manual reset in flight when the release started got a definite error or was not submitted: the error goes to its caller, the release goes on.", Releasing),
	edge(EventRenewalRefused, Lost, "A renewal replied false: the key is missing or another owner's, so ownership is lost and the keep-alive is cancelled; during a release the later release outcome cannot restore Held.", Held, Releasing, Recovering),
	edge(EventRenewalFailed, Lost, "A keep-alive renewal got a definite error (or the recovery could not be retried): the keep-alive is cancelled with the failure and ownership is marked lost.", Held, Releasing, Recovering),
	edge(EventRenewalUncertain, Uncertain, "A manual reset's (or, without a running keep-alive, a renewal's) outcome is uncertain: the keep-alive is cancelled first, then the session that carried it is fenced.", Held, Releasing, Recovering),
	edge(EventRenewalInterrupted, Recovering, "A keep-alive renewal's outcome is uncertain (connection reset, its session closed under it, timeout) while the lease deadline lasts: the keep-alive context stays live, guarded by the deadline watch; the session that carried the renewal is fenced, and then an owner-compared renewal on a fresh session settles whether the lease is still ours.", Held, Recovering),
	edge(EventRenewalSettled, Uncertain, "A renewal completes after ownership was given up: its waiting caller, if any, gets false or its error; state unchanged.", Uncertain),
	edge(EventRenewalSettled, Lost, "A renewal completes after ownership was lost: its waiting caller, if any, gets false or its error; state unchanged.", Lost),
	edge(EventRenewalSettled, Released, "A renewal in flight when the release succeeded completes: its caller, if any, gets false; state unchanged.", Released),
	edge(EventRecovered, Held, "The recovery renewal replied OK: nothing of the fenced socket can run any more and the fresh renewal confirmed the lease from its send time, so the lock is held again and the keep-alive goes on.", Recovering),
	edge(EventRecoveryFailed, Lost, "The fence of the interrupted renewal failed: its socket may still run it, so the recovery is given up and the keep-alive is cancelled with the fence's error.", Recovering),
	edge(EventDeadlineInFlight, Uncertain, "The lease deadline passed while a renewal, release or fence was in flight: ownership is given up (keep-alive cancelled), the command is aborted and its session fenced.", Held, Releasing, Recovering),
	edge(EventDeadlineIdle, Lost, "The lease deadline passed (seen by the keep-alive's timer or when the handle is next used) while nothing was in flight: ownership is lost.", Held, Recovering),
	edge(EventFenceDone, Lost, "The fence (CLIENT KILL) answered or failed: nothing queued on the old session can run any more; waiting callers get the original error, later releasers NotOwned.", Uncertain),
	edge(EventFenceDone, Recovering, "The fence of the interrupted renewal answered: nothing of the old socket can run any more, so an owner-compared renewal on a fresh session is safe while the last confirmed deadline lasts; it is sent now.", Recovering),
	edge(EventKeepAliveStarted, Held, "A keep-alive starts: renewal and deadline timers are armed.", Held),
	edge(EventKeepAliveRefused, Held, "A second keep-alive, or one with no time left, is refused with an error.", Held),
	edge(EventKeepAliveRefused, Releasing, "A keep-alive cannot start while releasing.", Releasing),
	edge(EventKeepAliveRefused, Recovering, "A keep-alive cannot start while the lock recovers.", Recovering),
	edge(EventKeepAliveRefused, Uncertain, "A keep-alive cannot start after ownership was given up.", Uncertain),
	edge(EventKeepAliveRefused, Lost, "A keep-alive cannot start on a lost handle.", Lost),
	edge(EventKeepAliveRefused, Released, "A keep-alive cannot start on a released handle.", Released),
	edge(EventKeepAliveStop, Held, "The keep-alive is stopped; the stop completes once no keep-alive renewal is in flight; the lock stays held.", Held),
	edge(EventKeepAliveStop, Releasing, "The keep-alive is stopped while releasing.", Releasing),
	edge(EventKeepAliveStop, Recovering, "The keep-alive is stopped while the lock recovers: its context ends now; the stop completes once the recovery settled (no retry after that).", Recovering),
	edge(EventKeepAliveStop, Uncertain, "The keep-alive is stopped while fencing; the stop completes after the fence.", Uncertain),
	edge(EventKeepAliveStop, Lost, "Stopping the keep-alive of a lost handle completes at once.", Lost),
	edge(EventKeepAliveStop, Released, "Stopping the keep-alive of a released handle completes at once.", Released),
	edge(EventReleaseStarted, Releasing, "A release or close finds the handle held: it becomes the starter of the one shared compare-and-delete.", Held),
	edge(EventReleaseJoined, Releasing, "A release or close while releasing joins the shared attempt; no second delete is sent.", Releasing),
	edge(EventReleaseDeferred, Recovering, "A release or close while the lock recovers waits: it starts once the recovery confirmed the lease, and answers NotOwned if it did not.", Recovering),
	edge(EventReleaseAnswered, Uncertain, "A release after ownership was given up returns NotOwned once the fence has answered (until then a command of this handle may still run).", Uncertain),
	edge(EventReleaseAnswered, Lost, "A release on a lost handle returns NotOwned without sending.", Lost),
	edge(EventReleaseAnswered, Released, "A release on a released handle returns AlreadyReleased without sending.", Released),
	edge(EventReleased, Released, "The delete returned 1: every waiting caller gets Released and the keep-alive ends with cause released.", Releasing),
	edge(EventReleaseNotOwned, Lost, "The delete returned 0: the key was not ours; callers get NotOwned.", Releasing),
	edge(EventReleaseNotSubmitted, Held, "The delete was provably not submitted (the starter's ctx ended before the hand-off, the session was found dead first, the dial failed, the session's permission probe before it got no answer): ownership is restored, the keep-alive keeps running, and a waiting joiner starts the next attempt.", Releasing),
	edge(EventReleaseRefused, Held, "The delete got a definite server error (e.g. NOPERM): it did not run, so ownership is restored and the error goes to the releasers; a retry may succeed.", Releasing),
	edge(EventReleaseUncertain, Uncertain, "The delete's outcome is uncertain (anything after the hand-off, a locally closed socket included): the keep-alive is cancelled first, then the session that carried it is fenced.", Releasing),
	edge(EventReleaseUncertainUnfenced, Lost, "The delete's outcome is uncertain and the client may not run CLIENT KILL: ownership is lost without a fence.", Releasing),
	edge(EventRenewalUncertainUnfenced, Lost, "A renewal's outcome is uncertain and its session cannot be fenced (unfenced renewal was chosen for a user without CLIENT KILL): ownership is given up at once, without a fence or a recovery; the renewal may still run later, which only keeps this lock's key for up to one more lease.", Held, Releasing),
	edge(EventReleaseSettled, Uncertain, "A delete completes after the lease deadline gave ownership up: callers get its outcome; state unchanged.", Uncertain),
	edge(EventReleaseSettled, Lost, "A delete completes after a renewal proved the loss: callers get its outcome, a definite error cannot restore Held.", Lost),
	edge(EventCallerCancelled, Held, "A caller waiting in the reset queue gave up: it is removed and answered; nothing else changes.", Held),
	edge(EventCallerCancelled, Releasing, "A joined releaser gave up: it stops waiting, the shared release goes on.", Releasing),
	edge(EventCallerCancelled, Recovering, "A caller waiting for the recovery gave up: it is removed and answered; the recovery goes on.", Recovering),
	edge(EventCallerCancelled, Uncertain, "A caller waiting for the fence gave up: it is answered; the fence goes on.", Uncertain),
	edge(EventOwnerReadRefused, Lost, "A push said the key changed (deleted, expired or written) and the owner-compared read that followed found it missing or holding another token: ownership is lost and the keep-alive is cancelled at once, without waiting for the next renewal; a read that finds our token changes nothing. From Recovering too (the token is unique: no renewal's answer can make the key ours again): at once, or when the interrupted renewal's fence answers if the refusal came during the fence. A refusal during a release is acted on only if the delete did not run (not submitted, refused): right after release-not-submitted or release-refused made the handle Held again.", Held, Recovering),
	edge(EventCallerCancelled, Lost, "A releaser waiting for a delete still in flight after the loss gave up: it is answered; the delete goes on.", Lost),
	edge(EventGuardRefused, Lost, "A guarded write's script found the key missing or holding another token — or, for a fencing-token lock, a larger fencing token in the fence record — and wrote nothing: ownership is lost and the keep-alive is cancelled at once, as after a push-detected loss (the token is unique, and a fence record never goes down, so no renewal's answer can make the lock ours again). From Recovering too: at once, or when the interrupted renewal's fence answers if the refusal came during the fence.", Held, Recovering),
}

// Graph returns the state graph: every edge Step may follow (a fresh copy, safe to modify).
func Graph() []Edge {
	out := make([]Edge, len(graph))
	for i, ed := range graph {
		out[i] = ed
		out[i].From = append([]State(nil), ed.From...)
	}
	return out
}

// StateDoc returns the sentence docs/states.md prints for state s.
func StateDoc(s State) string {
	if s < NumStates {
		return stateDocs[s]
	}
	return ""
}

// stateDocs holds the sentence docs/states.md prints for each state.
var stateDocs = [NumStates]string{
	Acquiring:   "The SET NX PX is being sent; the handle is not yet visible to the caller.",
	Held:        "The handle believes it owns the lease; RemainingEstimate counts down from the last confirmed send timestamp.",
	Releasing:   "One shared compare-and-delete is in flight; renewals are not sent and joiners wait for its outcome.",
	Recovering:  "A keep-alive renewal's outcome is unknown but the lease deadline lasts: the connection that carried it is being fenced, then an owner-compared renewal on a fresh connection settles ownership; the keep-alive context stays live and RemainingEstimate still counts down from the last confirmed renewal.",
	Uncertain:   "A renewal or delete may have run with an unknown result: ownership is given up and the session that carried it is being fenced.",
	Lost:        "Ownership is lost (false reply, deadline, uncertain outcome); nothing more is sent and releases return NotOwned.",
	Released:    "This handle's delete removed the key; releases return AlreadyReleased.",
	NotAcquired: "Another owner held the key; no handle is returned.",
	Abandoned:   "The acquisition failed or was cancelled; no handle is returned, a SET that may have applied is cleaned up.",
}

// invalidState marks a (state, event) pair with no edge.
const invalidState State = 0xFF

// nextState is the immutable lookup built from Graph at init.
var nextState = buildNextState()

func buildNextState() (table [NumStates][NumEvents]State) {
	for s := range table {
		for e := range table[s] {
			table[s][e] = invalidState
		}
	}
	for _, ed := range graph {
		for _, from := range ed.From {
			if table[from][ed.Event] != invalidState {
				panic(fmt.Sprintf("statemachine: duplicate edge %s -%s->", from, ed.Event))
			}
			table[from][ed.Event] = ed.To
		}
	}
	if err := validateWithFSM(table); err != nil {
		panic(err)
	}
	return table
}

// Next returns the state event moves s to, and false when the graph has no such edge.
func Next(s State, e Event) (State, bool) {
	if s >= NumStates || e >= NumEvents {
		return invalidState, false
	}
	to := nextState[s][e]
	return to, to != invalidState
}

// Events returns the graph as a looplab/fsm table (one EventDesc per edge).
func Events() fsm.Events {
	return eventsOf(graph)
}

func eventsOf(edges []Edge) fsm.Events {
	events := make(fsm.Events, 0, len(edges))
	for _, ed := range edges {
		src := make([]string, len(ed.From))
		for i, s := range ed.From {
			src[i] = s.String()
		}
		events = append(events, fsm.EventDesc{Name: ed.Event.String(), Src: src, Dst: ed.To.String()})
	}
	return events
}

// NewFSM returns a fresh looplab FSM for the graph, starting at initial, without callbacks. It
// is for validation, visualisation and tests; handles never hold one.
func NewFSM(initial State) *fsm.FSM {
	return fsm.NewFSM(initial.String(), Events(), nil)
}

// FireFSM fires e on f with context.Background(), treating NoTransitionError{Err: nil}
// (a self-loop) as success, as the style guide requires.
func FireFSM(f *fsm.FSM, e Event) error {
	err := f.Event(context.Background(), e.String())
	var noTransition fsm.NoTransitionError
	if errors.As(err, &noTransition) && noTransition.Err == nil {
		return nil
	}
	return err
}

// validateWithFSM checks every (state, event) pair of table against one real looplab FSM.
func validateWithFSM(table [NumStates][NumEvents]State) error {
	f := NewFSM(Acquiring)
	for s := State(0); s < NumStates; s++ {
		for e := Event(0); e < NumEvents; e++ {
			f.SetState(s.String())
			err := FireFSM(f, e)
			want := table[s][e]
			if want == invalidState {
				if err == nil {
					return fmt.Errorf("statemachine: looplab allows %s -%s-> %s, lookup does not", s, e, f.Current())
				}
				continue
			}
			if err != nil || f.Current() != want.String() {
				return fmt.Errorf("statemachine: %s -%s-> want %s, looplab gives %s (%v)", s, e, want, f.Current(), err)
			}
		}
	}
	return nil
}
