package lease

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// LockKind says what a listed lock is.
type LockKind string

// The kinds of lock Locks.List reports.
const (
	KindMutex     LockKind = "mutex"     // a key of Acquire, TryAcquire, Do…
	KindSemaphore LockKind = "semaphore" // Locks.Semaphore
	KindRWLock    LockKind = "rwlock"    // Locks.RWLock
)

// LockInfo is what Locks.List tells about one lock. It never holds an
// owner token, nor any part of one, so it may be printed and logged.
type LockInfo struct {
	// Key is the mutex's key, or the semaphore's or read/write lock's
	// name, as this view names it (without the view's prefix).
	Key  string
	Kind LockKind
	// Owner is the holder's owner label (WithOwner) of a mutex or of a
	// read/write lock's writer; "" when it set none or nobody holds it.
	Owner string
	// Held reports a live holder: the mutex's owner, the writer, or at
	// least one permit or reader.
	Held bool
	// Reserved reports a mutex (or writer hold) granted to a fair waiter
	// that has not claimed it yet (WithFairWait).
	Reserved bool
	// WriterWaiting reports a read/write lock whose writer waits with its
	// marker set (new readers are refused).
	WriterWaiting bool
	// Remaining is the lease left on the server when it was read: the
	// mutex's or the writer's; for permits and readers, the first of
	// their leases to end. 0 with NoExpiry.
	Remaining time.Duration
	// NoExpiry reports a key without an expiry (not a lease).
	NoExpiry bool
	// Holders counts a semaphore's live permits or a read/write lock's
	// live readers.
	Holders int
	// Limit is a semaphore's stored limit (0 when none is stored: no live
	// permit).
	Limit int
	// Waiters counts the fair waiters queued (WithFairWait) whose waiter
	// lease has not ended. Non-fair waiters are not queued, so not counted.
	Waiters int
	// Overtaken counts, for a mutex, the non-fair acquisitions that took
	// it ahead of its fair waiters since its queue formed.
	Overtaken int
}

// DefaultListLimit is how many locks List reports at most unless
// WithListLimit says otherwise.
const DefaultListLimit = 1000

// ListOption configures one Locks.List.
type ListOption func(*listOptions)

type listOptions struct{ limit int }

// WithListLimit bounds how many locks List reports (and so how many keys
// it reads): at most n, n ≥ 1 (a smaller n is rejected with
// ErrInvalidOption). Default DefaultListLimit.
func WithListLimit(n int) ListOption { return func(o *listOptions) { o.limit = n } }

// ErrListTruncated is returned (with the locks found so far) when List
// found more locks than its limit (WithListLimit).
var ErrListTruncated = errors.New("more locks match than the list's limit")

// scanCount is the COUNT hint of each SCAN step.
const scanCount = 256

// List reports the locks of this view whose keys match pattern (a Redis
// glob over the key or name after the view's prefix, "*" for every lock),
// sorted by kind then key: for each, its owner label, the lease it has
// left, its fair waiters, and for semaphores and read/write locks their
// holders and limit — never a token. It walks the keyspace with SCAN on
// every primary (the one node, Sentinel's primary, every cluster primary),
// on each node's fence connection, then reads each lock it found with
// read-only scripts on its session: about five round trips per lock, so
// it is a tool for operators and dashboards, not for a hot path. It stops
// at ctx's end or after the limit (ErrListTruncated, with the locks found
// so far). A lock may change between the reads; what List reports is
// each key as it was when read. Needs +scan and, in scripts, +type +get
// +pttl +zcount +zscore +zrangebyscore +time.
func (l *Locks) List(ctx context.Context, pattern string, opts ...ListOption) ([]LockInfo, error) {
	o := listOptions{limit: DefaultListLimit}
	for _, opt := range opts {
		opt(&o)
	}
	if o.limit < 1 {
		return nil, opError("List", pattern, fmt.Errorf("%w: list limit %d must be at least 1", ErrInvalidOption, o.limit))
	}
	if pattern == "" {
		pattern = "*"
	}
	nodes, err := l.core.transport.Primaries(ctx)
	if err != nil {
		return nil, opError("List", pattern, err)
	}
	w := lister{l: l, limit: o.limit, seen: map[string]bool{}}
	for _, node := range nodes {
		if err := w.walk(ctx, node, l.prefix+pattern); err != nil {
			slices.SortFunc(w.out, compareInfo)
			return w.out, opError("List", pattern, err)
		}
	}
	slices.SortFunc(w.out, compareInfo)
	return w.out, nil
}

func compareInfo(a, b LockInfo) int {
	if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
		return c
	}
	return strings.Compare(a.Key, b.Key)
}

// lister is one List's walk.
type lister struct {
	l     *Locks
	limit int
	seen  map[string]bool // read/write locks' stems already described
	out   []LockInfo
}

// walk SCANs node to the end and describes each lock key it finds.
func (w *lister) walk(ctx context.Context, node, match string) error {
	var cursor uint64
	for {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		next, keys, err := w.l.core.transport.Scan(ctx, node, cursor, match, scanCount)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := w.describe(ctx, k); err != nil {
				return err
			}
			if len(w.out) > w.limit {
				w.out = w.out[:w.limit]
				return ErrListTruncated
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}
