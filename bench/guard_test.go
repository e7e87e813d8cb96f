package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/rueidislease"
)

// guardWriters is how many goroutines BenchmarkGuard64 writes from, as the
// peer benchmark's guarded-64 scenario.
const guardWriters = 64

// guardWrite is one write of the benchmark: an HSET and an INCRBY under the
// hash tag of goroutine w.
type guardWrite func(ctx context.Context, i int) error

// BenchmarkGuard64 measures a guarded write (Lock.Guard of an HSET and an
// INCRBY) from 64 goroutines, each holding a lock of its own: the peer
// benchmark's guarded-64 scenario as a micro-benchmark, for profiling
// (-cpuprofile). Beside it, on raw rueidis, the same two writes:
//
//   - raw-multi: MULTI, HSET, INCRBY, EXEC pipelined in one DoMulti (the
//     issue's reference: atomic, guarded by nothing);
//   - raw-script-unguarded: EVALSHA of GuardWritesScript's loop over the
//     writes without the guard (the floor of any guard done in a script);
//   - raw-script: EVALSHA of conn.GuardWritesScript itself, by hand, for a
//     key that holds the token (the server's share of a guarded write);
//   - raw-script-dedicated: the same on one dedicated connection, as the
//     engine's session sends it;
//   - raw-watch: a guard without a script, as a server without one would
//     need: WATCH and GET of the lease key on a dedicated connection, the
//     value compared here, then MULTI, SET of the write-id record, HSET,
//     INCRBY, EXEC (refused, nil, if the key changed meanwhile).
//
// Clients are at the peer benchmark's defaults (client-side caching on).
// Compare server CPU per write (INFO cpu) as well as ns/op: on a small
// machine the client and the server share the cores.
//
//	bash scripts/with-servers.sh env -C bench go test -run '^$' -bench Guard64 -cpuprofile /tmp/guard.pprof ./
func BenchmarkGuard64(b *testing.B) {
	b.Run("raw-multi", func(b *testing.B) {
		client := guardClient(b)
		runGuard64(b, func(tag string) guardWrite { return rawMultiWrite(client, tag) })
	})
	b.Run("raw-script", func(b *testing.B) {
		client := guardClient(b)
		sha, err := client.Do(context.Background(), client.B().ScriptLoad().Script(conn.GuardWritesScript).Build()).ToString()
		if err != nil {
			b.Fatal(err)
		}
		runGuard64(b, func(tag string) guardWrite { return rawScriptWrite(b, client, sha, tag) })
	})
	b.Run("raw-script-unguarded", func(b *testing.B) {
		client := guardClient(b)
		sha, err := client.Do(context.Background(), client.B().ScriptLoad().Script(unguardedScript).Build()).ToString()
		if err != nil {
			b.Fatal(err)
		}
		runGuard64(b, func(tag string) guardWrite { return rawUnguardedWrite(client, sha, tag) })
	})
	b.Run("raw-script-dedicated", func(b *testing.B) {
		client := guardClient(b)
		sha, err := client.Do(context.Background(), client.B().ScriptLoad().Script(conn.GuardWritesScript).Build()).ToString()
		if err != nil {
			b.Fatal(err)
		}
		d, cancel := client.Dedicate()
		b.Cleanup(cancel)
		runGuard64(b, func(tag string) guardWrite { return rawScriptWrite(b, d, sha, tag) })
	})
	b.Run("raw-watch", func(b *testing.B) {
		client := guardClient(b)
		runGuard64(b, func(tag string) guardWrite { return rawWatchWrite(b, client, tag) })
	})
	b.Run("respire", func(b *testing.B) {
		locks, err := rueidislease.New(guardClient(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(locks.Close)
		runGuard64(b, func(tag string) guardWrite { return respireWrite(b, locks, tag) })
	})
}

// guardClient is a rueidis client at the peer benchmark's defaults.
func guardClient(b *testing.B) rueidis.Client {
	addr, password := server(b)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Password: password})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(client.Close)
	return client
}

