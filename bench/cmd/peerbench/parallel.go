package main

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// parallelSlice is how long one implementation runs at a time in
// parallel-64 before the next takes its turn.
const parallelSlice = 250 * time.Millisecond

// parallelCount is what one or more slices of parallel-64 counted.
type parallelCount struct {
	pairs, refused, errs int64
	elapsed, cpu, server time.Duration
}

func (c *parallelCount) add(o parallelCount) {
	c.pairs += o.pairs
	c.refused += o.refused
	c.errs += o.errs
	c.elapsed += o.elapsed
	c.cpu += o.cpu
	c.server += o.server
}

// values are the scenario's metrics of c.
func (c parallelCount) values() map[string]float64 {
	n := float64(max(c.pairs, 1))
	return map[string]float64{"rate": float64(c.pairs) / c.elapsed.Seconds(),
		"cpu": micros(c.cpu) / n, "srvcpu": micros(c.server) / n,
		"refused": float64(c.refused), "errors": float64(c.errs)}
}

// runParallel runs pairs from 64 goroutines on distinct keys, for
// -duration per implementation, the implementations taking turns in
// slices of parallelSlice (the order rotated each slice).
func runParallel(e *env, ims []*impl, rep int) (map[string]map[string]float64, error) {
	n := max(1, int(e.cfg.duration/parallelSlice))
	counts := make([]parallelCount, len(ims))
	for s := range n {
		for k := range ims {
			i := (s + k) % len(ims)
			counts[i].add(parallelFor(e, ims[i], e.cfg.duration/time.Duration(n)))
		}
	}
	out := make(map[string]map[string]float64, len(ims))
	for i, im := range ims {
		out[im.name] = counts[i].values()
	}
	return out, nil
}

// parallelFor runs pairs from 64 goroutines on distinct keys for d (the
// warm-up uses it too).
func parallelFor(e *env, im *impl, d time.Duration) parallelCount {
	const workers = 64
	var pairs, refused, errs atomic.Int64
	var wg sync.WaitGroup
	cpu0, server0 := cpuTime(), e.srv.serverCPU()
	start := time.Now()
	deadline := start.Add(d)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := e.prefix + im.name + ":p64:" + strconv.Itoa(w)
			for time.Now().Before(deadline) {
				ok, err := onePair(im, key)
				switch {
				case err != nil:
					errs.Add(1)
					e.errs.note(im.name, "parallel-64", err)
				case ok:
					pairs.Add(1)
				default:
					refused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return parallelCount{pairs: pairs.Load(), refused: refused.Load(), errs: errs.Load(), elapsed: time.Since(start),
		cpu: cpuTime() - cpu0, server: e.srv.serverCPU() - server0}
}
