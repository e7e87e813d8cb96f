package main

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// keepAliveWorkers is how many goroutines acquire and release the held locks.
const keepAliveWorkers = 64

// keepAliveTries is how often a free key may be refused before the
// scenario gives up on it and holds one lock fewer (rueidislock bounds each
// key's script by TryNextAfter, 20 ms, and under load reports a slow answer
// as not locked).
const keepAliveTries = 5

// keepAliveRun returns the scenario run that holds n locks at once.
func keepAliveRun(n int) func(e *env, im *impl, rep int) (map[string]float64, error) {
	return func(e *env, im *impl, rep int) (map[string]float64, error) {
		prefix := fmt.Sprintf("%s%s:held%d:%d:", e.prefix, im.name, n, rep)
		held := make([]heldLock, n)
		defer releaseAll(held)
		goroutines0, bytes0 := runtime.NumGoroutine(), liveBytes()
		server0 := e.srv.infoInt("memory", "used_memory")
		start := time.Now()
		got := acquireAll(e, im, prefix, held, start.Add(e.cfg.acquireBudget))
		rate := float64(n-got.gaveUp) / time.Since(start).Seconds()
		time.Sleep(e.cfg.hold) // the hold being measured; nothing is asserted about its timing
		bytes1 := liveBytes()
		goroutines1 := runtime.NumGoroutine()
		server1 := e.srv.infoInt("memory", "used_memory")
		lost := 0
		for _, h := range held {
			if h == nil {
				continue
			}
			if cause := h.lost(); cause != nil {
				lost++
				e.errs.note(im.name, "keep-alive (first lock lost while held)", cause)
			}
		}
		perLock := float64(max(1, n-got.gaveUp))
		return map[string]float64{
			"kib":        float64(bytes1-bytes0) / perLock / 1024,
			"goroutines": float64(goroutines1 - goroutines0),
			"server":     float64(server1-server0) / perLock,
			"held":       float64(n - got.gaveUp - lost),
			"rate":       rate, "lost": float64(lost), "refused": float64(got.refused),
			"gaveup": float64(got.gaveUp), "errors": float64(got.errors),
		}, nil
	}
}

// liveBytes is the heap in use plus goroutine stacks, after a full GC.
func liveBytes() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc + ms.StackInuse)
}

// acquisitions counts what acquireAll went through.
type acquisitions struct{ refused, gaveUp, errors int }

// acquireAll fills held with locks on prefix+index, from keepAliveWorkers
// goroutines, starting no acquisition after deadline. A key refused
// keepAliveTries times, failed with an error or not reached by the deadline
// is given up: its entry stays nil.
func acquireAll(e *env, im *impl, prefix string, held []heldLock, deadline time.Time) acquisitions {
	var refused, gaveUp, errs atomic.Int64
	var wg sync.WaitGroup
	for w := range keepAliveWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(held); i += keepAliveWorkers {
				if time.Now().After(deadline) {
					gaveUp.Add(int64(len(held)-1-i)/keepAliveWorkers + 1)
					return
				}
				h, err := holdOne(im, prefix+strconv.Itoa(i), &refused)
				if err != nil {
					errs.Add(1)
					e.errs.note(im.name, "keep-alive", err)
				}
				if h == nil {
					gaveUp.Add(1)
				}
				held[i] = h
			}
		}()
	}
	wg.Wait()
	return acquisitions{refused: int(refused.Load()), gaveUp: int(gaveUp.Load()), errors: int(errs.Load())}
}

// holdOne takes a free key with the keep-alive, counting refusals; nil
// after keepAliveTries refusals.
func holdOne(im *impl, key string, refused *atomic.Int64) (heldLock, error) {
	for range keepAliveTries {
		h, err := im.hold(key)
		if err != nil || h != nil {
			return h, err
		}
		refused.Add(1)
	}
	return nil, nil
}

// releaseAll releases every lock held (nil entries are skipped), from
// keepAliveWorkers goroutines; release errors are ignored, expiry cleans up.
func releaseAll(held []heldLock) {
	var wg sync.WaitGroup
	for w := range keepAliveWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(held); i += keepAliveWorkers {
				if held[i] != nil {
					held[i].release() //nolint:errcheck // see the doc comment
					held[i] = nil
				}
			}
		}()
	}
	wg.Wait()
}
