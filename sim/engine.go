package sim

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Engine is the in-process core of one simulated node: keyspace, clients,
// ACL users, script cache and command log. It has no sockets and starts no
// goroutines; every method is safe for concurrent use (one mutex) and none
// blocks except WaitFor. Obtain one with NewEngine; the zero value is not
// usable.
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
}

// value is one key's content.
type value struct {
	str      string
	list     []string
	isList   bool
	expireAt int64 // unix milliseconds; 0 means no TTL
}

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
	delete(e.clients, id)
	delete(e.killed, id)
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
func (e *Engine) Exec(clientID int64, args ...[]byte) []byte {
	strs := make([]string, len(args))
	for i, a := range args {
		strs[i] = string(a)
	}
	e.Record(clientID, strs)
	return e.execute(clientID, strs)
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

// execute runs args for the client without logging.
func (e *Engine) execute(clientID int64, args []string) []byte {
	e.mu.Lock()
	c := e.clients[clientID]
	if clientID == 0 {
		c = e.admin
	}
	if c == nil || e.killed[clientID] || len(args) == 0 {
		e.mu.Unlock()
		return nil
	}
	r := e.dispatch(c, args)
	out := r.encode(nil, c.proto)
	if e.keepHistory && clientID != 0 {
		e.history = append(e.history, Execution{Seq: int64(len(e.history)) + 1, ClientID: clientID, Addr: c.addr,
			Args: append([]string(nil), args...), Reply: string(out), At: e.clock.Now()})
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
// closes after writing its reply).
func (e *Engine) unlockAndCloseVictims(self int64) {
	victims, hook := e.victims, e.onKill
	e.victims = nil
	e.mu.Unlock()
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
	return string(e.execute(0, args))
}

func (e *Engine) now() int64 { return e.clock.Now().UnixMilli() }

// lookup returns the live value of key in the client's db, expiring it
// lazily.
func (e *Engine) lookup(c *client, key string) *value {
	db := e.dbs[c.db]
	v := db[key]
	if v != nil && v.expireAt != 0 && e.now() > v.expireAt {
		delete(db, key)
		return nil
	}
	return v
}

// kill marks a client killed; the hook closes its socket after the
// current command.
func (e *Engine) kill(id int64) {
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
