package sim

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Engine is the in-process core of one simulated node: keyspace, clients,
// ACL users, script cache, command log, client-side tracking state and the
// per-client queues of messages that are not replies (TakePushes). It has
// no sockets, starts no goroutines and reads time only from Config.Clock;
// every method is safe for concurrent use (one mutex) and none blocks
// except WaitFor. Obtain one with NewEngine; the zero value is not usable.
type Engine struct {
	mu      sync.Mutex
	spec    profileSpec
	profile Profile
	clock   Clock
	port    int // reported by INFO and CLIENT INFO

	dbs     [16]map[string]*value
	clients map[int64]*client
	killed  map[int64]bool
	victims []int64 // killed since the network hook last ran
	nextID  int64
	admin   *client
	users   map[string]*user
	scripts map[string]string // sha1 -> source
	vm      *luaVM            // created on first script

	log     []Entry
	logSeq  int64
	logWake chan struct{} // closed and replaced on every log append

	keepHistory bool
	history     []Execution

	onKill  func(id int64) // network hook: close the victim's socket
	cluster *clusterView   // nil in standalone mode

	// Client-side tracking and out-of-band messages (tracking.go, push.go).
	trackTable map[string]map[int64]bool // key -> clients that may cache it
	bcast      map[string]*bcastState    // BCAST prefix -> listeners, changed keys
	bcastDirty bool                      // some bcastState holds keys to send
	trackers   int                       // clients with tracking on
	cur        *client                   // client whose command is running
	pending    []pendingInvalidation     // cur's own invalidations, sent after its reply
	pushes     map[int64][][]byte        // client -> messages not yet taken
	pushed     []int64                   // clients whose queue filled since the hook last ran
	onPush     func(id int64)            // network hook: write the client's pushes
	nextExpiry int64                     // no key expires before (unix ms); 0: no TTL set
	scriptAt   int64                     // a running script's start (unix ms), keys expire by it; 0: none
	pf         *pushFaults               // a Server's DropPush/DelayPush hook (push.go); nil: none
}

// client is one connection's session state.
type client struct {
	id      int64
	addr    string
	laddr   string
	name    string
	libName string
	libVer  string
	proto   int
	user    string
	authed  bool
	db      int
	asking  bool
	admin   bool
	created time.Time
	multi   [][]string // queued commands while in MULTI; nil outside
	inMulti bool
	dirty   bool // a command failed while queueing

	trk      tracking // CLIENT TRACKING state
	channels []string // SUBSCRIBEd channels, in subscription order
}

// value is one key's content: a string, a list (isList), a sorted set
// (zset not nil) or a hash (isHash).
type value struct {
	str      string
	list     []string
	isList   bool
	zset     map[string]float64 // sorted set: member -> score; never empty
	isHash   bool
	hash     []hashField // hash fields in insertion order; never empty once written
	expireAt int64       // unix milliseconds; 0 means no TTL
}

// notString reports whether the value is of another type than string.
func (v *value) notString() bool { return v.isList || v.zset != nil || v.isHash }

// NewEngine returns an engine for cfg's profile (default Redis70) and
// clock (default real time). It panics on an unknown profile (Start
// returns an error instead). The "default" user has all permissions and
// cfg.Password ("" means no AUTH needed).
func NewEngine(cfg Config) *Engine {
	if cfg.Profile == "" {
		cfg.Profile = Redis70
	}
	spec, err := specFor(cfg.Profile)
	if err != nil {
		panic(err)
	}
	e := &Engine{
		spec: spec, profile: cfg.Profile, clock: cfg.Clock,
		clients: map[int64]*client{}, killed: map[int64]bool{},
		users: map[string]*user{}, scripts: map[string]string{},
		logWake: make(chan struct{}), keepHistory: cfg.History,
	}
	if e.clock == nil {
		e.clock = realClock{}
	}
	for i := range e.dbs {
		e.dbs[i] = map[string]*value{}
	}
	e.users["default"] = defaultUser(cfg.Password)
	e.admin = &client{id: 0, proto: 2, user: "default", authed: true, admin: true}
	return e
}

// Profile reports the engine's current profile.
func (e *Engine) Profile() Profile {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.profile
}

// NewClient registers a connection from addr (reported by CLIENT INFO and
// matched by CLIENT KILL ADDR) and returns its CLIENT ID. IDs start at 1
// and increase; they are never reused.
func (e *Engine) NewClient(addr string) int64 {
	return e.newClient(addr, "")
}

func (e *Engine) newClient(addr, laddr string) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nextID++
	u := e.users["default"]
	c := &client{id: e.nextID, addr: addr, laddr: laddr, proto: 2, user: "default",
		authed: u.nopass && u.enabled, created: e.clock.Now()}
	e.clients[c.id] = c
	return c.id
}

// CloseClient forgets a connection (the peer went away). Unknown ids are
// ignored.
func (e *Engine) CloseClient(id int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.clients[id]; c != nil {
		e.forget(c)
	}
	delete(e.clients, id)
	delete(e.killed, id)
	delete(e.pushes, id)
}

// Killed reports whether CLIENT KILL (or KillClient/Failover) hit the
// client: the network layer must then close its socket and execute nothing
// more for it.
func (e *Engine) Killed(id int64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.killed[id]
}

