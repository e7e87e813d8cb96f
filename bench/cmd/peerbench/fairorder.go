package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
)

// The fair-order scenario (issue 31): the 64-waiter hand-off of
// respire-go-fair again, with a watcher that reads the key's queue on the
// server (ZRANGE of its tickets, on a connection of its own) as fast as it
// can. A waiter leaves the queue when it is granted the key (the release's
// or a try's script dequeues the head), or when its waiter lease ended or
// it gave up; in this run nobody gives up before the end and every waiter
// lease is renewed. So between two reads every waiter that left must have
// had a smaller ticket than every waiter that stayed: the grants went in
// ticket order. A separate run from handoff-64 because the watcher's reads
// load the server and the host: its latency is not reported.

// fairOrderWaiters is the scenario's waiters, as handoff-64's.
const fairOrderWaiters = 64

func fairOrderScenario(cfg config) *scenario {
	return &scenario{
		id: "fair-order", family: "fair-order", firstModeOnly: true, base: "respire-go-fair",
		only: func(im implInfo) bool { return im.name == "respire-go-fair" }, skip: "no fair waiting",
		title: fmt.Sprintf("fair waiting: grant order against ticket order, %d waiters on one key", fairOrderWaiters),
		about: fmt.Sprintf("the %d-waiter hand-off of respire-go-fair (hold %v, %d hand-offs) while a watcher reads the key's "+
			"queue on the server (ZRANGE … WITHSCORES of the tickets, its own connection, as fast as it can); between two "+
			"reads, each waiter that left the queue (granted) must have had a smaller ticket than each waiter that stayed. "+
			"Left the queue: the waiters seen leaving; out of ticket order: those that left while a waiter with a smaller "+
			"ticket stayed. Latency is not reported (the watcher loads the server).",
			fairOrderWaiters, cfg.waiting.handoffHold, cfg.waiting.handoffs),
		target: &target{impl: "respire-go-fair", metric: "disorder", max: 0, unit: "grants", worst: true,
			what: "respire-go-fair grants every hand-off in ticket order (no waiter leaves the queue before one with a smaller ticket)"},
		metrics: []metric{{key: "left", header: "left the queue", total: true},
			{key: "disorder", header: "out of ticket order", total: true},
			{key: "reads", header: "queue reads", total: true},
			{key: "handoffs", header: "hand-offs", total: true},
			{key: "overlaps", header: "overlaps", total: true}, {key: "errors", header: "errors", total: true}},
		run: runFairOrder,
	}
}

func runFairOrder(e *env, im *impl, rep int) (map[string]float64, error) {
	key := fmt.Sprintf("%s%s:fairorder:%d", e.prefix, im.name, rep)
	queue, err := conn.FairMutexQueue(key)
	if err != nil {
		return nil, err
	}
	client, err := rueidis.NewClient(rueidisOption(e.srv))
	if err != nil {
		return nil, err
	}
	defer client.Close()
	var ended atomic.Bool
	w := &queueWatch{client: client, queue: queue.QueueKey, ended: &ended}
	var wg sync.WaitGroup
	wg.Go(w.run)
	vals, err := handoffOn(e, im, key, fairOrderWaiters, &ended)
	ended.Store(true)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if w.err != nil {
		return nil, w.err
	}
	return map[string]float64{"left": float64(w.left), "disorder": float64(w.disorder), "reads": float64(w.reads),
		"handoffs": vals["handoffs"], "overlaps": vals["overlaps"], "errors": vals["errors"]}, nil
}

// queueWatch reads a fair queue until ended and checks that waiters leave
// it in ticket order.
type queueWatch struct {
	client rueidis.Client
	queue  string
	ended  *atomic.Bool

	prev                  map[string]float64 // the last read's waiters and tickets
	reads, left, disorder int
	err                   error
}

func (w *queueWatch) run() {
	for !w.ended.Load() {
		zs, err := w.client.Do(context.Background(), w.client.B().Zrange().Key(w.queue).Min("0").Max("-1").
			Withscores().Build()).AsZScores()
		if w.ended.Load() { // the read may have seen a waiter that gave up at the end
			return
		}
		if err != nil {
			w.err = fmt.Errorf("fair-order: reading the queue: %w", err)
			return
		}
		w.compare(zs)
		time.Sleep(50 * time.Microsecond)
	}
}

// compare checks the read cur against the one before: every waiter that
// left must have a smaller ticket than every one that stayed. Only
// positive scores are waiters' tickets (the queue's counters are negative).
func (w *queueWatch) compare(cur []rueidis.ZScore) {
	w.reads++
	now := make(map[string]float64, len(cur))
	for _, z := range cur {
		if z.Score > 0 {
			now[z.Member] = z.Score
		}
	}
	minStayed := -1.0
	for m, s := range w.prev {
		if _, ok := now[m]; ok && (minStayed < 0 || s < minStayed) {
			minStayed = s
		}
	}
	for m, s := range w.prev {
		if _, ok := now[m]; !ok {
			w.left++
			if minStayed >= 0 && s > minStayed {
				w.disorder++
			}
		}
	}
	w.prev = now
}
