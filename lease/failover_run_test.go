package lease

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The cluster fault run: go test ./lease -run RepeatedFailovers -failover.duration=60s
// (make test runs it for a few seconds).
var (
	failoverDuration = flag.Duration("failover.duration", 6*time.Second, "how long the repeated-failover run lasts")
	failoverWorkers  = flag.Int("failover.workers", 200, "goroutines contending in the repeated-failover run")
	failoverKeys     = flag.Int("failover.keys", 50, "keys they contend for")
)

// belief is one holder's view: it believed it held key from start to end.
type belief struct {
	key        string
	start, end time.Time
	margin     time.Duration
	released   bool // its Release reported Released
	token      string
}

// TestClusterFailover_RepeatedFailoversUnderContention: workers contend with
// keep-alive for a few keys while coordinated failovers move the primaries
// again and again. No two holders may believe they hold one key at once
// (beyond the drift margin), and no key a holder released may be left.
func TestClusterFailover_RepeatedFailoversUnderContention(t *testing.T) {
	nodes := realClusterNodes(t)
	nodes.waitHealthy(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d workers, %d keys, %v", seed, *failoverWorkers, *failoverKeys, *failoverDuration)
	locks := newLocks(t, newClient(t, nodes.addrs, "", nodes.password, true)).WithKeyPrefix(fmt.Sprintf("run:%d:", seed))
	ctx, stop := context.WithTimeout(context.Background(), *failoverDuration)
	defer stop()
	var mu sync.Mutex
	var beliefs []belief
	var wg sync.WaitGroup
	for w := range *failoverWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for ctx.Err() == nil {
				if b, ok := holdOnce(ctx, locks, rng, *failoverKeys); ok {
					mu.Lock()
					beliefs = append(beliefs, b)
					mu.Unlock()
				}
			}
		}()
	}
	failovers := failoverRepeatedly(t, ctx, nodes, rand.New(rand.NewPCG(seed, 1<<40)))
	wg.Wait()
	overlaps := overlapping(beliefs)
	for _, o := range overlaps {
		t.Errorf("two owners: %s", o)
	}
	leaked := leakedKeys(t, nodes, locks.KeyPrefix(), beliefs)
	t.Logf("%d failovers, %d holds, %d overlaps, %d leaked keys", failovers, len(beliefs), len(overlaps), leaked)
	if leaked > 0 {
		t.Errorf("%d keys left that their holders released", leaked)
	}
	nodes.waitHealthy(t)
}

// holdOnce acquires a random key (waiting up to 300 ms), holds it for up to
// 300 ms under its keep-alive, and releases it.
func holdOnce(ctx context.Context, locks *Locks, rng *rand.Rand, keys int) (belief, bool) {
	key := fmt.Sprintf("k%d", rng.IntN(keys))
	lock, err := locks.Acquire(ctx, key, 2*time.Second, WithKeepAlive(), WithWait(300*time.Millisecond))
	if err != nil {
		return belief{}, false
	}
	b := belief{key: lock.core().WireKey(), start: time.Now(), token: lock.Token().wire(),
		margin: DefaultDriftFloor + 2*time.Second/100}
	ended := make(chan time.Time, 1)
	context.AfterFunc(lock.Context(), func() { ended <- time.Now() })
	select {
	case <-time.After(time.Duration(rng.IntN(300)) * time.Millisecond):
	case <-lock.Context().Done():
	}
	b.end = time.Now()
	select {
	case at := <-ended:
		b.end = at // lost before the release: the belief ended then
	default:
	}
	out, _ := lock.Release(context.Background())
	b.released = out == Released
	return b, true
}

// failoverRepeatedly runs CLUSTER FAILOVER on a random replica every
// 1.5–3 s until ctx ends, and returns how many it ran.
func failoverRepeatedly(t *testing.T, ctx context.Context, nodes *realNodes, rng *rand.Rand) int {
	n := 0
	for {
		select {
		case <-ctx.Done():
			return n
		case <-time.After(1500*time.Millisecond + time.Duration(rng.IntN(1500))*time.Millisecond):
		}
		var replicas []clusterNode
		for _, node := range nodes.nodes(t) {
			if !node.master && !node.failed {
				replicas = append(replicas, node)
			}
		}
		if len(replicas) == 0 {
			continue
		}
		r := replicas[rng.IntN(len(replicas))]
		if strings.HasPrefix(nodes.tryExec(r.addr, "CLUSTER", "FAILOVER"), "+OK") {
			n++
		}
	}
}

// overlapping returns every pair of beliefs of one key that overlap by more
// than the later one's drift margin.
func overlapping(beliefs []belief) []string {
	byKey := map[string][]belief{}
	for _, b := range beliefs {
		byKey[b.key] = append(byKey[b.key], b)
	}
	var out []string
	for key, bs := range byKey {
		sort.Slice(bs, func(i, j int) bool { return bs[i].start.Before(bs[j].start) })
		latest := bs[0] // the belief that ends last among those started so far
		for _, b := range bs[1:] {
			if latest.end.Sub(b.start) > latest.margin {
				out = append(out, fmt.Sprintf("%s held until %s and again from %s", key,
					latest.end.Format("15:04:05.000"), b.start.Format("15:04:05.000")))
			}
			if b.end.After(latest.end) {
				latest = b
			}
		}
	}
	return out
}

// leakedKeys counts keys under prefix that still hold the token of a
// holder whose Release reported Released.
func leakedKeys(t *testing.T, nodes *realNodes, prefix string, beliefs []belief) int {
	released := map[string]bool{}
	for _, b := range beliefs {
		if b.released {
			released[b.token] = true
		}
	}
	leaked := 0
	for _, n := range nodes.nodes(t) {
		if !n.master || n.failed {
			continue
		}
		for i := range *failoverKeys {
			got := nodes.tryExec(n.addr, "GET", fmt.Sprintf("%sk%d", prefix, i))
			if _, token, ok := strings.Cut(got, "\r\n"); ok && released[strings.TrimSuffix(token, "\r\n")] {
				leaked++
			}
		}
	}
	return leaked
}
