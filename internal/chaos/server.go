package chaos

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/sim"
)

// simPassword is the password of the sim nodes the schedules start.
const simPassword = "pw"

// server is the node a schedule runs against: an in-process sim node or a
// real redis-server. direct is a plain rueidis client connected to it, not
// through the proxy: the outsider's, and on a real server the admin's
// (CLIENT LIST/KILL, GET, PTTL).
type server struct {
	sim      *sim.Server // nil on a real server
	addr     string
	password string
	direct   rueidis.Client
}

// startServer starts the schedule's sim node, or connects to the real one
// and deletes the schedule's own keys (other schedules may run on it at the
// same time, so nothing else is touched).
func startServer(opt Options, p plan) (*server, error) {
	s := &server{addr: opt.Target, password: opt.Password}
	if opt.Target == "" {
		node, err := sim.Start(context.Background(), sim.Config{Profile: p.profile, Password: simPassword, History: true})
		if err != nil {
			return nil, fmt.Errorf("sim.Start: %w", err)
		}
		s.sim, s.addr, s.password = node, node.Addr(), simPassword
	}
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.addr}, Password: s.password})
	if err != nil {
		s.close()
		return nil, fmt.Errorf("direct client to %s: %w", s.addr, err)
	}
	s.direct = client
	if s.sim == nil {
		ctx, cancel := context.WithTimeout(context.Background(), normalTimeout)
		defer cancel()
		if err := client.Do(ctx, client.B().Del().Key(slices.Concat(p.keys, p.prim.keys())...).Build()).Error(); err != nil {
			s.close()
			return nil, fmt.Errorf("DEL of the schedule's keys: %w", err)
		}
	}
	return s, nil
}

// close closes the direct client and the sim node.
func (s *server) close() {
	if s.direct != nil {
		s.direct.Close()
	}
	if s.sim != nil {
		_ = s.sim.Close()
	}
}

// pause holds the server: a sim node stops executing; a real server, which
// we may not pause (other schedules share it), stops receiving anything
// through this schedule's proxy.
func (s *server) pause(proxy *faultproxy.Proxy) {
	if s.sim != nil {
		s.sim.Pause()
		return
	}
	proxy.StallAll(faultproxy.ToServer)
}

// injectPush arms a push fault on a sim node until it is lifted; false on
// a real server, which has no such fault (the fault is then skipped).
func (s *server) injectPush(f *fault) bool {
	if s.sim == nil {
		return false
	}
	over := new(atomic.Bool)
	sf := sim.Fault{Kind: sim.DropPush, Key: f.key, Times: math.MaxInt32, Match: func([]string) bool { return !over.Load() }}
	if f.kind == FaultDelayPush {
		f.gate = make(chan struct{})
		sf.Kind, sf.Gate = sim.DelayPush, f.gate
	}
	f.over = over
	s.sim.Inject(sf)
	return true
}

// resume ends pause.
func (s *server) resume(proxy *faultproxy.Proxy) {
	if s.sim != nil {
		s.sim.Resume()
		return
	}
	proxy.UnstallAll(faultproxy.ToServer)
}

// killProxied closes, server-side, the target-th (modulo) of the server's
// clients that are connected through the proxy, as CLIENT KILL ID does, and
// returns its id.
func (s *server) killProxied(proxy *faultproxy.Proxy, target int) (int64, bool) {
	via := map[string]bool{}
	for _, c := range proxy.Conns() {
		via[c.UpstreamLocalAddr()] = true
	}
	list, err := s.clientList()
	if err != nil {
		return 0, false
	}
	var ids []int64
	for _, line := range strings.Split(list, "\n") {
		id, addr := clientField(line, "id"), clientField(line, "addr")
		if n, err := strconv.ParseInt(id, 10, 64); err == nil && via[addr] {
			ids = append(ids, n)
		}
	}
	if len(ids) == 0 {
		return 0, false
	}
	id := ids[target%len(ids)]
	if s.sim != nil {
		return id, s.sim.KillClient(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), normalTimeout)
	defer cancel()
	cmd := s.direct.B().Arbitrary("CLIENT", "KILL").Args("ID", strconv.FormatInt(id, 10)).Build()
	return id, s.direct.Do(ctx, cmd).Error() == nil
}

// clientList returns CLIENT LIST, one client per line.
func (s *server) clientList() (string, error) {
	if s.sim != nil {
		return bulkText(s.sim.Exec("CLIENT", "LIST")), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), normalTimeout)
	defer cancel()
	return s.direct.Do(ctx, s.direct.B().ClientList().Build()).ToString()
}

// clientField returns the value of name= in one CLIENT LIST line.
func clientField(line, name string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, name+"="); ok {
			return v
		}
	}
	return ""
}

// keyState is a lock key as the server holds it at the end of a schedule.
type keyState struct {
	value string
	found bool
	pttl  int64 // milliseconds; -2 when missing
}

// read returns key's value and PTTL.
func (s *server) read(key string) (keyState, error) {
	if s.sim != nil {
		value := s.sim.Exec("GET", key)
		pttl, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(s.sim.Exec("PTTL", key), ":"), "\r\n"), 10, 64)
		return keyState{value: bulkText(value), found: !strings.HasPrefix(value, "$-1"), pttl: pttl}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), normalTimeout)
	defer cancel()
	replies := s.direct.DoMulti(ctx, s.direct.B().Get().Key(key).Build(), s.direct.B().Pttl().Key(key).Build())
	value, err := replies[0].ToString()
	if rueidis.IsRedisNil(err) {
		return keyState{pttl: -2}, nil
	}
	if err != nil {
		return keyState{}, err
	}
	pttl, err := replies[1].AsInt64()
	return keyState{value: value, found: true, pttl: pttl}, err
}

// history returns the sim node's execution history (nil on a real server).
func (s *server) history() []sim.Execution {
	if s.sim == nil {
		return nil
	}
	return s.sim.History()
}

// bulkText returns the text of a RESP2 bulk-string reply ("" for nil).
func bulkText(reply string) string {
	head, body, ok := strings.Cut(reply, "\r\n")
	if !ok || !strings.HasPrefix(head, "$") || head == "$-1" {
		return ""
	}
	return strings.TrimSuffix(body, "\r\n")
}

// sleepUntil sleeps until t.
func sleepUntil(t time.Time) {
	sleepFor(time.Until(t))
}
