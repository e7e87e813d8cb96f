// Package dst is respire-go's deterministic simulation runtime: it runs the
// real lock-handle core (statemachine/) and conn/'s pure protocol decisions
// for several simulated client processes against the in-process simulated
// server (sim.Engine), all in one goroutine.
//
// One seed → one PRNG → one virtual clock → one transcript. A seeded
// scheduler picks which pending event happens next: a command arriving at
// the server, a reply arriving at a client, a timer firing, a user call or a
// user cancellation. Every random choice goes through a named shouldX
// predicate of the World, so a schedule is a pure function of its seed and
// Options: the same seed gives a byte-identical transcript. Invariants are
// checked after every event; a failing run reports its seed and the one
// command that replays it.
//
// Nothing in this package is safe for concurrent use: a World belongs to one
// goroutine. Independent Worlds may run in parallel (cmd/simcampaign does).
package dst
