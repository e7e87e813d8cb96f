package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// commandStats is INFO commandstats: calls per command ("set",
// "evalsha", "client|tracking", …), commands run by scripts included.
type commandStats map[string]int64

// total is every call but INFO's (the benchmark's own queries).
func (c commandStats) total() int64 {
	var n int64
	for name, calls := range c {
		if name != "info" {
			n += calls
		}
	}
	return n
}

// commandStats reads INFO commandstats (empty on error).
func (s *server) commandStats() commandStats {
	text, err := s.stats.Do(context.Background(), s.stats.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		return commandStats{}
	}
	return parseCommandStats(text)
}

// serverCPU is the server's user + system CPU time so far (INFO cpu; 0 on
// error).
func (s *server) serverCPU() time.Duration {
	text, err := s.stats.Do(context.Background(), s.stats.B().Info().Section("cpu").Build()).ToString()
	if err != nil {
		return 0
	}
	var sum float64
	for _, line := range strings.Split(text, "\r\n") {
		name, value, ok := strings.Cut(line, ":")
		if ok && (name == "used_cpu_user" || name == "used_cpu_sys") {
			seconds, _ := strconv.ParseFloat(value, 64)
			sum += seconds
		}
	}
	return time.Duration(sum * float64(time.Second))
}

// parseCommandStats reads the calls of each cmdstat_ line.
func parseCommandStats(text string) commandStats {
	out := commandStats{}
	for _, line := range strings.Split(text, "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		n, _ := strconv.ParseInt(calls, 10, 64)
		out[name] = n
	}
	return out
}

// runHeldCost holds cfg's locks with the keep-alive and counts the
// server's commands per lock and second.
func runHeldCost(e *env, im *impl, rep int) (map[string]float64, error) {
	w := e.cfg.waiting
	prefix := fmt.Sprintf("%s%s:cost:%d:", e.prefix, im.name, rep)
	held := make([]heldLock, w.heldCost)
	defer releaseAll(held)
	got := acquireAll(e, im, prefix, held, time.Now().Add(e.cfg.acquireBudget))
	time.Sleep(time.Second) // let the acquisitions' own traffic (watch reads, rueidislock's third key) pass
	stats0 := e.srv.commandStats()
	start := time.Now()
	time.Sleep(w.costWindow) // the window being counted
	stats1 := e.srv.commandStats()
	elapsed := time.Since(start)
	lost := 0
	for _, h := range held {
		if h != nil && h.lost() != nil {
			lost++
		}
	}
	locks := float64(max(1, w.heldCost-got.gaveUp))
	return map[string]float64{"rate": float64(stats1.total()-stats0.total()) / locks / elapsed.Seconds(),
		"lost": float64(lost), "gaveup": float64(got.gaveUp), "errors": float64(got.errors)}, nil
}

// runWatchCost has a goroutine per held key wait for it and measures what
// the waiting costs the client and the server.
func runWatchCost(e *env, im *impl, rep int) (map[string]float64, error) {
	w := e.cfg.waiting
	prefix := fmt.Sprintf("%s%s:watch:%d:", e.prefix, im.name, rep)
	keys := make([]string, 0, w.watched)
	for i := range w.watched {
		keys = append(keys, im.serverKeys(prefix+strconv.Itoa(i))...)
	}
	if err := e.srv.setHeld(keys, w.watchSettle+w.watchWindow+time.Minute); err != nil {
		return nil, err
	}
	defer e.srv.delHeld(keys)
	idle := idleGoroutineBytes(w.watched)
	bytes0, server0 := liveBytes(), e.srv.infoInt("memory", "used_memory")
	ctx, cancel := context.WithCancel(context.Background())
	var errs atomic.Int64
	var wg sync.WaitGroup
	for i := range w.watched {
		wg.Go(func() {
			release, err := im.wait(ctx, prefix+strconv.Itoa(i))
			if err == nil {
				release() //nolint:errcheck // not expected: the key stays held
				err = fmt.Errorf("acquired a key held by another owner")
			}
			if ctx.Err() == nil {
				errs.Add(1)
				e.errs.note(im.name, "watch", err)
			}
		})
	}
	time.Sleep(w.watchSettle) // the waiters settle; nothing is asserted about this timing
	stats0, cpu0, start := e.srv.commandStats(), cpuTime(), time.Now()
	time.Sleep(w.watchWindow) // the window being measured
	stats1, cpu1, elapsed := e.srv.commandStats(), cpuTime(), time.Since(start)
	bytes1, server1 := liveBytes(), e.srv.infoInt("memory", "used_memory")
	cancel()
	wg.Wait()
	n := float64(w.watched)
	return map[string]float64{
		"kib":      (float64(bytes1-bytes0)/n - idle) / 1024,
		"server":   float64(server1-server0) / n,
		"commands": float64(stats1.total()-stats0.total()) / n / elapsed.Seconds(),
		"cpu":      float64((cpu1 - cpu0).Microseconds()) / n / elapsed.Seconds(),
		"errors":   float64(errs.Load()),
	}, nil
}

// idleGoroutineBytes is heap + stacks per goroutine blocked on a channel,
// measured with n of them: what a waiter costs before any library work.
func idleGoroutineBytes(n int) float64 {
	before := liveBytes()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { <-stop })
	}
	after := liveBytes()
	close(stop)
	wg.Wait()
	return float64(after-before) / float64(n)
}

// setHeld sets keys to a foreign owner for ttl, in pipelined batches, from
// the stats client.
func (s *server) setHeld(keys []string, ttl time.Duration) error {
	st := s.stats
	for batch := range slices.Chunk(keys, 1000) {
		cmds := make([]rueidis.Completed, 0, len(batch))
		for _, k := range batch {
			cmds = append(cmds, st.B().Set().Key(k).Value("another-owner").PxMilliseconds(ttl.Milliseconds()).Build())
		}
		for _, r := range st.DoMulti(context.Background(), cmds...) {
			if err := r.Error(); err != nil {
				return fmt.Errorf("SET of a held key: %w", err)
			}
		}
	}
	return nil
}

// delHeld deletes what setHeld set (errors ignored: the keys expire).
func (s *server) delHeld(keys []string) {
	st := s.stats
	for batch := range slices.Chunk(keys, 1000) {
		st.Do(context.Background(), st.B().Unlink().Key(batch...).Build()) //nolint:errcheck // see the doc comment
	}
}
