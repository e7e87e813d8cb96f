package lease

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The attribute keys of the metrics and spans. Every value is one of a few
// fixed words (or a node address, or with WithKeyPrefixAttribute a key
// prefix): never a key or a token. Every result — an acquisition's, a
// renewal's, a release's delete, a loss's cause, a session's retirement
// reason, a fence's — is respire.result: one key to group and filter by.
const (
	attrResult     = "respire.result"
	attrCapability = "respire.capability"
	attrKeyPrefix  = "respire.lock.key_prefix"
	attrWait       = "respire.wait"
	attrServerAddr = "server.address"
	attrServerPort = "server.port"
)

// lockCounter names the counters recorded per lock.
type lockCounter uint8

const (
	lockRenewals lockCounter = iota
	lockReleases
	lockLosses
	lockFences
	numLockCounters
)

// instruments are the metric instruments of one New, and the attribute
// options their measurements use, built once per distinct attribute set.
type instruments struct {
	acquisitions    metric.Int64Counter
	acquireDuration metric.Float64Histogram
	held            metric.Int64UpDownCounter
	lateness        metric.Float64Histogram
	lock            [numLockCounters]metric.Int64Counter
	fallbacks       metric.Int64Counter
	sessionsOpened  metric.Int64Counter
	sessionsRetired metric.Int64Counter
	waiters         metric.Int64UpDownCounter
	holdDuration    metric.Float64Histogram

	holds holdStarts // when each held lock was seen held (hold.duration)

	mu    sync.RWMutex
	attrs map[attrKey]*attrOpts
}

// attrKey identifies one attribute set: one word attribute, optionally a
// server, optionally a key prefix.
type attrKey struct {
	key, value string
	server     string // a node address, split into server.address and server.port
	prefixed   bool
	prefix     string
}

// attrOpts are one attribute set as measurement options (no allocation per
// measurement).
type attrOpts struct {
	add []metric.AddOption
	rec []metric.RecordOption
}

// Bucket boundaries, in seconds: a lock command takes about 100 µs on a
// local network, a contended acquisition up to its wait budget.
var (
	acquireBuckets  = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	holdBuckets     = []float64{0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400}
	latenessBuckets = []float64{0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}
)

// newInstruments creates the instruments of the metrics listed in the
// package doc with a meter of provider.
func newInstruments(provider metric.MeterProvider) (*instruments, error) {
	meter := provider.Meter(scope, metric.WithInstrumentationVersion(Version))
	m := &instruments{attrs: map[attrKey]*attrOpts{}, holds: holdStarts{epoch: time.Now()}}
	var errs [13]error
	m.acquisitions, errs[0] = meter.Int64Counter("respire.lock.acquisitions", metric.WithUnit("{acquisition}"),
		metric.WithDescription("Acquisitions of managed locks, by result (acquired, contended, abandoned, failed)."))
	m.acquireDuration, errs[1] = meter.Float64Histogram("respire.lock.acquire.duration", metric.WithUnit("s"),
		metric.WithDescription("Time an acquisition took, waiting for a contended lock included, by result."),
		metric.WithExplicitBucketBoundaries(acquireBuckets...))
	m.held, errs[2] = meter.Int64UpDownCounter("respire.lock.held", metric.WithUnit("{lock}"),
		metric.WithDescription("Managed locks this process holds: +1 when acquired, -1 when the handle sees its lease end."))
	m.lock[lockRenewals], errs[3] = meter.Int64Counter("respire.lock.renewals", metric.WithUnit("{renewal}"),
		metric.WithDescription("Renewals (keep-alive and ResetExpiry) of managed locks, by result."))
	m.lateness, errs[4] = meter.Float64Histogram("respire.lock.renewal.lateness", metric.WithUnit("s"),
		metric.WithDescription("How long after it was due a keep-alive renewal was handed to the connection."),
		metric.WithExplicitBucketBoundaries(latenessBuckets...))
	m.lock[lockReleases], errs[5] = meter.Int64Counter("respire.lock.releases", metric.WithUnit("{release}"),
		metric.WithDescription("Deletes sent by Release and Close of managed locks, by outcome."))
	m.lock[lockLosses], errs[6] = meter.Int64Counter("respire.lock.losses", metric.WithUnit("{loss}"),
		metric.WithDescription("Managed locks whose lease ended other than by a release, by cause."))
	m.lock[lockFences], errs[7] = meter.Int64Counter("respire.fences", metric.WithUnit("{fence}"),
		metric.WithDescription("Fences (CLIENT KILL) of the connection of a lock command whose outcome was unknown, by result."))
	m.fallbacks, errs[8] = meter.Int64Counter("respire.fallbacks", metric.WithUnit("{fallback}"),
		metric.WithDescription("Fallbacks from a native command the server lacks (or an uncached script), by capability and server."))
	m.sessionsOpened, errs[9] = meter.Int64Counter("respire.sessions.opened", metric.WithUnit("{session}"),
		metric.WithDescription("Sessions (pinned connections for lock commands) opened, by server."))
	m.sessionsRetired, errs[10] = meter.Int64Counter("respire.sessions.retired", metric.WithUnit("{session}"),
		metric.WithDescription("Sessions retired, by reason and server."))
	m.waiters, errs[11] = meter.Int64UpDownCounter("respire.lock.waiters", metric.WithUnit("{waiter}"),
		metric.WithDescription("Acquisitions of this process waiting for a lock (WithWait, WithWaitUntilDone), by respire.wait: fair or unfair."))
	m.holdDuration, errs[12] = meter.Float64Histogram("respire.lock.hold.duration", metric.WithUnit("s"),
		metric.WithDescription("How long managed locks were held: from acquired to the handle seeing its lease end, by respire.result (released or lost)."),
		metric.WithExplicitBucketBoundaries(holdBuckets...))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return m, nil
}