// Exec logs and executes one command for the client and returns the exact
// reply bytes in the client's protocol (RESP2 until it sent HELLO 3). It
// returns nil when the client is unknown or was killed.
//
// Exec returns the command's reply only. What the command sends out of
// band (tracking invalidations and pub/sub messages, to this client or to
// others) is queued per client, in the order a real server would write
// it, for TakePushes; a client's own invalidations come after its reply,
// as on real servers. Each Exec ends like one event-loop iteration of a
// real server: BCAST invalidations of the keys it changed are queued too.
func (e *Engine) Exec(clientID int64, args ...[]byte) []byte {
	strs := make([]string, len(args))
	for i, a := range args {
		strs[i] = string(a)
	}
	e.Record(clientID, strs)
	return e.execute(clientID, strs, false, true)
}

// Record appends a command to the log without executing it (the network
// layer records on arrival, before pauses and faults).
func (e *Engine) Record(clientID int64, args []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.logSeq++
	e.log = append(e.log, Entry{Seq: e.logSeq, ClientID: clientID, Args: append([]string(nil), args...)})
	close(e.logWake)
	e.logWake = make(chan struct{})
}

// execute runs args for the client without logging and returns its reply.
// With stream set (the network layer) it returns everything the connection
// must write now, in order: the messages queued for it before and during
// the command, the reply, then its own invalidations. endBatch ends an
// event-loop iteration: the BCAST invalidations gathered so far are queued
// (a real server sends them before sleeping, after the pipelined commands
// it read).
func (e *Engine) execute(clientID int64, args []string, stream, endBatch bool) []byte {
	e.mu.Lock()
	c := e.clients[clientID]
	if clientID == 0 {
		c = e.admin
	}
	if c == nil || e.killed[clientID] || len(args) == 0 {
		e.mu.Unlock()
		return nil
	}
	e.cur = c
	r := e.dispatch(c, args)
	e.cur = nil
	e.afterCommand(c, args)
	var out []byte
	if stream {
		out = e.takeAll(c.id)
	}
	start := len(out)
	out = r.encode(out, c.proto)
	if e.keepHistory && clientID != 0 {
		e.history = append(e.history, Execution{Seq: int64(len(e.history)) + 1, ClientID: clientID, Addr: c.addr,
			Args: append([]string(nil), args...), Reply: string(out[start:]), At: e.clock.Now()})
	}
	e.sendPending(c)
	if endBatch {
		e.flushBroadcast()
	}
	if stream {
		out = append(out, e.takeAll(c.id)...)
	}
	e.unlockAndCloseVictims(clientID)
	return out
}

// History returns a copy of the commands clients executed, in execution
// order, when Config.History is set (nil otherwise). Safe for concurrent use.
func (e *Engine) History() []Execution {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Execution(nil), e.history...)
}

// unlockAndCloseVictims releases e.mu, then lets the network layer close
// the sockets of clients killed meanwhile, except self (which the caller
// closes after writing its reply), and write the messages queued for
// other clients.
func (e *Engine) unlockAndCloseVictims(self int64) {
	victims, hook := e.victims, e.onKill
	e.victims = nil
	var wake []int64
	if e.onPush != nil {
		for _, id := range e.pushed {
			if len(e.pushes[id]) > 0 {
				wake = append(wake, id)
			}
		}
	}
	e.pushed = e.pushed[:0]
	pushHook := e.onPush
	e.mu.Unlock()
	for _, id := range wake {
		pushHook(id)
	}
	if hook == nil {
		return
	}
	for _, id := range victims {
		if id != self {
			hook(id)
		}
	}
}

// AdminExec runs a command as an internal administrator client (no ACL,
// no cluster redirects, not logged) and returns RESP2 reply bytes.
func (e *Engine) AdminExec(args ...string) string {
	return string(e.execute(0, args, false, true))
}

func (e *Engine) now() int64 { return e.clock.Now().UnixMilli() }

// expiryNow is the time keys expire by: the running script's start time
// while a script runs (a real server pretends time is blocked at the
// script's start, so a key live when it started stays live until it
// ends), else now.
func (e *Engine) expiryNow() int64 {
	if e.scriptAt != 0 {
		return e.scriptAt
	}
	return e.now()
}

// lookup returns the live value of key in the client's db, expiring it
// lazily.
func (e *Engine) lookup(c *client, key string) *value {
	db := e.dbs[c.db]
	v := db[key]
	if v != nil && v.expireAt != 0 && e.expiryNow() > v.expireAt {
		delete(db, key)
		e.keyModified(key, 0)
		return nil
	}
	return v
}

// kill marks a client killed; the hook closes its socket after the
// current command.
func (e *Engine) kill(id int64) {
	if c := e.clients[id]; c != nil {
		e.forget(c)
	}
	delete(e.clients, id)
	e.killed[id] = true
	e.victims = append(e.victims, id)
}

// unknownCommand renders the unknown-command error exactly as servers do.
func unknownCommand(args []string) reply {
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		fmt.Fprintf(&b, "'%.*s' ", 128-b.Len(), a)
	}
	name := args[0]
	if len(name) > 128 {
		name = name[:128]
	}
	return errorf("ERR unknown command '%s', with args beginning with: %s", name, b.String())
}

func wrongArity(name string) reply {
	return errorf("ERR wrong number of arguments for '%s' command", name)
}
