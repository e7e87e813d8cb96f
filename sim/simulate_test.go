package sim_test

import (
	"flag"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire-go/respire/sim/dst"
)

// The deterministic simulation of the lock (sim/dst): the shipped driver
// (actor.Driver, stepping the real statemachine core) in every simulated
// process, over a simulated transport that drives conn's protocol, many
// seeded schedules with faults, invariants checked after every event. A
// failure prints its seed and the one command that replays it:
//
//	go test ./sim -run '^TestSimulate$' -seed=<n> -v
var (
	seedFlag      = flag.Uint64("seed", 0, "replay one simulation schedule (with its transcript) instead of the CI budget")
	schedulesFlag = flag.Int("sim.schedules", ciBudget(), "schedules TestSimulate runs (the CI budget: 10,000, or 300 under -race)")
	firstSeedFlag = flag.Uint64("sim.first", 1, "first seed of the CI budget")
	mutationFlag  = flag.Int("sim.mutation", 0, "with -seed: replay a deliberately broken variant (dst.Mutation)")
)

// ciBudget is TestSimulate's default number of schedules: 10,000, or 300
// under the race detector, which makes a schedule about ten times slower
// now that the engine runs in every schedule (on two cores at load 20-30:
// about 58 schedules/s without it, 3-5 with it; 6,000 race schedules took
// 20 min, past go test's timeout). go run ./cmd/simcampaign runs the long
// campaigns.
func ciBudget() int {
	if raceBuild {
		return 300 // a smoke run: the simulator runs on one OS thread, so -race finds little there; make test runs the budget without it
	}
	return 10000
}

// TestSimulate runs the CI budget: schedules with seeds first..first+n-1,
// spread over every core. With -seed it replays that one schedule and logs
// its transcript.
func TestSimulate(t *testing.T) {
	if *seedFlag != 0 {
		replay(t, *seedFlag)
		return
	}
	n := *schedulesFlag
	if testing.Short() {
		n = min(n, 2000)
	}
	start := time.Now()
	failed, stats := runSeeds(*firstSeedFlag, n, dst.MutationNone)
	elapsed := time.Since(start)
	t.Logf("%d schedules in %s: %.0f schedules/s on %d cores",
		n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), runtime.GOMAXPROCS(0))
	t.Logf("exercised: %+v", stats)
	if len(failed) == 0 {
		return
	}
	t.Errorf("%d of %d schedules broke an invariant; failing seeds: %v", len(failed), n, head(failed, 20))
	opt := dst.Swarm(failed[0])
	opt.Transcript = true
	t.Errorf("first failure:\n%s", dst.Run(opt).Report())
}

func replay(t *testing.T, seed uint64) {
	opt := dst.Swarm(seed)
	opt.Transcript, opt.Mutation = true, dst.Mutation(*mutationFlag)
	r := dst.Run(opt)
	t.Logf("options: %+v", r.Options)
	if r.Failed() {
		t.Fatalf("\n%s", r.Report())
	}
	t.Logf("\n%s", r.Report())
}

// runSeeds plays n schedules from first on GOMAXPROCS goroutines and
// returns the failing seeds in increasing order.
func runSeeds(first uint64, n int, mutation dst.Mutation) (failed []uint64, stats dst.Stats) {
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				opt := dst.Swarm(first + uint64(i))
				opt.Mutation = mutation
				r := dst.Run(opt)
				mu.Lock()
				stats.Add(r.Stats)
				if r.Failed() {
					failed = append(failed, r.Seed)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(failed)
	return failed, stats
}

func head(seeds []uint64, n int) []uint64 { return seeds[:min(n, len(seeds))] }

// TestSimulateSameSeedSameTranscript: one seed → one PRNG → one clock → one
// trace. Two runs of a seed give byte-identical transcripts.
func TestSimulateSameSeedSameTranscript(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		opt := dst.Swarm(seed)
		opt.Transcript = true
		a, b := dst.Run(opt), dst.Run(opt)
		if a.Transcript == "" {
			t.Fatalf("seed %d: empty transcript", seed)
		}
		if a.Transcript != b.Transcript {
			t.Fatalf("seed %d: the two transcripts differ:\n--- first\n%s\n--- second\n%s", seed, a.Transcript, b.Transcript)
		}
	}
}

// TestSimulateCatchesMutation: a deliberately broken protocol step must be
// caught by the checker within the CI budget. A seed counts when it fails
// with the mutation and passes without it.
func TestSimulateCatchesMutation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mutation dst.Mutation
	}{
		{"fallback after a timeout", dst.MutationFallbackAfterTimeout},
		{"renewal without the owner compare", dst.MutationRenewWithoutCompare},
		{"fence never sent", dst.MutationSkipFence},
		{"fencing token from a stale read", dst.MutationReuseFencingToken},
		{"a locally closed socket counted as not submitted", dst.MutationClosingNotSubmitted},
		{"a writer that ignores the readers", dst.MutationWriterIgnoresReaders},
		{"a reader that ignores the writer", dst.MutationReaderIgnoresWriter},
		{"a semaphore that counts ended leases", dst.MutationSemaphoreCountsEnded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := uint64(1); seed <= uint64(*schedulesFlag); seed++ {
				opt := dst.Swarm(seed)
				opt.Mutation = tc.mutation
				r := dst.Run(opt)
				if !r.Failed() || dst.Run(dst.Swarm(seed)).Failed() {
					continue
				}
				t.Logf("caught at seed %d: %s", seed, r.Violations[0])
				return
			}
			t.Fatalf("mutation %q survived %d schedules: the checker missed it", tc.name, *schedulesFlag)
		})
	}
}
