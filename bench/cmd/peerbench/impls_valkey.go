package main

import (
	"context"
	"fmt"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/respire-go/respire/valkeygo"
)

// valkeyOption is the client option of every valkey-go implementation: the
// client's defaults (client-side caching on, OPTIN).
func valkeyOption(srv *server) valkey.ClientOption {
	return valkey.ClientOption{InitAddress: []string{srv.addr}, Password: srv.password}
}

// newRawValkeygo is SET NX PX + EVALSHA compare-and-delete by hand on
// valkey-go, the floor of respire-go-valkeygo.
func newRawValkeygo(srv *server, c calls, ttl time.Duration) (*impl, error) {
	client, err := valkey.NewClient(valkeyOption(srv))
	if err != nil {
		return nil, err
	}
	sha, err := client.Do(context.Background(), client.B().ScriptLoad().Script(releaseScript).Build()).ToString()
	if err != nil {
		client.Close()
		return nil, err
	}
	ms := ttl.Milliseconds()
	release := func(key, token string) error {
		ctx, cancel := c.call()
		defer cancel()
		n, err := client.Do(ctx, client.B().Evalsha().Sha1(sha).Numkeys(1).Key(key).Arg(token).Build()).AsInt64()
		if err == nil && n != 1 {
			err = errNotOwned
		}
		return err
	}
	try := func(key string) (func() error, error) {
		token := newToken()
		ctx, cancel := c.call()
		err := client.Do(ctx, client.B().Set().Key(key).Value(token).Nx().PxMilliseconds(ms).Build()).Error()
		cancel()
		if valkey.IsValkeyNil(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("SET NX: %w", err)
		}
		return func() error { return release(key, token) }, nil
	}
	return &impl{name: "raw-valkey-go", wire: "SET NX PX, EVALSHA", try: try, close: client.Close}, nil
}

// newRespireValkeygo is respire-go over valkey-go: valkeygo.New on a
// valkey-go client at its defaults, the same calls as respire-go.
func newRespireValkeygo(srv *server, c calls, ttl time.Duration) (*impl, error) {
	client, err := valkey.NewClient(valkeyOption(srv))
	if err != nil {
		return nil, err
	}
	locks, err := valkeygo.New(client)
	if err != nil {
		client.Close()
		return nil, err
	}
	im := respireOn(locks, client.Close, c, ttl)
	im.name, im.waits = "respire-go-valkeygo", "CLIENT TRACKING invalidation push (per-node watcher), retry interval as safety net"
	return im, nil
}
