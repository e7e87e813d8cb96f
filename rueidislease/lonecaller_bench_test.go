package rueidislease_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// BenchmarkLoneCaller times SET NX PX + DEL pairs from one goroutine on a
// dedicated rueidis socket in each of its modes, on the real redis-server
// of RESPIRE_REAL_REDIS70: synchronous (the caller writes and reads the
// socket itself) and background (after one cancellable ctx: every command
// crosses the caller, rueidis' writer and its reader goroutines), and
// reports the median per pair. With -cpu 1,2,4 it shows what the hand-off
// costs at each GOMAXPROCS (docs/architecture.md, "Why a lone caller waits
// longer"). Nothing is asserted about its timing:
//
//	scripts/with-servers.sh env -C rueidislease go test -run '^$' -bench LoneCaller -cpu 1,2,4 .
func BenchmarkLoneCaller(b *testing.B) {
	addr := os.Getenv("RESPIRE_REAL_REDIS70")
	if addr == "" {
		b.Skip("RESPIRE_REAL_REDIS70 not set: no real redis-server (scripts/with-servers.sh starts one)")
	}
	for _, mode := range []string{"synchronous", "background"} {
		b.Run(mode, func(b *testing.B) {
			client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr},
				Password: os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD"), DisableCache: true})
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			d, release := client.Dedicate()
			defer release()
			ctx := context.Background()
			if mode == "background" {
				cancellable, cancel := context.WithCancel(ctx)
				d.Do(cancellable, d.B().Ping().Build()) // moves the socket to background mode for good
				cancel()
			}
			pair := func() {
				d.Do(ctx, d.B().Set().Key("bench:lone").Value("v").Nx().PxMilliseconds(10000).Build())
				d.Do(ctx, d.B().Del().Key("bench:lone").Build())
			}
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				pair()
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
		})
	}
}
