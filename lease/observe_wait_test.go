package lease

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/respire-go/respire/sim"
)

// TestWaitMetrics_WaitersGaugeAndHoldTime: with metrics, a fair waiter
// and an unfair waiter behind a holder are counted by respire.lock.waiters
// (respire.wait fair and unfair) while they wait, and no longer once they
// returned; each hold's end records respire.lock.hold.duration with
// respire.result released, and the view's key prefix with
// WithKeyPrefixAttribute.
func TestWaitMetrics_WaitersGaugeAndHoldTime(t *testing.T) {
	tel := newTelemetry(t)
	_, root := managedSim(t, sim.Redis84, tel.options(WithKeyPrefixAttribute())...)
	locks := root.WithKeyPrefix("jobs:")
	ctx := ctxT(t)
	holder, err := locks.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := locks.Acquire(ctx, "k2", time.Minute)
	if err != nil || k2 == nil {
		t.Fatalf("k2: %v", err)
	}
	done := make(chan *Lock, 2)
	for _, opts := range [][]AcquireOption{{WithWaitUntilDone()}, {WithWaitUntilDone(), WithFairWait()}} {
		go func() {
			l, err := locks.Acquire(ctx, "k2", time.Minute, opts...)
			if err != nil {
				t.Error(err)
			}
			done <- l
		}()
	}
	eventually(t, "two waiters counted", func() bool {
		return tel.sum(t, "respire.lock.waiters", str(attrWait, "fair"), str(attrKeyPrefix, "jobs:")) == 1 &&
			tel.sum(t, "respire.lock.waiters", str(attrWait, "unfair")) == 1
	})
	if _, err := k2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		l := <-done
		if _, err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := tel.sum(t, "respire.lock.waiters"); n != 0 {
		t.Fatalf("waiters after both returned = %d; want 0", n)
	}
	if _, err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	m, ok := tel.metric(t, "respire.lock.hold.duration")
	if !ok {
		t.Fatal("no respire.lock.hold.duration")
	}
	var holds uint64
	for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
		if has(dp.Attributes, []attribute.KeyValue{str(attrResult, "released"), str(attrKeyPrefix, "jobs:")}) {
			holds += dp.Count
		}
	}
	if holds != 4 {
		t.Fatalf("hold.duration released = %d holds; want 4", holds)
	}
}
