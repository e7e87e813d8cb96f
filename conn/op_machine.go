package conn

import "github.com/respire-go/respire/capstore"

// This file lets a Transport outside this package (package goredis) drive
// an Op with exactly the pure protocol *Pool drives it with: the same
// state machines, the same fallback ladders, the same error names.

// Machine returns the pure protocol state machine of o for a session whose
// capability snapshot is caps. Exactly one result is non-nil: op for the
// acquisition, extension, release and owner query (SET NX, SET IFEQ →
// EVALSHA → EVAL, DELEX → DELIFEQ → EVALSHA → EVAL, GET), fenced for
// FencedAcquireOp, script for the semaphore and read/write-lock Ops. Each
// call returns fresh machines at their first step; build new ones for every
// session tried. It sends nothing and does not block.
func (o Op) Machine(caps capstore.Set) (op *Operation, fenced *FencedAcquire, script *ScriptCall) {
	switch o.kind {
	case opFenced:
		return nil, NewFencedAcquire(o.key, o.counter, o.token, o.ttlMillis), nil
	case opPrimitive:
		return nil, nil, &ScriptCall{call: o.prim, step: StepPrimitiveEvalsha}
	case opExtend:
		return NewExtend(o.key, o.token, o.ttlMillis, caps), nil, nil
	case opRelease:
		return NewRelease(o.key, o.token, caps), nil, nil
	case opAcquire:
		return NewAcquire(o.key, o.token, o.ttlMillis), nil, nil
	}
	return NewOwnerQuery(o.key), nil, nil
}

// Operation returns o's state machine by value, ok false for a fenced
// acquisition or a primitive (see Machine): for a transport that keeps it
// off the heap.
func (o Op) Operation(caps capstore.Set) (op Operation, ok bool) {
	switch o.kind {
	case opFenced, opPrimitive:
		return Operation{}, false
	case opExtend:
		return *NewExtend(o.key, o.token, o.ttlMillis, caps), true
	case opRelease:
		return *NewRelease(o.key, o.token, caps), true
	case opAcquire:
		return Operation{key: o.key, token: o.token, ttlMillis: o.ttlMillis, step: StepAcquire}, true
	}
	return Operation{key: o.key, step: StepGet}, true
}

// Name returns the Op field of the *Error values o's failures carry
// ("acquire", "extend", "release", "owner", "fenced-acquire", or the
// primitive's name).
func (o Op) Name() string { return o.name() }

// Key returns the wire key that routes o (the lease key of a fenced
// acquisition, the first key of a primitive's script).
func (o Op) Key() string { return o.key }

// FencedKeys returns the lease and counter keys of a FencedAcquireOp, ok
// false for every other Op.
func (o Op) FencedKeys() (leaseKey, counterKey string, ok bool) {
	return o.key, o.counter, o.kind == opFenced
}

// Invalid returns the NotSubmitted *Error of an Op built from bad input
// (nothing may be sent for it), and nil otherwise.
func (o Op) Invalid() error { return o.invalid() }
