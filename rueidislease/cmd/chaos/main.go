// Command chaos runs the fault campaign of the root module's cmd/chaos
// (internal/chaos) with the processes' locks on rueidis through this
// adapter or on the root module's own client (wire), drawn from the
// schedule's seed (-transport draw, the default), or all on one
// (-transport rueidis, -transport wire): the same schedules, faults and
// checks as on every client.
//
//	cd rueidislease && go run ./cmd/chaos -runs 2000 -transport rueidis
//	cd rueidislease && go run ./cmd/chaos -runs 1 -seed N -transport rueidis   # replays a schedule
package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/internal/chaos"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/rueidislease"
)

// transport is the campaign's client: rueidis, every socket opened through
// the schedule's dialer (the fault proxy records them).
var transport = chaos.Transport{Name: "rueidis", Locks: func(addr, password string, dial chaos.Dial,
	opts ...lease.Option) (*lease.Locks, func(), error) {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Password: password,
		DialCtxFn: func(ctx context.Context, dst string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return dial(ctx, dst)
		}})
	if err != nil {
		return nil, nil, fmt.Errorf("rueidis.NewClient: %w", err)
	}
	locks, err := rueidislease.New(client, opts...)
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return locks, client.Close, nil
}}

func main() { os.Exit(chaos.Main(os.Args[1:], os.Stdout, transport, chaos.Wire)) }
