package bench

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
)

// BenchmarkGuardServerCost is the server's share of a guarded write, step
// by step: the same two writes as BenchmarkGuard64 (an HSET and an INCRBY,
// 64 goroutines, raw rueidis) sent as MULTI/EXEC and as scripts that add
// the guard's steps one at a time. Beside ns/op it reports, per write:
//
//   - srv-µs/write: the server's CPU time (INFO cpu, user + system) over
//     the run, divided by the writes: everything the server did, reading
//     the requests and writing the replies included;
//
//   - call-µs/write: the time the server spent in the commands themselves
//     (INFO commandstats after CONFIG RESETSTAT: EVALSHA's usec, or
//     MULTI's and EXEC's, whose usec includes the commands it runs),
//     divided by the writes: the part a script can change, and which the
//     host's other load disturbs least.
//
//     bash scripts/with-servers.sh env -C bench go test -run '^$' -bench GuardServerCost -benchtime 200000x ./
func BenchmarkGuardServerCost(b *testing.B) {
	b.Run("multi-exec", func(b *testing.B) {
		client := guardClient(b)
		runServerCost(b, client, func(tag string) guardWrite { return rawMultiWrite(client, tag) })
	})
	for _, v := range guardCostScripts {
		b.Run(v.name, func(b *testing.B) {
			client := guardClient(b)
			sha, err := client.Do(context.Background(), client.B().ScriptLoad().Script(v.script).Build()).ToString()
			if err != nil {
				b.Fatal(err)
			}
			runServerCost(b, client, func(tag string) guardWrite { return v.write(b, client, sha, tag) })
		})
	}
}

// guardCostScript is one script of BenchmarkGuardServerCost and its write.
type guardCostScript struct {
	name, script string
	write        func(b *testing.B, client rueidis.Client, sha, tag string) guardWrite
}

// The steps of the guard, as scripts (the writes' loop is
// GuardWritesScript's, after ARGV[first-1], their number).
const (
	costLoop = "for _ = 1, tonumber(ARGV[%d]) do\n" +
		"  local n = tonumber(ARGV[i])\n" +
		"  redis.call(unpack(ARGV, i + 1, i + n))\n" +
		"  i = i + n + 1\n" +
		"end\n" +
		"return 1"
	costCompare = "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end\n"
)

func loopFrom(first int) string {
	return "local i = " + strconv.Itoa(first+1) + "\n" + strings.Replace(costLoop, "%d", strconv.Itoa(first), 1)
}

