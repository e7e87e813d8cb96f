package dst

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/respire-go/respire/actor"
	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// process is one simulated client process: its own drifting monotonic
// clock, its tasks, and what production runs — the driver (actor.Driver)
// over the wire engine (conn.Engine: sessions, identity, fences,
// redirects, push watchers, classification) — over a simulated client
// library (simclient.go), whose connections are the only simulated part.
// A paused process handles no events.
type process struct {
	w        *world
	index    int
	name     string
	driftPPM int64
	offset   time.Duration
	paused   bool
	crashed  bool       // crashProcess: paused for good
	rng      *rand.Rand // the driver's tokens and jitter

	engine *conn.Engine
	driver *actor.Driver
	clock  *virtualClock
	spawn  actor.Spawn

	current map[string]*handle // the handle the user works with, per key
	crowd   []*handle          // more acquisitions of mutex keys, beside current (Options.Crowd)
	calls   []*userCall        // pending user calls (cancellable)
	tokens  int

	lastFencingToken map[string]int64 // counter -> last token handed out (MutationReuseFencingToken)

	client   *simClient // the simulated client library under the engine
	open     []*opRun   // operations the engine started and has not ended, in start order
	late     []*opRun   // unreported operations that ended uncertain whose next step may still be written once
	handOffs []handOff  // commands handed to a connection for an operation, not written yet (attribute.go)

	renewedOnce     bool          // the renewer sent a batch (observer.RenewalSent)
	lastRenewalSent time.Duration // the process\'s clock when it last did
}

func newProcess(w *world, index int) *process {
	p := &process{w: w, index: index, name: "p" + strconv.Itoa(index+1), current: map[string]*handle{},
		lastFencingToken: map[string]int64{}}
	if w.opt.DriftPPM > 0 {
		p.driftPPM = w.rng.Int64N(2*w.opt.DriftPPM+1) - w.opt.DriftPPM
	}
	p.offset = w.between(time.Second, 1000*time.Second)
	p.rng = rand.New(rand.NewPCG(w.rng.Uint64(), w.rng.Uint64()))
	p.clock = &virtualClock{w: w, p: p}
	p.spawn = w.spawnFor(p)
	p.client = &simClient{w: w, p: p}
	p.engine = conn.NewEngine(conn.EngineConfig{Client: p.client, Clock: p.clock, Spawn: p.spawn})
	p.engine.SetObserver(&conn.Observer{Op: p.opStarted, Command: p.handedOff})
	p.driver = actor.New(actor.Config{Transport: p.engine, Clock: p.clock, Spawn: p.spawn,
		Jitter: p.rng.Float64, NewToken: func() string { return w.newToken(p) }, Drift: sm.DefaultDrift(),
		CommandTimeout: w.opt.commandTimeout(), Push: !w.opt.WithoutPush, Observer: &observer{w: w, p: p}})
	return p
}

// newToken is the driver's source of owner tokens: unique per schedule and
// a function of the seed. The transcript names each one "tok(p1.3)".
func (w *world) newToken(p *process) string {
	p.tokens++
	label := p.name + "." + strconv.Itoa(p.tokens)
	token := label + "-" + strconv.FormatUint(p.rng.Uint64(), 36)
	w.trace.nameToken(token, label)
	return token
}
