package valkeygo

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/valkey-io/valkey-go"
)

// Closed implements conn.Client. valkey-go leaves dedicated clients
// working after its Close and has no call that tells a closed client
// without a command; but a closed client answers every command at once
// from its failed connection, sending nothing: with ErrClosing, or with
// the error its last failed dial or handshake left there (valkey-go keeps
// it on the node's dead connection). So Closed asks: when the last probe
// is older than probeGap, a goroutine sends two PINGs through the user's
// client, and if both fail with the same such error — ErrClosing, or the
// identical *net.OpError or *valkey.ValkeyError value, which an open
// client never repeats (each of its dials fails afresh) — the client is
// closed, for good. Closed waits probeWait for the answer (a closed
// client's is immediate); a later call reads a slower one. The PINGs'
// ctx cannot end: valkey-go runs them as the user's own commands of such
// a ctx, without moving the user's connection to its background mode or
// cutting a dial the user's commands share. A call made within probeGap of
// the client's close may still be sent; every later one is refused.
func (c *Client) Closed() error {
	if p := c.closedBy.Load(); p != nil {
		return *p
	}
	now, last := time.Since(probeEpoch).Nanoseconds(), c.lastProbe.Load()
	if last != 0 && now-last < int64(probeGap) || !c.lastProbe.CompareAndSwap(last, now) ||
		!c.probing.CompareAndSwap(false, true) {
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer c.probing.Store(false)
		c.probe()
	}()
	t := time.NewTimer(probeWait)
	defer t.Stop()
	select {
	case <-done:
		if p := c.closedBy.Load(); p != nil {
			return *p
		}
	case <-t.C:
	}
	return nil
}

// probe sends the two PINGs of Closed and records a close.
func (c *Client) probe() {
	first := c.ping()
	if !closedAnswer(first) {
		return
	}
	second := c.ping()
	if errors.Is(first, valkey.ErrClosing) && errors.Is(second, valkey.ErrClosing) || samePointer(first, second) {
		c.closedBy.CompareAndSwap(nil, &first)
	}
}

// ping sends a PING through the user's client and returns its transport
// error (nil for any reply). Its key pins it to one node of a cluster.
func (c *Client) ping() error {
	cmd := c.client.B().Arbitrary("PING").Keys(probeKey).Build()
	return c.client.Do(context.Background(), cmd).NonValkeyError()
}

// closedAnswer reports whether err is what a closed client may answer (see
// Closed): ErrClosing, a dial error or a handshake's error reply, not
// wrapped — so that comparing two of them compares pointers.
func closedAnswer(err error) bool {
	switch err.(type) {
	case *net.OpError, *valkey.ValkeyError:
		return true
	}
	return errors.Is(err, valkey.ErrClosing)
}

// samePointer reports whether a, a dial error or an error reply, is the
// very value b is.
func samePointer(a, b error) bool {
	switch a.(type) {
	case *net.OpError, *valkey.ValkeyError:
		return a == b // pointers: no comparison of uncomparable values
	}
	return false
}

// probeKey is the PING's argument; probeGap bounds how often Closed asks;
// probeWait how long it waits for the answer.
const (
	probeKey  = "respire-go"
	probeGap  = 10 * time.Millisecond
	probeWait = time.Millisecond
)

var probeEpoch = time.Now()
