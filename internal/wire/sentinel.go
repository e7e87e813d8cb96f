package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/respire-go/respire/conn"
)

// sentinelRefresh is how old the master's address may be before Nodes
// asks the Sentinels again (in the background, answering with the one it
// has meanwhile).
const sentinelRefresh = 100 * time.Millisecond

// sentinelState is what the client knows of the Sentinels' master.
type sentinelState struct {
	mu       sync.Mutex
	master   string
	at       time.Time
	asking   bool
	sentinel *pconn // a connection to a Sentinel, reused
	watcher  *pconn // a Sentinel connection subscribed to +switch-master
	stopped  bool   // CloseSentinel ran: no new watcher
}

// master returns the master's address, asking the Sentinels the first
// time (blocking) and when the answer is older than sentinelRefresh (in
// the background).
func (c *Client) master(ctx context.Context) (string, error) {
	s := &c.sentinel
	s.mu.Lock()
	master, fresh := s.master, time.Since(s.at) < sentinelRefresh
	start := master != "" && !fresh && !s.asking
	s.asking = s.asking || start
	s.mu.Unlock()
	switch {
	case master == "":
		defer c.watchSwitches()
		return c.askMaster(ctx)
	case start:
		go c.watchSwitches()
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), c.o.DialTimeout)
			defer cancel()
			_, _ = c.askMaster(ctx)
		}()
	}
	return master, nil
}

// askMaster asks the Sentinels, one after the other, for the master's
// address and records it.
func (c *Client) askMaster(ctx context.Context) (string, error) {
	s := &c.sentinel
	defer func() {
		s.mu.Lock()
		s.asking = false
		s.mu.Unlock()
	}()
	var last error
	for _, addr := range c.o.Addrs {
		master, err := c.askSentinel(ctx, addr)
		if err != nil {
			last = err
			continue
		}
		s.mu.Lock()
		s.master, s.at = master, time.Now()
		s.mu.Unlock()
		return master, nil
	}
	return "", fmt.Errorf("wire: no Sentinel named the master %q: %w", c.o.MasterName, last)
}

// askSentinel asks the Sentinel at addr (on a connection kept for the
// next time).
func (c *Client) askSentinel(ctx context.Context, addr string) (string, error) {
	s := &c.sentinel
	s.mu.Lock()
	pc := s.sentinel
	s.mu.Unlock()
	if pc == nil || pc.Err() != nil || pc.nc.RemoteAddr().String() != addr {
		var err error
		if pc, err = c.dialAs(ctx, addr, nil, "", c.o.SentinelPassword); err != nil {
			return "", err
		}
		s.mu.Lock()
		old := s.sentinel
		s.sentinel = pc
		s.mu.Unlock()
		if old != nil {
			go old.Close()
		}
	}
	var reply [1]conn.Reply
	cmd := conn.Command{Args: []string{"SENTINEL", "GET-MASTER-ADDR-BY-NAME", c.o.MasterName}, Key: -1}
	if err := pc.Do(ctx, []conn.Command{cmd}, reply[:]); err != nil {
		return "", err
	}
	if r := reply[0]; r.Kind == conn.ReplyArray && len(r.Array) == 2 {
		return net.JoinHostPort(r.Array[0].Text, r.Array[1].Text), nil
	}
	return "", fmt.Errorf("wire: SENTINEL GET-MASTER-ADDR-BY-NAME %s answered %+v", c.o.MasterName, reply[0])
}

// errNotMaster: a dialled node is not the master (any more).
var errNotMaster = errors.New("the node is not the master")

// checkMaster refuses a connection to a node whose ROLE is not master.
func (c *Client) checkMaster(ctx context.Context, pc *pconn, node string) error {
	var reply [1]conn.Reply
	if err := pc.Do(ctx, []conn.Command{{Args: []string{"ROLE"}, Key: -1}}, reply[:]); err != nil {
		return err
	}
	if r := reply[0]; r.Kind != conn.ReplyArray || len(r.Array) == 0 || r.Array[0].Text != "master" {
		return fmt.Errorf("%w: %s: %w", conn.ErrUnknownNode, node, errNotMaster)
	}
	return nil
}

// CloseSentinel closes the kept Sentinel connection (tests' clean-up).
func (c *Client) CloseSentinel() {
	s := &c.sentinel
	s.mu.Lock()
	pc, w := s.sentinel, s.watcher
	s.sentinel, s.watcher, s.stopped = nil, nil, true
	s.mu.Unlock()
	for _, x := range []*pconn{pc, w} {
		if x != nil {
			x.Close()
		}
	}
}

// watchSwitches subscribes, on a Sentinel connection of its own, to
// +switch-master: the master's new address is taken the moment a Sentinel
// announces it (the 100 ms refresh only covers a missed message). A
// watcher that ends is replaced by the next call of Nodes.
func (c *Client) watchSwitches() {
	s := &c.sentinel
	s.mu.Lock()
	if s.stopped || (s.watcher != nil && s.watcher.Err() == nil) {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), c.o.DialTimeout)
	defer cancel()
	for _, addr := range c.o.Addrs {
		w, err := c.dialAs(ctx, addr, nil, "", c.o.SentinelPassword)
		if err != nil {
			continue
		}
		w.message = c.switched
		if w.send([]conn.Command{{Args: []string{"SUBSCRIBE", "+switch-master"}, Key: -1}}) != nil {
			w.Close()
			continue
		}
		s.mu.Lock()
		old, stopped := s.watcher, s.stopped
		if !stopped {
			s.watcher = w
		}
		s.mu.Unlock()
		if old != nil {
			go old.Close()
		}
		if stopped {
			w.Close()
		}
		return
	}
}

// switched takes a +switch-master message: "<name> <old ip> <old port>
// <new ip> <new port>".
func (c *Client) switched(channel, payload string) {
	f := strings.Fields(payload)
	if channel != "+switch-master" || len(f) != 5 || f[0] != c.o.MasterName {
		return
	}
	s := &c.sentinel
	s.mu.Lock()
	s.master, s.at = net.JoinHostPort(f[3], f[4]), time.Now()
	s.mu.Unlock()
}
