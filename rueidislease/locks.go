package rueidislease

import (
	"errors"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/lease"
)

// ErrNilClient is New's error for a nil client.
var ErrNilClient = errors.New("rueidislease: nil rueidis client")

// New returns the lease locks over client. It sends nothing: connections
// open on first use — per node one session, one fence connection and, with
// push, one tracking watcher, each a dedicated client taken from client's
// pool. Locks does not take ownership of client: call Locks.Close before
// closing client. It fails with ErrNilClient for a nil client, and with
// lease's errors for a bad option, before anything is sent.
func New(client rueidis.Client, opts ...lease.Option) (*lease.Locks, error) {
	if client == nil {
		return nil, ErrNilClient
	}
	return lease.New(NewClient(client), opts...)
}
