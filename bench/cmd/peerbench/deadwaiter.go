package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/rueidislease"
)

// The dead-waiter scenario: a fair waiter in a child process is killed with
// SIGKILL while queued between two live waiters; the hand-off past it must
// cost no more than its waiter lease, never the lock's TTL (issue 31).

// deadWaiterEnv makes peerbench a fair waiter child: addr|password|key|waiter lease ms.
const deadWaiterEnv = "PEERBENCH_FAIR_WAITER"

// deadWaiterLease is the waiter lease of every waiter of the scenario (the default).
const deadWaiterLease = lease.DefaultWaiterLease

// deadWaiterSamples is the dead waiters per repetition.
const deadWaiterSamples = 3

func deadWaiterScenario(cfg config) *scenario {
	return &scenario{
		id: "fair-dead-waiter", family: "fair-dead-waiter", firstModeOnly: true, base: "respire-go-fair",
		only: func(im implInfo) bool { return im.name == "respire-go-fair" }, skip: "no fair waiting",
		title: "fair waiting: a SIGKILLed waiter in the middle of the queue",
		about: fmt.Sprintf("a holder (lease %v) and, queued behind it with lease.WithFairWait (waiter lease %v), a waiter A "+
			"of this process, a waiter in a child process, and a waiter B of this process; the child is killed with SIGKILL, "+
			"the holder releases, A takes the lock and releases at once. Cost: from A's release reply to B's acquisition "+
			"(the dead waiter's place ends with its waiter lease); also from the SIGKILL to B's acquisition; %d samples per repetition.",
			cfg.ttl, deadWaiterLease, deadWaiterSamples),
		// The dead waiter's place ends with its waiter lease by the server's
		// clock; the script that passes it over runs at the live waiters'
		// next timer: a round trip and a timer's lateness on top, allowed for
		// as a tenth of the lease.
		target: &target{impl: "respire-go-fair", metric: "max", max: 1.1 * float64(deadWaiterLease.Microseconds()) / 1e3, unit: "ms",
			what: fmt.Sprintf("a SIGKILLed waiter costs ≤ its waiter lease (%v; +10 %% for the timer and round trip that pass it over)",
				deadWaiterLease)},
		metrics: []metric{{key: "p50", header: "p50 ms", lowerBetter: true}, {key: "max", header: "max ms", lowerBetter: true},
			{key: "kill", header: "p50 ms from the kill to B's acquisition", lowerBetter: true},
			{key: "lease", header: "waiter lease ms"}, {key: "errors", header: "errors", total: true}},
		run: runDeadWaiter,
	}
}

func runDeadWaiter(e *env, im *impl, rep int) (map[string]float64, error) {
	client, err := rueidis.NewClient(rueidisOption(e.srv))
	if err != nil {
		return nil, err
	}
	defer client.Close()
	locks, err := rueidislease.New(client)
	if err != nil {
		return nil, err
	}
	defer locks.Close()
	var costs, sinceKill []time.Duration
	errs := 0
	for i := range deadWaiterSamples {
		key := fmt.Sprintf("%s%s:deadwaiter:%d:%d", e.prefix, im.name, rep, i)
		d, k, err := deadWaiterOnce(e, locks, key)
		if err != nil {
			errs++
			e.errs.note(im.name, "fair-dead-waiter", err)
			continue
		}
		costs, sinceKill = append(costs, d), append(sinceKill, k)
	}
	slices.Sort(costs)
	slices.Sort(sinceKill)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	var maxCost time.Duration
	if len(costs) > 0 {
		maxCost = costs[len(costs)-1]
	}
	return map[string]float64{"p50": ms(percentile(costs, 50)), "max": ms(maxCost), "kill": ms(percentile(sinceKill, 50)),
		"lease": ms(deadWaiterLease), "errors": float64(errs)}, nil
}

