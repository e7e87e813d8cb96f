// Package actor is the one driver of respire-go's lock handles: production
// (package lease, package coordination) and the deterministic simulator
// (sim/dst) run this code, and nothing else steps a handle.
//
// This package is part of respire-go's implementation: applications use
// the lease and coordination packages. Its API may change in any release,
// without notice; it carries no compatibility promise.
//
// # One input at a time, no goroutine per handle
//
// Each lock handle is a [Lock]: a statemachine.Handle, the pure core that
// decides everything, and what the driver needs to carry out the effects
// the core returns. Everything that happens to a handle is an input —
// a user request (release, reset, keep-alive start or stop, close), a
// timer tick, a command's completion, a fence's answer, a push-driven
// owner read — and every input is stepped under the Lock's mutex, one at a
// time, in the order the inputs took it. That is the actor's guarantee
// (one input at a time, in order) without a goroutine parked per idle
// handle: a held lock costs its 256 bytes and its place on the timer heap.
// A step and its effects never block: they append to queues, arm timers,
// answer waiting callers, and start work through the driver's Spawn.
//
// Requests step on the caller's goroutine, and a command the step starts
// for that caller is sent right there, governed by the caller's ctx; other
// commands, fences and clean-ups run through Spawn and step their
// completions where they end. The timers of every lock of a [Driver] share
// one heap and one clock timer (timers.go); keep-alive renewals due
// together on a node go in one pipelined batch (renewals.go); the push hub
// (push_wait.go, push_hold.go) turns client-side tracking invalidations
// into wake-ups of waiters and owner-compared reads for holders.
//
// # Three seams
//
// The driver touches the world only through [Clock] (time and timers),
// [Spawn] (starting work, waiting, watching a ctx's end) and
// conn.Transport (sessions, lock operations, renewal batches, fences,
// tracked reads). Production passes [RealClock], [RealSpawn] and a
// conn.Pool (rueidis) or the goredis transport; sim/dst passes a virtual
// clock, coroutine tasks scheduled by its seed, and a simulated network —
// so a schedule of the simulator is a run of the shipped driver, replayable
// from its seed.
package actor
