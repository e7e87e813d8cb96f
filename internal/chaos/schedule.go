package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// schedule is one running schedule: the server, the proxy in front of it,
// the processes and the outsider.
type schedule struct {
	plan     plan
	srv      *server
	proxy    *faultproxy.Proxy
	procs    []*process
	outsider *outsider

	wire        *wireLog       // the acquisition scripts the processes sent (a real server, Wire transport), else nil
	kaCallbacks sync.WaitGroup // the keep-alive contexts' AfterFunc callbacks
	dialed      sync.Map       // a process's socket's local address -> the process's index
}

// dialer returns the index of the process whose socket has local address
// addr (the proxy's ClientAddr), -1 if none.
func (s *schedule) dialer(addr string) int {
	if p, ok := s.dialed.Load(addr); ok {
		return p.(int)
	}
	return -1
}

// dialFor returns a dial function for process p's client that records the
// local address of every socket it opens.
func (s *schedule) dialFor(p int) Dial {
	return func(ctx context.Context, dst string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", dst)
		if err == nil {
			s.dialed.Store(c.LocalAddr().String(), p)
		}
		return c, err
	}
}

// observation is what a finished schedule hands to the checker.
type observation struct {
	seed      uint64
	start     time.Time
	real      bool
	keys      []string
	holdings  []*holding
	writes    []outsiderWrite
	history   []sim.Execution // nil on a real server
	profile   sim.Profile     // the sim node's profile
	wire      []wireExec      // on a real server with the Wire transport: the read/write lock's scripts as sent and answered
	log       []sim.Entry     // the sim node's arrivals (nil on a real server)
	final     map[string]keyState
	readErr   error // reading the final state failed
	prim      primPlan
	slow      time.Duration   // the scale of the checks' liveness windows (raceSlowdown; 0 means 1)
	lag       time.Duration   // the worst scheduling delay seen while the schedule ran (lagProbe)
	writers   []primWait      // the writer's acquisitions
	permits   []primWait      // the waiting permit acquisitions
	members   map[string]bool // the permits' and read holds' tokens still members of their set at the end, by server time
	failures  []acquireFailure
	events    []faultEvent
	processes int
	stats     Stats
	fences    int
}

// workerRand returns worker w's PCG: seeded from the seed and w only.
func workerRand(seed uint64, w int) *rand.Rand { return rand.New(rand.NewPCG(seed, uint64(w))) }

// setUp starts the server, the proxy, the processes and the outsider's
// client. On error it closes what it had started.
func setUp(opt Options, p plan) (s *schedule, err error) {
	s = &schedule{plan: p}
	defer func() {
		if err != nil {
			s.closeAll()
		}
	}()
	if s.srv, err = startServer(opt, p); err != nil {
		return nil, err
	}
	if s.proxy, err = faultproxy.Start(s.srv.addr); err != nil {
		return nil, fmt.Errorf("fault proxy: %w", err)
	}
	tr := opt.Transport
	if tr.Locks == nil {
		tr = Wire
	}
	if s.srv.sim == nil && tr.Name == Wire.Name {
		// A real server records no executions: the processes' clients log
		// when the read/write lock's scripts were sent and answered.
		s.wire = &wireLog{}
		tr.Locks = wireLocksLogged(s.wire)
	}
	for i := range p.processes {
		var opts []lease.Option
		if p.timeouts[i] > 0 {
			opts = append(opts, lease.WithCommandTimeout(p.timeouts[i]))
		}
		locks, closeClient, err := tr.Locks(s.proxy.Addr(), s.srv.password, s.dialFor(i), opts...)
		if err != nil {
			return nil, fmt.Errorf("process %d (%s): %w", i, tr.Name, err)
		}
		s.procs = append(s.procs, &process{id: i, locks: locks, closeClient: closeClient})
	}
	s.outsider = &outsider{client: s.srv.direct, keys: p.keys, rng: rand.New(rand.NewPCG(p.seed, streamOutsider))}
	return s, nil
}

// closeAll closes every Locks, then every client, the proxy and the
// server; for a schedule whose set-up failed.
func (s *schedule) closeAll() {
	for _, proc := range s.procs {
		proc.locks.Close()
		proc.closeClient()
	}
	if s.proxy != nil {
		_ = s.proxy.Close()
	}
	if s.srv != nil {
		s.srv.close()
	}
}