// opts returns the measurement options of the attribute set k, building
// them on first use.
func (m *instruments) opts(k attrKey) *attrOpts {
	m.mu.RLock()
	a := m.attrs[k]
	m.mu.RUnlock()
	if a != nil {
		return a
	}
	kvs := make([]attribute.KeyValue, 0, 4)
	if k.key != "" {
		kvs = append(kvs, attribute.String(k.key, k.value))
	}
	if k.server != "" {
		host, port, err := net.SplitHostPort(k.server)
		if err != nil {
			host, port = k.server, ""
		}
		kvs = append(kvs, attribute.String(attrServerAddr, host))
		if n, err := strconv.Atoi(port); err == nil {
			kvs = append(kvs, attribute.Int(attrServerPort, n))
		}
	}
	if k.prefixed {
		kvs = append(kvs, attribute.String(attrKeyPrefix, k.prefix))
	}
	set := metric.WithAttributeSet(attribute.NewSet(kvs...))
	a = &attrOpts{add: []metric.AddOption{set}, rec: []metric.RecordOption{set}}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.attrs[k]; old != nil {
		return old
	}
	m.attrs[k] = a
	return a
}

// viewAttrs are the options of the attribute key=value, plus the view's
// key prefix with WithKeyPrefixAttribute. Only called with metrics on.
func (o *observer) viewAttrs(prefix, key, value string) *attrOpts {
	k := attrKey{key: key, value: value, prefixed: o.prefixAttr}
	if o.prefixAttr {
		k.prefix = prefix
	}
	return o.metrics.opts(k)
}

// lockAttrs are viewAttrs for the view that acquired l.
func (o *observer) lockAttrs(l *Lock, key, value string) *attrOpts {
	return o.viewAttrs(l.core().Prefix(), key, value)
}

// serverAttrs are the options of the attribute key=value (if any) and the
// server node.
func (o *observer) serverAttrs(node, key, value string) *attrOpts {
	return o.metrics.opts(attrKey{key: key, value: value, server: node})
}

// countLock adds one to the counter c of lock l with key=value.
func (o *observer) countLock(l *Lock, c lockCounter, key, value string) {
	if o.metrics != nil {
		o.metrics.lock[c].Add(context.Background(), 1, o.lockAttrs(l, key, value).add...)
	}
}

// addHeld moves the held-locks counter of l's view by n, and records
// how long l was held when it ends (released true: by a release).
func (o *observer) addHeld(l *Lock, n int64) {
	if o.metrics != nil {
		o.metrics.held.Add(context.Background(), n, o.lockAttrs(l, "", "").add...)
		if n > 0 {
			o.metrics.holds.start(l)
		}
	}
}

// holdEnded records l's hold time (respire.result released or lost).
func (o *observer) holdEnded(l *Lock, released bool) {
	if o.metrics == nil {
		return
	}
	held, ok := o.metrics.holds.end(l)
	if !ok {
		return
	}
	result := "lost"
	if released {
		result = "released"
	}
	o.metrics.holdDuration.Record(context.Background(), held.Seconds(),
		o.lockAttrs(l, attrResult, result).rec...)
}

// addWaiters moves the waiters gauge of the view with prefix by n.
func (o *observer) addWaiters(prefix string, fair bool, n int64) {
	wait := "unfair"
	if fair {
		wait = "fair"
	}
	o.metrics.waiters.Add(context.Background(), n, o.viewAttrs(prefix, attrWait, wait).add...)
}
