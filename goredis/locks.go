package goredis

import (
	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/lease"
)

// New returns the lease locks over client: a standalone *redis.Client, the
// *redis.Client of redis.NewFailoverClient (Sentinel), or a
// *redis.ClusterClient. It sends nothing; connections open on first use,
// each an EphemeralConn of client (per node the locks' session and its
// fence; with push, a reader and a private listener more). It refuses,
// before anything is sent, a client it cannot keep the guarantees on
// (ErrUnsupportedClient, ErrUnboundedIO) and lease's invalid options. The
// Locks never closes client: call Locks.Close first (once client is
// closed, every call fails with lease.ErrClientClosed, nothing sent).
//
// New leaves client's options as they are. Set MaintNotificationsConfig's
// Mode to maintnotifications.ModeDisabled unless your servers send
// maintenance notifications (Redis < 8, Valkey and package sim do not):
// go-redis v9.23's default, auto, then writes the client's options without
// a lock, a data race inside go-redis once the Locks' connections open
// beside your own commands (docs/compatibility.md; ExampleNew).
func New(client redis.UniversalClient, opts ...lease.Option) (*lease.Locks, error) {
	c, err := newClient(client)
	if err != nil {
		return nil, err
	}
	return lease.New(c, opts...)
}