// run plays the workload, then the end phase, and returns what the checker
// needs. Every goroutine it starts has ended when it returns.
func (s *schedule) run() observation {
	start := time.Now()
	deadline := start.Add(s.plan.workload)
	inj := &injector{s: s, start: start}
	stop, injected := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(injected)
		inj.run(stop)
	}()
	lag := make(chan time.Duration, 1)
	go func() { lag <- lagProbe(stop) }()
	var wg sync.WaitGroup
	wg.Go(func() { s.outsider.run(deadline) })
	workers := make([]*worker, s.plan.workers)
	for i := range workers {
		w := &worker{s: s, id: i, proc: s.procs[i%len(s.procs)], deadline: deadline, rng: workerRand(s.plan.seed, i),
			guardRng: guardRand(s.plan.seed, i)}
		if s.plan.fair {
			w.fairRng = rand.New(rand.NewPCG(s.plan.seed, streamFairWorkers+uint64(i)))
		}
		workers[i] = w
		wg.Go(w.run)
	}
	for i := range s.plan.prim.workers {
		w := &worker{s: s, id: i, proc: s.procs[(i+1)%len(s.procs)], deadline: deadline,
			rng: rand.New(rand.NewPCG(s.plan.seed, streamPrimWorkers+uint64(i)))}
		workers = append(workers, w)
		wg.Go(w.runPrim)
	}
	sleepUntil(deadline)
	close(stop)
	<-injected
	inj.liftAll()
	wg.Wait()
	obs := observation{seed: s.plan.seed, start: start, real: s.srv.sim == nil, keys: s.plan.keys,
		writes: s.outsider.writes, events: inj.events, processes: len(s.procs), prim: s.plan.prim,
		slow: raceSlowdown, profile: s.plan.profile, lag: <-lag}
	obs.stats.Add(s.outsider.stats)
	obs.stats.Faults = inj.applied
	for _, w := range workers {
		obs.holdings = append(obs.holdings, w.holdings...)
		obs.failures = append(obs.failures, w.failures...)
		obs.writers = append(obs.writers, w.writerWaits...)
		obs.permits = append(obs.permits, w.permitWaits...)
		obs.stats.Add(w.stats)
	}
	s.finish(inj, obs.holdings, &obs.stats)
	obs.final, obs.readErr = s.readFinal()
	if obs.readErr == nil {
		obs.members, obs.readErr = s.readMembers(obs.holdings)
	}
	obs.history = s.srv.history()
	if s.wire != nil {
		obs.wire = s.wire.all()
	}
	if s.srv.sim != nil {
		obs.log = s.srv.sim.Log()
	}
	obs.fences = countFences(obs.history)
	s.srv.close()
	return obs
}

// finish closes every handle (a no-op for those already released), every
// Locks (which waits for fences and clean-ups), the clients and the proxy,
// and waits for the keep-alive callbacks.
func (s *schedule) finish(inj *injector, holdings []*holding, stats *Stats) {
	for _, h := range holdings {
		h.closeAtEnd(stats)
	}
	inj.closers.Wait() // the mid-flight Locks.Close calls
	var wg sync.WaitGroup
	for _, proc := range s.procs {
		wg.Go(proc.locks.Close)
	}
	wg.Wait()
	for _, h := range holdings {
		if h.stopKA != nil && h.stopKA() {
			s.kaCallbacks.Done() // never cancelled: its callback will not run
		}
	}
	s.kaCallbacks.Wait()
	for _, h := range holdings {
		if h.keepAliveLost() {
			stats.KeepAliveLost++
		}
	}
	for _, proc := range s.procs {
		stats.HandOvers += leaseinternal.Driver(proc.locks).PushStats().HandOvers
		proc.closeClient()
	}
	_ = s.proxy.Close()
}

// scaled is a liveness window d of the checks, scaled for a slow build
// (raceSlowdown) and widened by lagWakeups times the worst scheduling delay
// seen while the schedule ran: what must show on the server within the
// window takes a few wake-ups of the client (a retry's timer, the send, the
// reply's read), each of which a loaded machine may delay that long.
func (o observation) scaled(d time.Duration) time.Duration {
	if o.slow > 1 {
		d *= o.slow
	}
	return d + lagWakeups*o.lag
}

// lagWakeups is how many delayed wake-ups a liveness window allows for.
const lagWakeups = 4

// lagProbe sleeps a millisecond at a time until stop is closed and returns
// the longest a sleep overran: how late this process's goroutines were
// woken while the schedule ran (about a millisecond on an idle machine;
// hundreds at load 30).
func lagProbe(stop <-chan struct{}) time.Duration {
	const nap = time.Millisecond
	var worst time.Duration
	for {
		select {
		case <-stop:
			return worst
		default:
		}
		before := time.Now()
		time.Sleep(nap)
		worst = max(worst, time.Since(before)-nap)
	}
}

// readFinal reads every lock key's value and PTTL.
func (s *schedule) readFinal() (map[string]keyState, error) {
	final := map[string]keyState{}
	for _, key := range append(slices.Clone(s.plan.keys), writerKeyOf(s.plan.prim)) {
		st, err := s.srv.read(key)
		if err != nil {
			return final, fmt.Errorf("reading %s: %w", key, err)
		}
		final[key] = st
	}
	return final, nil
}
