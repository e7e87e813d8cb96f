//go:build !goredisadapter

package goredis

import (
	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/lease"
)

// New returns the lease locks over client (see NewTransport for the
// clients it takes and what it needs from their options). It sends
// nothing; closing the Locks closes the transport, never the client.
// Close the Locks before the client: the push watchers' connections come
// from private clients built from client's options, and they stay open
// until Locks.Close, even after client is closed.
func New(client redis.UniversalClient, opts ...lease.Option) (*lease.Locks, error) {
	t, err := NewTransport(client)
	if err != nil {
		return nil, err
	}
	locks, err := lease.NewTransport(t, opts...)
	if err != nil {
		t.Close()
		return nil, err
	}
	return locks, nil
}
