// Package actor is the production runtime that serializes everything that
// happens to one lock handle: user requests, keep-alive ticks and command
// completions are messages, handled one at a time, in the order they were
// accepted.
//
// This package is part of respire-go's implementation: applications use
// the lease and coordination packages. Its API may change in any release,
// without notice; it carries no compatibility promise.
//
// A [Mailbox] holds no goroutine while it is empty. The first message sent to
// an idle mailbox starts one drain goroutine; that goroutine runs the handler
// for each queued message in FIFO order and exits as soon as the queue is
// empty. At most one drain goroutine exists per mailbox, so the handler never
// runs concurrently with itself, and every handler call happens-after the
// previous one (even when they ran on different goroutines).
//
// Timers are [Alarm]s built on [Clock.AfterFunc], which costs no goroutine
// until it fires. An alarm tick carries a generation; the handler asks
// [Alarm.Current] whether a tick is still wanted, so a tick from before the
// last [Alarm.Arm] or [Alarm.Stop] is never acted upon.
//
// Requests that need an answer use [Ask]: the request carries a [Reply] with a
// one-slot buffer, so the handler never blocks replying even when the caller
// has given up. Answers that many callers share (several concurrent releases
// joining one outcome) use [Outcome].
//
// Handlers must not block: start I/O asynchronously and feed its completion
// back with [Mailbox.Deliver]. A blocked handler holds the drain goroutine and
// every message behind it.
package actor
