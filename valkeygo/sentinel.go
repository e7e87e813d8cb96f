package valkeygo

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/respire-go/respire/lease"
)

// ErrNotSentinel is NewSentinel's error for a client that is not a Sentinel
// client or an option that names no master set or no sentinel.
var ErrNotSentinel = errors.New("valkeygo: NewSentinel needs a Sentinel client and the option it was made with (Sentinel.MasterSet and the sentinels in InitAddress)")

// NewSentinel is New for a Sentinel client made with valkey.NewClient(option)
// (rule SentinelAnnouncementSwitches). valkey-go learns a new primary from the
// one sentinel it subscribes to, which may hear of a failover seconds after
// the sentinel that ran it, and until then it renews on the old primary. So
// the locks also subscribe to +switch-master on every sentinel of
// option.InitAddress (a connection to each, with option.Sentinel's
// credentials, dialer and TLS) and follow the first one that announces a new
// primary: they name it from then on (not valkey-go's view, which may lag or
// flap back while a sentinel it asks has not heard of the switch), and dial
// it with option's own settings while valkey-go does not know it yet. List every
// sentinel in option.InitAddress. Locks.Close closes these connections. It
// fails with ErrNilClient or ErrNotSentinel, and with lease's errors for a
// bad option, before anything is sent to a data node.
func NewSentinel(client valkey.Client, option valkey.ClientOption, opts ...lease.Option) (*lease.Locks, error) {
	if client == nil {
		return nil, ErrNilClient
	}
	if client.Mode() != valkey.ClientModeSentinel || option.Sentinel.MasterSet == "" || len(option.InitAddress) == 0 {
		return nil, ErrNotSentinel
	}
	c, err := NewClient(client)
	if err != nil {
		return nil, err
	}
	c.watch = watchSentinels(option)
	locks, err := lease.New(c, opts...)
	if err != nil {
		c.watch.release()
		return nil, err
	}
	return locks, nil
}

// sentinelWatch follows +switch-master on every sentinel of a master set.
type sentinelWatch struct {
	option valkey.ClientOption // the user's: sentinels, master set, credentials
	cancel context.CancelFunc
	done   sync.WaitGroup
	once   sync.Once

	mu       sync.Mutex
	primary  string        // the primary the last announcement named; "" before one
	direct   valkey.Client // a client of primary, made with option
	released bool          // release ran: no client is made any more
}

// watchSentinels subscribes to +switch-master on every sentinel of option,
// each on a goroutine of its own until release.
func watchSentinels(option valkey.ClientOption) *sentinelWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &sentinelWatch{option: option, cancel: cancel}
	for _, addr := range option.InitAddress {
		w.done.Add(1)
		go w.subscribe(ctx, addr)
	}
	return w
}

// resubscribeGap is how long a subscription waits before it dials its
// sentinel again after the sentinel could not be reached.
const resubscribeGap = time.Second

// subscribe listens to addr's announcements until ctx ends (valkey-go
// re-subscribes by itself after a broken connection).
func (w *sentinelWatch) subscribe(ctx context.Context, addr string) {
	defer w.done.Done()
	o := w.option
	o.InitAddress, o.ForceSingleClient, o.DisableCache = []string{addr}, true, true
	o.Username, o.Password, o.ClientName = o.Sentinel.Username, o.Sentinel.Password, o.Sentinel.ClientName
	o.Dialer, o.TLSConfig, o.SelectDB, o.Sentinel = o.Sentinel.Dialer, o.Sentinel.TLSConfig, 0, valkey.SentinelOption{}
	for ctx.Err() == nil {
		if s, err := valkey.NewClient(o); err == nil {
			_ = s.Receive(ctx, s.B().Subscribe().Channel("+switch-master").Build(), func(m valkey.PubSubMessage) {
				w.announced(m.Message)
			})
			s.Close()
		}
		t := time.NewTimer(resubscribeGap)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// announced takes a +switch-master message ("<set> <old ip> <old port>
// <new ip> <new port>") of our master set: its new primary is the primary,
// and a client of it is made at once (see clientOf), so that the engine's
// first dial after the switch does not wait for it.
func (w *sentinelWatch) announced(msg string) {
	f := strings.Fields(msg)
	if len(f) != 5 || f[0] != w.option.Sentinel.MasterSet {
		return
	}
	addr := net.JoinHostPort(f[3], f[4])
	w.mu.Lock()
	var stale valkey.Client
	changed := addr != w.primary
	if changed {
		w.primary, stale, w.direct = addr, w.direct, nil
	}
	w.mu.Unlock()
	if stale != nil {
		stale.Close() // its dedicated connections live on until the engine closes them
	}
	if changed {
		_, _ = w.clientOf(addr)
	}
}

// named returns the primary the last announcement named ("" before one).
func (w *sentinelWatch) named() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.primary
}

// clientOf returns a client of node, made with the user's option, when node
// is the announced primary; nil otherwise. The dial runs without the lock
// (Nodes never waits for it); of two racing dials, one client is kept.
func (w *sentinelWatch) clientOf(node string) (valkey.Client, error) {
	w.mu.Lock()
	direct, current := w.direct, node == w.primary && !w.released
	w.mu.Unlock()
	if !current {
		return nil, nil
	}
	if direct != nil {
		return direct, nil
	}
	o := w.option
	o.InitAddress, o.ForceSingleClient, o.Sentinel = []string{node}, true, valkey.SentinelOption{}
	o.SendToReplicas, o.ReplicaOnly = nil, false
	made, err := valkey.NewClient(o)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	if node == w.primary && !w.released && w.direct == nil {
		w.direct, made = made, nil
	}
	direct = w.direct
	if node != w.primary {
		direct = nil
	}
	w.mu.Unlock()
	if made != nil {
		made.Close()
	}
	return direct, nil
}

// release ends the subscriptions and closes the client of the announced
// primary; once.
func (w *sentinelWatch) release() {
	w.once.Do(func() {
		w.cancel()
		w.done.Wait()
		w.mu.Lock()
		direct := w.direct
		w.direct, w.released = nil, true
		w.mu.Unlock()
		if direct != nil {
			direct.Close()
		}
	})
}
