package lease

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/respire-go/respire/conn"
	sm "github.com/respire-go/respire/statemachine"
)

// The log events (WithLogger): one record per state change that matters to
// an operator. No record shows a token; keys appear only with
// WithKeysInLogs. Warnings are rate-limited per Locks: at most one per
// message and cause per warnInterval, the next one saying how many were
// suppressed in between.
const (
	msgAcquired        = "lease: acquired"
	msgLost            = "lease: lock lost"
	msgFenced          = "lease: lock command fenced"
	msgReleaseRefused  = "lease: release refused"
	msgReleaseUnknown  = "lease: release outcome unknown"
	msgSessionRetired  = "lease: session retired"
	msgFallbackLearned = "lease: fallback learned"
)

// warnInterval is the least time between two warnings of one message and
// cause.
const warnInterval = time.Second

// eventLog writes the log events of one New.
type eventLog struct {
	logger *slog.Logger
	keys   bool // WithKeysInLogs
	limit  limiter
}

func newEventLog(logger *slog.Logger, keys bool) *eventLog {
	return &eventLog{logger: logger, keys: keys, limit: limiter{now: monotonic, last: map[string]*limitState{}}}
}

// enabled reports whether a record at level would be written; false on a
// nil eventLog.
func (e *eventLog) enabled(level slog.Level) bool {
	return e != nil && e.logger.Enabled(context.Background(), level)
}

// keyAttr appends the key attribute when WithKeysInLogs asked for it.
func (e *eventLog) keyAttr(attrs []slog.Attr, wireKey string) []slog.Attr {
	if e.keys {
		attrs = append(attrs, slog.String("key", wireKey))
	}
	return attrs
}

// acquired logs an acquisition (debug).
func (e *eventLog) acquired(wireKey string, ttl time.Duration, keepAlive bool, waited time.Duration) {
	if !e.enabled(slog.LevelDebug) {
		return
	}
	attrs := e.keyAttr(make([]slog.Attr, 0, 4), wireKey)
	// Durations as text ("2s", "1.5ms"), not a handler's nanoseconds.
	attrs = append(attrs, slog.String("ttl", ttl.String()), slog.Bool("keep_alive", keepAlive),
		slog.String("waited", waited.Round(time.Microsecond).String()))
	e.logger.LogAttrs(context.Background(), slog.LevelDebug, msgAcquired, attrs...)
}

// fenced logs the answer to a fence of one of l's commands (warn).
func (e *eventLog) fenced(l *Lock, result string, err error) {
	if !e.enabled(slog.LevelWarn) {
		return
	}
	attrs := []slog.Attr{slog.String("result", result)}
	if err != nil {
		attrs = append(attrs, slog.Any("error", err))
	}
	e.warn(msgFenced, result, e.keyAttr(attrs, l.core().WireKey()))
}

// sessionRetired logs a retired session (debug).
func (e *eventLog) sessionRetired(node string, reason conn.RetireReason) {
	if e.enabled(slog.LevelDebug) {
		e.logger.LogAttrs(context.Background(), slog.LevelDebug, msgSessionRetired,
			slog.String("reason", reason.String()), slog.String("server", node))
	}
}

// fallbackLearned logs that a session learned to fall back (info; once per
// session and capability).
func (e *eventLog) fallbackLearned(node string, f conn.Fallback) {
	if e.enabled(slog.LevelInfo) {
		e.logger.LogAttrs(context.Background(), slog.LevelInfo, msgFallbackLearned,
			slog.String("capability", f.String()), slog.String("server", node))
	}
}

// warn writes a rate-limited warning.
func (e *eventLog) warn(msg, cause string, attrs []slog.Attr) {
	ok, suppressed := e.limit.allow(msg + "\x00" + cause)
	if !ok {
		return
	}
	if suppressed > 0 {
		attrs = append(attrs, slog.Int64("suppressed", suppressed))
	}
	e.logger.LogAttrs(context.Background(), slog.LevelWarn, msg, attrs...)
}

// releaseWarning logs a release that did not delete the lock (warn): the
// key was not ours, the server refused the delete, or its outcome is
// unknown. l.mu is held, so the record is written on a background
// goroutine (Locks.Close waits for it).
func (o *observer) releaseWarning(l *Lock, outcome string, err error) {
	if !o.log.enabled(slog.LevelWarn) {
		return
	}
	msg := msgReleaseRefused
	if outcome == "unknown" {
		msg = msgReleaseUnknown
	}
	attrs := []slog.Attr{slog.String("outcome", outcome)}
	if err != nil {
		attrs = append(attrs, slog.Any("error", err))
	}
	attrs = o.log.keyAttr(attrs, l.core().WireKey())
	l.core().Driver().GoBackground(func() { o.log.warn(msg, outcome, attrs) })
}

// lossWarning logs a lost lock (warn) with its cause and the edge of the
// state graph that lost it; l.mu is held (see releaseWarning).
func (o *observer) lossWarning(l *Lock, cause string, edge sm.Event, err error) {
	if !o.log.enabled(slog.LevelWarn) {
		return
	}
	attrs := []slog.Attr{slog.String("cause", cause)}
	if edge < sm.NumEvents {
		attrs = append(attrs, slog.String("event", edge.String()))
	}
	if err != nil {
		attrs = append(attrs, slog.Any("error", err))
	}
	attrs = o.log.keyAttr(attrs, l.core().WireKey())
	l.core().Driver().GoBackground(func() { o.log.warn(msgLost, cause, attrs) })
}

// limiter lets one event per key through per warnInterval and counts the
// ones it holds back. It is safe for concurrent use.
type limiter struct {
	now  func() time.Duration
	mu   sync.Mutex
	last map[string]*limitState
}

type limitState struct {
	at         time.Duration // when the last one was let through
	suppressed int64         // held back since
}

// allow reports whether an event of key may be written now, and how many
// were held back since the last one that was.
func (r *limiter) allow(key string) (bool, int64) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.last[key]
	if st == nil {
		r.last[key] = &limitState{at: now}
		return true, 0
	}
	if now-st.at < warnInterval {
		st.suppressed++
		return false, 0
	}
	n := st.suppressed
	st.at, st.suppressed = now, 0
	return true, n
}

var monoStart = time.Now()

// monotonic is the time since the process started, on the monotonic clock.
func monotonic() time.Duration { return time.Since(monoStart) }
