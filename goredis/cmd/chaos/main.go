// Command chaos is cmd/chaos's randomised fault campaign (internal/chaos)
// with the go-redis transport: each schedule's processes run their locks on
// go-redis (goredis.New over a redis.Client through the fault proxy) or on
// the root module's own client (wire), drawn from the schedule's seed
// (-transport draw, the default), or all on one (-transport goredis,
// -transport wire). It prints the
// first seed, a progress line, every failing seed with the command that
// replays it, the totals and the schedules per transport; the exit status
// is 1 when any schedule broke a rule.
//
//	cd goredis && go run ./cmd/chaos -runs 2000 -transport goredis
package main

import (
	"context"
	"net"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/goredis"
	"github.com/respire-go/respire/internal/chaos"
	"github.com/respire-go/respire/lease"
)

// goRedis is the campaign's go-redis transport: a redis.Client at its
// defaults (goredis.New needs nothing else from its options), dialling
// through the schedule's recording dialer.
var goRedis = chaos.Transport{Name: "goredis", Locks: func(addr, password string, dial chaos.Dial, opts ...lease.Option) (*lease.Locks, func(), error) {
	client := redis.NewClient(&redis.Options{Addr: addr, Password: password,
		Dialer: func(ctx context.Context, _, addr string) (net.Conn, error) { return dial(ctx, addr) }})
	locks, err := goredis.New(client, opts...)
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	return locks, func() { _ = client.Close() }, nil
}}

func main() { os.Exit(chaos.Main(os.Args[1:], os.Stdout, goRedis, chaos.Wire)) }
