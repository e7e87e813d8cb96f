package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
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
		return c.askMaster(ctx)
	case start:
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
	pc := s.sentinel
	s.sentinel = nil
	s.mu.Unlock()
	if pc != nil {
		pc.Close()
	}
}
