package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// This file is the schedules' second workload: a lease semaphore and a
// read/write lock, shared by every process, under the same faults as the
// mutex keys. Its workers are apart from the mutex workers (streams of
// their own), so that a seed's mutex workload is what it was before.

// streamPrimitives is the PCG stream of the primitives' plan; primitive
// worker w draws from stream streamPrimWorkers+w.
const (
	streamPrimitives  = 1<<62 + 1
	streamPrimWorkers = 1<<62 + 1<<32
)

// holdKind is what a holding holds.
type holdKind uint8

const (
	holdMutex  holdKind = iota // a lease key (the zero value)
	holdPermit                 // a permit of the schedule's semaphore
	holdRead                   // a read hold of its read/write lock
	holdWrite                  // the write hold of its read/write lock
)

func (k holdKind) String() string {
	return [...]string{"mutex", "permit", "read", "write"}[k]
}

// primPlan is the primitives' part of a plan.
type primPlan struct {
	sem     string // the semaphore's name
	limit   int    // its limit, 2–3
	rw      string // the read/write lock's name
	workers int    // 3–4 primitive workers; the first is the schedule's one writer
}

// newPrimPlan draws the primitives' plan from the seed.
func newPrimPlan(seed uint64) primPlan {
	rng := rand.New(rand.NewPCG(seed, streamPrimitives))
	return primPlan{sem: fmt.Sprintf("chaos:%d:s", seed), limit: 2 + rng.IntN(2), rw: fmt.Sprintf("chaos:%d:rw", seed),
		workers: 3 + rng.IntN(2)}
}

// keys returns the wire keys of the primitives (no view prefix).
func (p primPlan) keys() []string {
	sem, _ := conn.NewSemaphore("", p.sem, p.limit)
	rw, _ := conn.NewRWLock("", p.rw)
	return []string{sem.HoldersKey, rw.WriterKey, rw.ReadersKey}
}

// primDecision is one iteration of a primitive worker: what it takes, and
// the decisions of a mutex iteration for the rest (lease, keep-alive,
// hold, reset, release).
type primDecision struct {
	kind holdKind
	// crash: the permit's holder dies once it has it (no renewal, no
	// release: the worker leaves the handle alone), so that its permit must
	// free at its lease end.
	crash bool
	decision
}

// decidePrim draws one iteration of primitive worker w (0: the writer).
func decidePrim(rng *rand.Rand, w int) primDecision {
	d := primDecision{decision: decide(rng, 1)}
	switch {
	case w == 0:
		d.kind = holdWrite
		d.wait = between(rng, 200*time.Millisecond, 800*time.Millisecond)
		d.hold = between(rng, 0, 100*time.Millisecond)
		d.backoff = between(rng, 50*time.Millisecond, 200*time.Millisecond) // readers' turn, after every write
	case rng.IntN(5) < 3:
		d.kind = holdPermit
		if d.crash = rng.IntN(6) == 0; d.crash {
			d.keepAlive = false
		}
	default:
		d.kind = holdRead
		d.hold = between(rng, 0, 120*time.Millisecond)
	}
	switch {
	case d.kind == holdWrite || rng.IntN(2) == 0:
	case d.kind == holdPermit: // long enough, some of them, for the check that a dead holder's permit frees
		d.wait = between(rng, 10*time.Millisecond, 700*time.Millisecond)
	default:
		d.wait = between(rng, 10*time.Millisecond, 150*time.Millisecond)
	}
	return d
}

// primWait is one waiting acquisition of the write hold or of a permit,
// for the checks that a writer is not starved and that a permit frees.
type primWait struct {
	label      string
	start, end time.Time
	acquired   bool
	gaveUp     bool // ErrNotAcquired: readers (or a marker) held the lock for the whole wait
}

// runPrim is a primitive worker's loop.
func (w *worker) runPrim() {
	for iter := 0; !w.proc.closed.Load() && time.Now().Before(w.deadline); iter++ {
		d := decidePrim(w.rng, w.id)
		lock, h := w.acquirePrim(d, iter)
		if lock == nil {
			sleepFor(d.backoff)
			continue
		}
		if d.crash {
			h.crash()
			continue
		}
		w.hold(lock, h, d.decision)
		w.release(lock, h, d.decision)
		if d.kind == holdWrite {
			sleepFor(d.backoff)
		}
	}
}

// acquirePrim runs one permit, read or write acquisition as d says and
// records the handle it returns.
func (w *worker) acquirePrim(d primDecision, iter int) (*lease.Lock, *holding) {
	var opts []lease.AcquireOption
	if d.keepAlive {
		opts = append(opts, lease.WithKeepAlive())
	}
	if d.wait > 0 {
		opts = append(opts, lease.WithWait(d.wait), lease.WithRetryEvery(10*time.Millisecond))
	}
	pp := w.s.plan.prim
	label := fmt.Sprintf("p%d/%s%d#%d", w.proc.id, d.kind, w.id, iter)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), d.acquireTimeout)
	if d.kind == holdWrite {
		cancel() // the writer is not cut off: the starvation check needs its whole wait
		ctx, cancel = context.WithTimeout(context.Background(), d.wait+normalTimeout)
	}
	var lock *lease.Lock
	var err error
	resource := pp.rw
	switch d.kind {
	case holdPermit:
		resource = pp.sem
		lock, err = w.proc.locks.Semaphore(pp.sem, pp.limit).Acquire(ctx, d.lease, opts...)
	case holdRead:
		lock, err = w.proc.locks.RWLock(pp.rw).RLock(ctx, d.lease, opts...)
	default:
		lock, err = w.proc.locks.RWLock(pp.rw).Lock(ctx, d.lease, opts...)
	}
	end := time.Now()
	cancel()
	w.stats.PrimCalls++
	pw := primWait{label: label, start: start, end: end, acquired: err == nil, gaveUp: errors.Is(err, lease.ErrNotAcquired)}
	switch {
	case d.kind == holdWrite:
		w.writerWaits = append(w.writerWaits, pw)
		if pw.gaveUp {
			w.stats.WriterGaveUp++
		}
	case d.kind == holdPermit && d.wait > 0:
		w.permitWaits = append(w.permitWaits, pw)
		if pw.gaveUp {
			w.stats.PermitGaveUp++
		}
	}
	if err != nil {
		w.noteErr(err)
		if !errors.Is(err, lease.ErrNotAcquired) && !errors.Is(err, conn.ErrNotSubmitted) {
			w.failures = append(w.failures, acquireFailure{label: label, key: resource, start: start, end: end,
				err: err.Error(), abandoned: true, kind: d.kind, lease: d.lease})
		}
		return nil, nil
	}
	w.stats.countPrim(d.kind)
	if d.crash {
		w.stats.Crashed++
	}
	h := &holding{lock: lock, key: resource, token: string(lock.Token().Bytes()), lease: d.lease, keepAlive: d.keepAlive,
		acquiredAt: end, label: label, kind: d.kind}
	h.sample(lock)
	w.holdings = append(w.holdings, h)
	if d.keepAlive {
		w.watchKeepAlive(lock, h)
	}
	return lock, h
}

// countPrim counts an acquired permit or hold.
func (s *Stats) countPrim(k holdKind) {
	switch k {
	case holdPermit:
		s.Permits++
	case holdRead:
		s.Reads++
	case holdWrite:
		s.Writes++
	}
}