// runGuard64 runs b.N writes from 64 goroutines, goroutine w writing
// under a hash tag of its own through the write prepare made for it.
func runGuard64(b *testing.B, prepare func(tag string) guardWrite) {
	prefix := "{bench:guard:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	writes := make([]guardWrite, guardWriters)
	for w := range writes {
		writes[w] = prepare(prefix + strconv.Itoa(w) + "}")
	}
	var next atomic.Int64
	b.SetParallelism((guardWriters + 1) / 2) // × GOMAXPROCS (2 here): 64 goroutines
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		write := writes[int(next.Add(1)-1)%guardWriters]
		ctx := context.Background()
		for i := 0; pb.Next(); i++ {
			if err := write(ctx, i); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func rawMultiWrite(client rueidis.Client, tag string) guardWrite {
	h, n := tag+":state", tag+":count"
	return func(ctx context.Context, i int) error {
		cmd := client.B()
		for _, r := range client.DoMulti(ctx, cmd.Multi().Build(),
			cmd.Hset().Key(h).FieldValue().FieldValue("step", strconv.Itoa(i)).Build(),
			cmd.Incrby().Key(n).Increment(1).Build(), cmd.Exec().Build()) {
			if err := r.Error(); err != nil {
				return err
			}
		}
		return nil
	}
}

// unguardedScript is GuardWritesScript's loop over the writes without the
// guard before it (no token compared, no write id recorded): the floor of
// any guard done in a script, the server's cost of running the same writes
// from Lua instead of in MULTI/EXEC.
const unguardedScript = "local i = 2\n" +
	"for _ = 1, tonumber(ARGV[1]) do\n" +
	"  local n = tonumber(ARGV[i])\n" +
	"  redis.call(unpack(ARGV, i + 1, i + n))\n" +
	"  i = i + n + 1\n" +
	"end\n" +
	"return 1"

func rawUnguardedWrite(client rueidis.Client, sha, tag string) guardWrite {
	h, n := tag+":state", tag+":count"
	return func(ctx context.Context, i int) error {
		return client.Do(ctx, client.B().Evalsha().Sha1(sha).Numkeys(2).Key(h, n).
			Arg("2", "4", "HSET", h, "step", strconv.Itoa(i), "3", "INCRBY", n, "1").Build()).Error()
	}
}

func rawScriptWrite(b *testing.B, client rueidis.CoreClient, sha, tag string) guardWrite {
	lock, h, n := tag+":lock", tag+":state", tag+":count"
	record, token := conn.GuardRecordKey(lock), "token-"+tag
	if err := client.Do(context.Background(), client.B().Set().Key(lock).Value(token).Px(time.Hour).Build()).Error(); err != nil {
		b.Fatal(err)
	}
	var id atomic.Int64
	return func(ctx context.Context, i int) error {
		return client.Do(ctx, client.B().Evalsha().Sha1(sha).Numkeys(5).Key(lock, record, record, h, n).
			Arg(token, strconv.FormatInt(id.Add(1), 10), "", "10000", "2", "4", "HSET", h, "step", strconv.Itoa(i), "3", "INCRBY", n, "1").
			Build()).Error()
	}
}

func respireWrite(b *testing.B, locks *lease.Locks, tag string) guardWrite {
	lock, err := locks.Acquire(context.Background(), tag+":lock", 10*time.Second, lease.WithKeepAlive())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { lock.Close() })
	h, n := tag+":state", tag+":count"
	return func(ctx context.Context, i int) error {
		return lock.Guard(ctx, lease.Command("HSET", h, "step", strconv.Itoa(i)), lease.Command("INCRBY", n, "1"))
	}
}

func rawWatchWrite(b *testing.B, client rueidis.Client, tag string) guardWrite {
	lock, h, n := tag+":lock", tag+":state", tag+":count"
	record, token := conn.GuardRecordKey(lock), "token-"+tag
	if err := client.Do(context.Background(), client.B().Set().Key(lock).Value(token).Px(time.Hour).Build()).Error(); err != nil {
		b.Fatal(err)
	}
	var id atomic.Int64
	return func(ctx context.Context, i int) error {
		return client.Dedicated(func(c rueidis.DedicatedClient) error {
			cmd := c.B()
			res := c.DoMulti(ctx, cmd.Watch().Key(lock).Build(), cmd.Get().Key(lock).Build())
			if v, err := res[1].ToString(); err != nil || v != token {
				return fmt.Errorf("the lease key reads %q, %v", v, err)
			}
			for _, r := range c.DoMulti(ctx, cmd.Multi().Build(),
				cmd.Set().Key(record).Value(strconv.FormatInt(id.Add(1), 10)).Px(10*time.Second).Build(),
				cmd.Hset().Key(h).FieldValue().FieldValue("step", strconv.Itoa(i)).Build(),
				cmd.Incrby().Key(n).Increment(1).Build(), cmd.Exec().Build()) {
				if err := r.Error(); err != nil {
					return err
				}
			}
			return nil
		})
	}
}