// deadWaiterOnce queues A, the child and B behind a holder of key, kills
// the child, and returns how long B waited after A released.
func deadWaiterOnce(e *env, locks *lease.Locks, key string) (cost, sinceKill time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.ttl+30*time.Second)
	defer cancel()
	fair := []lease.AcquireOption{lease.WithWaitUntilDone(), lease.WithFairWait(), lease.WithWaiterLease(deadWaiterLease)}
	holder, err := locks.Acquire(ctx, key, e.cfg.ttl, fair...)
	if err != nil {
		return 0, 0, fmt.Errorf("holder: %w", err)
	}
	defer holder.Close() //nolint:errcheck // released below; Close only stops what is left
	type got struct {
		lock *lease.Lock
		err  error
		at   time.Time
	}
	wait := func(n int) (chan got, error) {
		ch := make(chan got, 1)
		go func() {
			l, err := locks.Acquire(ctx, key, e.cfg.ttl, fair...)
			ch <- got{l, err, time.Now()}
		}()
		return ch, queued(ctx, locks, key, n)
	}
	a, err := wait(1)
	if err != nil {
		return 0, 0, err
	}
	child := exec.CommandContext(ctx, os.Args[0])
	child.Env = append(os.Environ(), deadWaiterEnv+"="+strings.Join([]string{e.srv.addr, e.srv.password, key,
		strconv.FormatInt(deadWaiterLease.Milliseconds(), 10)}, "|"))
	child.Stderr = os.Stderr
	setDeathSignal(child)
	if err := child.Start(); err != nil {
		return 0, 0, err
	}
	defer child.Wait()         //nolint:errcheck // killed
	defer child.Process.Kill() //nolint:errcheck // already gone is fine
	if err := queued(ctx, locks, key, 2); err != nil {
		return 0, 0, fmt.Errorf("the child: %w", err)
	}
	b, err := wait(3)
	if err != nil {
		return 0, 0, err
	}
	if err := child.Process.Signal(os.Kill); err != nil {
		return 0, 0, err
	}
	killed := time.Now()
	if _, err := holder.Release(ctx); err != nil {
		return 0, 0, err
	}
	ra := <-a
	if ra.err != nil {
		return 0, 0, fmt.Errorf("A: %w", ra.err)
	}
	if _, err := ra.lock.Release(ctx); err != nil {
		return 0, 0, err
	}
	released := time.Now()
	rb := <-b
	if rb.err != nil {
		return 0, 0, fmt.Errorf("B: %w", rb.err)
	}
	defer rb.lock.Close() //nolint:errcheck // the sample is taken
	return rb.at.Sub(released), rb.at.Sub(killed), nil
}

// queued waits until key's queue holds n live fair waiters.
func queued(ctx context.Context, locks *lease.Locks, key string, n int) error {
	for {
		infos, err := locks.List(ctx, key)
		if err != nil {
			return err
		}
		for _, in := range infos {
			if in.Key == key && in.Waiters >= n {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d waiters never queued: %w", n, context.Cause(ctx))
		case <-time.After(time.Millisecond):
		}
	}
}

// deadWaiterChild is the child's life: queue as a fair waiter on the key
// and wait until killed.
func deadWaiterChild(spec string) int {
	parts := strings.Split(spec, "|")
	if len(parts) != 4 {
		fmt.Fprintln(os.Stderr, "peerbench child: bad", deadWaiterEnv)
		return 2
	}
	ms, err := strconv.Atoi(parts[3])
	if err != nil {
		return 2
	}
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{parts[0]}, Password: parts[1]})
	if err != nil {
		fmt.Fprintln(os.Stderr, "peerbench child:", err)
		return 1
	}
	locks, err := rueidislease.New(client)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peerbench child:", err)
		return 1
	}
	_, err = locks.Acquire(context.Background(), parts[2], time.Minute, lease.WithWaitUntilDone(), lease.WithFairWait(),
		lease.WithWaiterLease(time.Duration(ms)*time.Millisecond))
	fmt.Fprintln(os.Stderr, "peerbench child: its wait ended before it was killed:", err)
	return 1
}
