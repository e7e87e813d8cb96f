package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"

	"github.com/respire-go/respire/internal/wire"
	"github.com/respire-go/respire/lease"
)

// Dial opens one socket of a process's client to addr (the fault proxy); a
// schedule's Dial records the socket's local address, so that the
// injector's faults can name the process they hit.
type Dial func(ctx context.Context, addr string) (net.Conn, error)

// Transport is the client a schedule's processes run their locks on. The
// campaign may draw one per schedule from the seed (DrawTransport).
type Transport struct {
	// Name names the transport in reports and replay commands ("wire",
	// "rueidis", "goredis").
	Name string
	// Locks connects a new client to addr with password, opening every
	// socket with dial, and returns lease.Locks on it (with opts) and a
	// function that closes the client (called once, after the Locks'
	// Close). It sends nothing the fault schedule could not carry.
	Locks func(addr, password string, dial Dial, opts ...lease.Option) (locks *lease.Locks, closeClient func(), err error)
}

// Wire is the transport of lease.New over the root module's own client
// (internal/wire; the default of Options.Transport). Each adapter module
// runs the campaign on its client with a Transport of its own.
var Wire = Transport{Name: "wire", Locks: wireLocks}

func wireLocks(addr, password string, dial Dial, opts ...lease.Option) (*lease.Locks, func(), error) {
	client := wire.New(wire.Options{Addrs: []string{addr}, Password: password,
		Dial: func(ctx context.Context, dst string) (net.Conn, error) { return dial(ctx, dst) }})
	locks, err := lease.New(client, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("lease.New: %w", err)
	}
	return locks, client.Close, nil
}

// DrawTransport returns the transport of the schedule seed among ts: the
// seed alone decides it (a PCG stream of its own, so that the rest of the
// schedule is the same whichever transport it draws).
func DrawTransport(seed uint64, ts []Transport) Transport {
	if len(ts) == 1 {
		return ts[0]
	}
	return ts[rand.New(rand.NewPCG(seed, streamTransport)).IntN(len(ts))]
}
