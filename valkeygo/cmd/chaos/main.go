// Command chaos runs the fault campaign of the root module's cmd/chaos
// (internal/chaos) with the processes' locks on valkey-go through this
// adapter (valkeygo.New over a valkey.Client dialling through the
// schedule's recording dialer) or on the root module's own client (wire),
// drawn from the schedule's seed (-transport draw, the default), or all on
// one (-transport valkeygo, -transport wire): the same schedules, faults and
// checks as on every client.
//
//	cd valkeygo && go run ./cmd/chaos -runs 2000 -transport valkeygo
//	cd valkeygo && go run ./cmd/chaos -runs 1 -seed N -transport valkeygo   # replays a schedule
package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"

	"github.com/valkey-io/valkey-go"

	"github.com/respire-go/respire/internal/chaos"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/valkeygo"
)

// valkeyGo is the campaign's valkey-go transport: a valkey.Client at its
// defaults, every socket opened through the schedule's dialer (the fault
// proxy records them).
var valkeyGo = chaos.Transport{Name: "valkeygo", Locks: func(addr, password string, dial chaos.Dial,
	opts ...lease.Option) (*lease.Locks, func(), error) {
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, Password: password,
		DialCtxFn: func(ctx context.Context, dst string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return dial(ctx, dst)
		}})
	if err != nil {
		return nil, nil, fmt.Errorf("valkey.NewClient: %w", err)
	}
	locks, err := valkeygo.New(client, opts...)
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return locks, client.Close, nil
}}

func main() { os.Exit(chaos.Main(os.Args[1:], os.Stdout, valkeyGo, chaos.Wire)) }