var guardCostScripts = []guardCostScript{
	// the writes alone, called one by one (no generic loop): the floor
	{"floor-direct", "redis.call('hset', KEYS[1], 'step', ARGV[1])\nredis.call('incrby', KEYS[2], 1)\nreturn 1",
		func(b *testing.B, client rueidis.Client, sha, tag string) guardWrite {
			h, n := tag+":state", tag+":count"
			return func(ctx context.Context, i int) error {
				return client.Do(ctx, client.B().Evalsha().Sha1(sha).Numkeys(2).Key(h, n).Arg(strconv.Itoa(i)).Build()).Error()
			}
		}},
	// the writes through GuardWritesScript's loop (BenchmarkGuard64's raw-script-unguarded)
	{"floor-loop", unguardedScript, func(b *testing.B, client rueidis.Client, sha, tag string) guardWrite {
		return rawUnguardedWrite(client, sha, tag)
	}},
	// + the token compare
	{"compare", costCompare + loopFrom(2), func(b *testing.B, client rueidis.Client, sha, tag string) guardWrite {
		lock, h, n, token := lockedTag(b, client, tag)
		return func(ctx context.Context, i int) error {
			return client.Do(ctx, client.B().Evalsha().Sha1(sha).Numkeys(3).Key(lock, h, n).
				Arg(token, "2", "4", "HSET", h, "step", strconv.Itoa(i), "3", "INCRBY", n, "1").Build()).Error()
		}
	}},
	// + the write id recorded with a TTL given as an argument
	{"compare-record-px", costCompare + "redis.call('set', KEYS[2], ARGV[2], 'PX', ARGV[3])\n" + loopFrom(4),
		func(b *testing.B, client rueidis.Client, sha, tag string) guardWrite {
			lock, h, n, token := lockedTag(b, client, tag)
			record := conn.GuardRecordKey(lock)
			var id atomic.Int64
			return func(ctx context.Context, i int) error {
				return client.Do(ctx, client.B().Evalsha().Sha1(sha).Numkeys(4).Key(lock, record, h, n).
					Arg(token, strconv.FormatInt(id.Add(1), 10), "10000", "2", "4", "HSET", h, "step", strconv.Itoa(i),
						"3", "INCRBY", n, "1").Build()).Error()
			}
		}},
	// the same, the writes called one by one: the guard over the floor
	{"compare-record-px-direct", costCompare + "redis.call('set', KEYS[2], ARGV[2], 'PX', ARGV[3])\n" +
		"redis.call('hset', KEYS[3], 'step', ARGV[4])\nredis.call('incrby', KEYS[4], 1)\nreturn 1",
		func(b *testing.B, client rueidis.Client, sha, tag string) guardWrite {
			lock, h, n, token := lockedTag(b, client, tag)
			record := conn.GuardRecordKey(lock)
			var id atomic.Int64
			return func(ctx context.Context, i int) error {
				return client.Do(ctx, client.B().Evalsha().Sha1(sha).Numkeys(4).Key(lock, record, h, n).
					Arg(token, strconv.FormatInt(id.Add(1), 10), "10000", strconv.Itoa(i)).Build()).Error()
			}
		}},
	// conn.GuardWritesScript as the library sends it (BenchmarkGuard64's raw-script)
	{"guard-script", conn.GuardWritesScript, func(b *testing.B, client rueidis.Client, sha, tag string) guardWrite {
		return rawScriptWrite(b, client, sha, tag)
	}},
}

// lockedTag sets tag's lease key to a token for an hour and returns its
// keys and the token.
func lockedTag(b *testing.B, client rueidis.Client, tag string) (lock, h, n, token string) {
	lock, h, n, token = tag+":lock", tag+":state", tag+":count", "token-"+tag
	if err := client.Do(context.Background(), client.B().Set().Key(lock).Value(token).Px(time.Hour).Build()).Error(); err != nil {
		b.Fatal(err)
	}
	return lock, h, n, token
}

// runServerCost runs b.N writes as runGuard64 does and reports the
// server's CPU and command time per write.
func runServerCost(b *testing.B, client rueidis.Client, prepare func(tag string) guardWrite) {
	ctx := context.Background()
	if err := client.Do(ctx, client.B().ConfigResetstat().Build()).Error(); err != nil {
		b.Fatal(err)
	}
	cpu0 := infoCPU(b, client)
	runGuard64(b, prepare)
	b.StopTimer()
	cpu := infoCPU(b, client) - cpu0
	text, err := client.Do(ctx, client.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	var usec float64
	for _, name := range []string{"evalsha", "multi", "exec"} {
		usec += commandUsec(text, name)
	}
	b.ReportMetric(cpu.Seconds()*1e6/float64(b.N), "srv-µs/write")
	b.ReportMetric(usec/float64(b.N), "call-µs/write")
}

// infoCPU is the server's used_cpu_user + used_cpu_sys (INFO cpu).
func infoCPU(b *testing.B, client rueidis.Client) time.Duration {
	text, err := client.Do(context.Background(), client.B().Info().Section("cpu").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, field := range []string{"used_cpu_sys:", "used_cpu_user:"} {
		for line := range strings.SplitSeq(text, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), field); ok {
				f, _ := strconv.ParseFloat(v, 64)
				total += f
			}
		}
	}
	return time.Duration(total * float64(time.Second))
}

// commandUsec is a command's usec in INFO commandstats (0 when absent).
func commandUsec(text, name string) float64 {
	for line := range strings.SplitSeq(text, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+name+":")
		if !ok {
			continue
		}
		for field := range strings.SplitSeq(rest, ",") {
			if v, ok := strings.CutPrefix(field, "usec="); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
	}
	return 0
}
