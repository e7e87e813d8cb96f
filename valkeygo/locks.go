package valkeygo

import (
	"errors"

	"github.com/valkey-io/valkey-go"

	"github.com/respire-go/respire/lease"
)

// ErrNilClient is New's error for a nil client.
var ErrNilClient = errors.New("valkeygo: nil valkey-go client")

// New returns the lease locks over client. It sends nothing: connections
// open on first use — per node one session, one fence connection and, with
// push, one tracking watcher, each a dedicated client taken from client's
// pool. Locks does not take ownership of client: call Locks.Close before
// closing client. It fails with ErrNilClient for a nil client, with
// ErrStandaloneReplicas for a standalone client with replicas, and with
// lease's errors for a bad option, before anything is sent.
func New(client valkey.Client, opts ...lease.Option) (*lease.Locks, error) {
	if client == nil {
		return nil, ErrNilClient
	}
	c, err := NewClient(client)
	if err != nil {
		return nil, err
	}
	return lease.New(c, opts...)
}
