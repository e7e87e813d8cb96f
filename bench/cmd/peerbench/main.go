// Command peerbench measures respire-go's lease locks against the Go lock
// libraries users would otherwise pick, on one private redis-server, in one
// run, so the numbers can be rerun by anyone:
//
//   - raw-rueidis, raw-go-redis and raw-valkey-go: SET NX PX + EVALSHA
//     compare-and-delete by hand, the same wire work as a lock, with no
//     library around it;
//   - respire-go: rueidislease.New(client), TryAcquire + Lock.Release;
//     respire-go-goredis and respire-go-valkeygo: the same on goredis.New
//     and valkeygo.New;
//   - redsync v4 (goredis/v9 pool), bsm/redislock, rueidislock: each at its
//     defaults, as a user would call it (see impls_peers.go).
//
// Scenarios: uncontended pairs from one goroutine (p50/p99 latency,
// allocations and bytes per pair), 64 goroutines on distinct keys (pairs/s),
// 16 goroutines trying one key (acquisitions/s, with a mutual-exclusion
// check that fails the run), memory per held lock with a keep-alive
// (10,000 and 100,000 locks), and the waiting scenarios of waiting.go:
// hand-off latency between 16 waiters, loss-detection latency, server
// commands per held lock per second and the cost of 10,000 waiters, where
// respire-go (push) is compared with respire-go-poll (lease.WithoutPush). Implementations run interleaved, the order
// rotated each repetition; tables give the median and min–max over the
// repetitions and the ratios to raw rueidis and to the best peer.
//
// It starts its own redis-server (Debian's; it installs nothing) on a free
// loopback port with a random password and stops it on exit, or uses
// -addr/-password. Run it from bench/: go run ./cmd/peerbench -reps 3.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is what the flags chose.
type config struct {
	addr, password string
	reps           int
	modes          []string // "background", "request"
	timeout        time.Duration
	ttl            time.Duration
	pairs          int
	duration       time.Duration
	held           []int
	hold           time.Duration
	acquireBudget  time.Duration
	waiting        waitingConfig   // the waiting scenarios' flags (waiting.go)
	impls          map[string]bool // empty: all
	scenarios      map[string]bool // empty: all
	out            string
}

func main() {
	os.Exit(run())
}

// run is main with an exit code, so deferred clean-up (the server) runs.
func run() int {
	if spec := os.Getenv(deadWaiterEnv); spec != "" {
		return deadWaiterChild(spec) // a fair waiter to be killed (deadwaiter.go)
	}
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		return 2
	}
	srv, err := openServer(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		return 1
	}
	defer srv.stop()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sigs
		fmt.Fprintln(os.Stderr, "peerbench: stopping on", s)
		srv.stop()
		os.Exit(130)
	}()
	rep, err := runAll(cfg, srv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		return 1
	}
	text := rep.markdown()
	fmt.Print(text)
	if cfg.out != "" {
		if err := os.WriteFile(cfg.out, []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "peerbench:", err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "peerbench: wrote", cfg.out)
	}
	if failures := rep.failures(); len(failures) > 0 {
		for _, f := range failures {
			fmt.Fprintln(os.Stderr, "peerbench: FAILED:", f)
		}
		return 1
	}
	return 0
}

func parseFlags(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("peerbench", flag.ContinueOnError)
	fs.StringVar(&cfg.addr, "addr", "", "use this server (host:port) instead of starting a private redis-server")
	fs.StringVar(&cfg.password, "password", "", "password of -addr")
	fs.IntVar(&cfg.reps, "reps", 3, "repetitions (>= 1; the implementation order rotates each one)")
	ctxFlag := fs.String("ctx", "background", "context per call: background, request (a context.WithTimeout per call) or both")
	fs.DurationVar(&cfg.timeout, "timeout", 5*time.Second, "the request context's timeout (-ctx request)")
	fs.DurationVar(&cfg.ttl, "ttl", 10*time.Second, "lease length given to every implementation")
	fs.IntVar(&cfg.pairs, "pairs", 2000, "uncontended acquire+release pairs per implementation and repetition")
	fs.DurationVar(&cfg.duration, "duration", 2*time.Second, "length of each parallel-64 and contended-16 run")
	heldFlag := fs.String("held", "10000,100000", "held-lock counts for the keep-alive memory scenario")
	fs.DurationVar(&cfg.hold, "hold", 0, "how long the keep-alive scenario holds the locks before measuring (default 3/4 of -ttl: past the first renewal)")
	fs.DurationVar(&cfg.acquireBudget, "acquire-budget", 30*time.Second, "the keep-alive scenario starts no acquisition after this long (the rest count as given up)")
	implFlag := fs.String("impls", "", "comma-separated subset of implementations (default all)")
	scenFlag := fs.String("scenarios", "", "comma-separated subset of: uncontended, parallel-64, contended-16, keepalive, "+
		"handoff, loss, held-cost, watch, fair-dead-waiter, semaphore, guarded (default all)")
	waitingFlags(fs, &cfg.waiting)
	fs.StringVar(&cfg.out, "out", "RESULTS.md", "write the report here too (empty: stdout only)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if cfg.reps < 1 || cfg.pairs < 100 || cfg.duration <= 0 || cfg.ttl < time.Second {
		return cfg, fmt.Errorf("need -reps >= 1, -pairs >= 100, -duration > 0, -ttl >= 1s")
	}
	switch *ctxFlag {
	case "background", "request":
		cfg.modes = []string{*ctxFlag}
	case "both":
		cfg.modes = []string{"background", "request"}
	default:
		return cfg, fmt.Errorf("-ctx %q: want background, request or both", *ctxFlag)
	}
	if err := cfg.waiting.check(cfg.ttl); err != nil {
		return cfg, err
	}
	if cfg.hold <= 0 {
		cfg.hold = cfg.ttl * 3 / 4
	}
	for _, s := range splitList(*heldFlag) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("-held %q: want positive counts", *heldFlag)
		}
		cfg.held = append(cfg.held, n)
	}
	cfg.impls = setOf(splitList(*implFlag))
	cfg.scenarios = setOf(splitList(*scenFlag))
	return cfg, nil
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func setOf(items []string) map[string]bool {
	set := make(map[string]bool, len(items))
	for _, it := range items {
		set[it] = true
	}
	return set
}
