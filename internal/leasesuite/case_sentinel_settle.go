package leasesuite

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/internal/leaseinternal"
	"github.com/respire-go/respire/internal/wire"
	"github.com/respire-go/respire/lease"
)

// TestSentinelAcquisitionsNeedReplicaAcks_ATryALostReplyLeftIsNeverHandedOut:
// on the real Sentinel set, a wire client whose data-node sockets go
// through a fault proxy (the sentinels are dialled directly). A waiting
// Acquire's SET NX reaches the primary and runs, but its reply is lost
// (the proxy drops everything the server sends on that session, then
// resets it): the try's outcome is unknown, so it is settled by a read on
// a fresh session, which finds the key holding the try's token. A read
// proves the key is on the primary, not on its replicas (rule
// SentinelAcquisitionsNeedReplicaAcks): that try is ended, its key deleted
// again, never handed out, and the wait takes the lock with another try,
// whose token is not the one of the lost reply. Without the rule the
// settled try was handed out. The wire client only (its Dial hook carries
// the proxy).
func caseSentinelAcquisitionsNeedReplicaAcks_ATryALostReplyLeftIsNeverHandedOut(t *testing.T, tr Transport) {
	if tr.Name != "wire" {
		t.Skip("the reply is lost through the wire client's Dial hook")
	}
	sentinels, master, password := realSentinel(t)
	old := primaryOf(t, newSentinelClient(t, sentinels, master, password))
	awaitReplicaHealthy(t, sentinels, master, password, old, otherDataNode(t, old))
	proxies := dataNodeProxies{sentinels: sentinels, by: map[string]*faultproxy.Proxy{}}
	t.Cleanup(proxies.close)
	client := wire.New(wire.Options{Addrs: sentinels, MasterName: master, Password: password,
		SentinelPassword: password, Dial: proxies.dial})
	t.Cleanup(client.CloseSentinel)
	locks, err := lease.New(client, lease.WithoutPush())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(locks.Close)
	key := fmt.Sprintf("settle:sentinel:%d", time.Now().UnixNano())
	prime, err := locks.Acquire(ctxT(t), key+":prime", time.Minute, lease.WithWait(sentinelAcquireWait))
	if err != nil {
		t.Fatalf("priming the session: %v", err)
	}
	if _, err := prime.Release(ctxT(t)); err != nil {
		t.Fatalf("priming the session: %v", err)
	}
	engine := leaseinternal.Driver(locks).Transport().(*conn.Engine)
	session, err := engine.SessionForKey(ctxT(t), key)
	if err != nil {
		t.Fatal(err)
	}
	carrier := proxies.connOf(t, session)
	carrier.BlackHole(faultproxy.ToClient)
	type acquired struct {
		lock *lease.Lock
		err  error
	}
	result := make(chan acquired, 1)
	go func() {
		lock, err := locks.Acquire(ctxT(t), key, time.Minute, lease.WithWait(10*time.Second))
		result <- acquired{lock, err}
	}()
	var lost string // the token of the SET whose reply was lost
	eventually(t, "the SET NX ran on the primary", func() bool {
		lost = adminExec(old, password, "GET", key)
		return strings.HasPrefix(lost, "$") && !strings.HasPrefix(lost, "$-1")
	})
	carrier.Reset()
	got := <-result
	if got.err != nil {
		t.Fatalf("Acquire after a lost reply = %v; want the lock, taken by another try", got.err)
	}
	defer func() { _ = got.lock.Close() }()
	now := adminExec(old, password, "GET", key)
	if now == lost {
		t.Fatal("the try a read settled was handed out: the lock holds the token of the SET whose reply was lost")
	}
	if !strings.Contains(now, wireOf(got.lock.Token())) {
		t.Fatalf("the key on the primary = %q; want the returned lock's token", now)
	}
}

// dataNodeProxies puts a fault proxy in front of every data node a wire
// client dials (one per address); sentinels are dialled directly.
type dataNodeProxies struct {
	sentinels []string
	mu        sync.Mutex
	by        map[string]*faultproxy.Proxy
}

func (p *dataNodeProxies) dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	for _, s := range p.sentinels {
		if s == addr {
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	p.mu.Lock()
	proxy := p.by[addr]
	if proxy == nil {
		var err error
		if proxy, err = faultproxy.Start(addr); err != nil {
			p.mu.Unlock()
			return nil, err
		}
		p.by[addr] = proxy
	}
	p.mu.Unlock()
	return d.DialContext(ctx, "tcp", proxy.Addr())
}

// connOf returns the proxied connection that carries session s: the server
// reports the proxy's upstream address as the session's addr=.
func (p *dataNodeProxies) connOf(t *testing.T, s conn.Session) *faultproxy.Conn {
	t.Helper()
	id, ok := s.Identity()
	if !ok {
		t.Fatal("the session has no identity")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, proxy := range p.by {
		for _, c := range proxy.Conns() {
			if c.UpstreamLocalAddr() == id.Addr {
				return c
			}
		}
	}
	t.Fatalf("no proxied connection carries session %s", id.Addr)
	return nil
}

func (p *dataNodeProxies) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, proxy := range p.by {
		proxy.UnstallAll(faultproxy.Both)
		_ = proxy.Close()
	}
}

func init() {
	register(Case{"SentinelAcquisitionsNeedReplicaAcks_ATryALostReplyLeftIsNeverHandedOut",
		caseSentinelAcquisitionsNeedReplicaAcks_ATryALostReplyLeftIsNeverHandedOut})
}
