package chaos

import (
	"slices"
	"sync"
	"time"

	"github.com/respire-go/respire/internal/faultproxy"
)

// injector applies a schedule's planned faults at their offsets, and lifts
// them. Its state is touched only by its own goroutine (run), then, once run
// has returned, by liftAll.
type injector struct {
	s       *schedule
	start   time.Time
	applied [NumFaultKinds]int // faults applied, per kind
	closers sync.WaitGroup     // Locks.Close calls started mid-flight
	paused  int                // pauses applied and not yet lifted: the server resumes when the last one lifts
	events  []faultEvent
}

// faultEvent is one applied or lifted fault, for the report of a failing
// schedule.
type faultEvent struct {
	at       time.Time
	f        *fault
	lift     bool
	upstream string // the proxied connection's address as the server sees it ("" if none)
}

// action is one step of the timeline: apply or lift one fault.
type action struct {
	at    time.Duration
	f     *fault
	apply bool
}

// timeline returns every apply and lift in time order (apply before lift
// at the same offset; plan order among equals).
func timeline(faults []*fault) []action {
	var out []action
	for _, f := range faults {
		out = append(out, action{at: f.at, f: f, apply: true})
		if f.dur > 0 {
			out = append(out, action{at: f.at + f.dur, f: f})
		}
	}
	slices.SortStableFunc(out, func(a, b action) int { return int(a.at - b.at) })
	return out
}

// run applies the timeline until it ends or stop is closed.
func (in *injector) run(stop <-chan struct{}) {
	for _, a := range timeline(in.s.plan.faults) {
		timer := time.NewTimer(time.Until(in.start.Add(a.at)))
		select {
		case <-stop:
			timer.Stop()
			return
		case <-timer.C:
		}
		if a.apply {
			in.apply(a.f)
		} else {
			in.lift(a.f)
		}
	}
}

// apply applies one fault; a fault whose target does not exist (no live
// connection, a process already closed) is skipped and not counted.
func (in *injector) apply(f *fault) {
	proxy := in.s.proxy
	switch f.kind {
	case FaultPause:
		if in.paused++; in.paused == 1 {
			in.s.srv.pause(proxy)
		}
	case FaultKill:
		var ok bool
		if f.killed, ok = in.s.srv.killProxied(proxy, f.target); !ok {
			return
		}
	case FaultDropPush, FaultDelayPush:
		if !in.s.srv.injectPush(f) {
			return
		}
	case FaultPartition:
		if !in.partition(f) {
			return
		}
	case FaultCloseLocks:
		proc := in.s.procs[f.target%len(in.s.procs)]
		if proc.closed.Swap(true) {
			return
		}
		in.closers.Go(proc.locks.Close)
	default:
		conns := proxy.Conns()
		if f.process > 0 {
			conns = slices.DeleteFunc(conns, func(c *faultproxy.Conn) bool { return in.s.dialer(c.ClientAddr()) != f.process-1 })
		}
		if len(conns) == 0 {
			return
		}
		f.conn = conns[f.target%len(conns)]
		in.applyToConn(f)
	}
	f.applied = true
	in.applied[f.kind]++
	in.note(f, false)
}

// partition black-holes, towards the server, every live connection of
// f's process; false when it has none.
func (in *injector) partition(f *fault) bool {
	f.conns = slices.DeleteFunc(in.s.proxy.Conns(), func(c *faultproxy.Conn) bool {
		return in.s.dialer(c.ClientAddr()) != f.process-1
	})
	for _, c := range f.conns {
		c.BlackHole(f.dir)
	}
	return len(f.conns) > 0
}

// note records an applied or lifted fault.
func (in *injector) note(f *fault, lift bool) {
	e := faultEvent{at: time.Now(), f: f, lift: lift}
	if f.conn != nil {
		e.upstream = f.conn.UpstreamLocalAddr()
	}
	in.events = append(in.events, e)
}

// applyToConn applies a fault of one proxied connection.
func (in *injector) applyToConn(f *fault) {
	switch f.kind {
	case FaultStall:
		f.conn.Stall(f.dir)
	case FaultDelay:
		f.conn.Delay(f.dir, f.delay)
	case FaultReset:
		f.conn.Reset()
	case FaultClose:
		f.conn.Close()
	case FaultBlackHole:
		f.conn.BlackHole(f.dir)
	}
}

// lift ends an applied fault: unstall, no delay, the reset that follows a
// black hole, the server's resume. Lifting twice has no effect.
func (in *injector) lift(f *fault) {
	if !f.applied || f.lifted || f.dur == 0 {
		return
	}
	f.lifted = true
	in.note(f, true)
	switch f.kind {
	case FaultStall:
		f.conn.Unstall(f.dir)
	case FaultDelay:
		f.conn.Delay(f.dir, 0)
	case FaultBlackHole:
		f.conn.Reset()
	case FaultPartition:
		for _, c := range f.conns {
			c.Reset()
		}
	case FaultPause:
		if in.paused--; in.paused == 0 {
			in.s.srv.resume(in.s.proxy)
		}
	case FaultDropPush, FaultDelayPush:
		f.over.Store(true)
		if f.gate != nil {
			close(f.gate)
		}
	}
}

// liftAll lifts every fault still applied, then unstalls every connection
// and resumes the server, so that the end phase runs on a healthy network.
func (in *injector) liftAll() {
	for _, f := range in.s.plan.faults {
		in.lift(f)
	}
	in.s.proxy.UnstallAll(faultproxy.Both)
}
