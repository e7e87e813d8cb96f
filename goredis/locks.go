package goredis

import (
	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// New returns the lease locks over client: a standalone *redis.Client, the
// *redis.Client of redis.NewFailoverClient (Sentinel), or a
// *redis.ClusterClient. It sends nothing: connections open on first use,
// each an EphemeralConn of client (two per node: the locks' session and
// its fence; with push, a reader and a listener more). It refuses, before
// anything is sent, a client it cannot keep the guarantees on
// (ErrUnsupportedClient, ErrUnboundedIO; see docs/compatibility.md,
// "go-redis") and lease's invalid options. The Locks never closes client:
// call Locks.Close before closing it (a closed client fails every later
// call at once with lease.ErrClientClosed, nothing sent).
func New(client redis.UniversalClient, opts ...lease.Option) (*lease.Locks, error) {
	c, err := newClient(client)
	if err != nil {
		return nil, err
	}
	return lease.NewTransport(conn.NewEngine(conn.EngineConfig{Client: c}), opts...)
}
