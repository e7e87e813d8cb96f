package lease

import (
	"context"
	"strings"
	"time"

	"github.com/respire-go/respire/conn"
)

// describe reads the lock wireKey belongs to and adds it to w.out, once:
// a mutex's key, a semaphore's holders (P{N}:sem), a read/write lock's
// writer (P{N}:w) or readers (P{N}:r). Fair queues' keys and keys of
// other types are skipped; so is a key that ended since the SCAN. A mutex
// whose key has the form "{N}:sem", "{N}:w" or "{N}:r" is read as the
// semaphore or read/write lock of that name.
func (w *lister) describe(ctx context.Context, wireKey string) error {
	name, ok := strings.CutPrefix(wireKey, w.l.prefix)
	if !ok || strings.HasSuffix(name, conn.FairQueueSuffix) || strings.HasSuffix(name, conn.FairLeasesSuffix) {
		return nil
	}
	kind, err := w.l.count(ctx, conn.KeyKindOp(wireKey))
	if err != nil || (kind != conn.KeyKindString && kind != conn.KeyKindZSet) {
		return err
	}
	if stem, suffix, ok := primitiveName(name); ok {
		switch {
		case suffix == ":sem" && kind == conn.KeyKindZSet:
			return w.semaphore(ctx, stem, wireKey)
		case suffix == ":w" && kind == conn.KeyKindString, suffix == ":r" && kind == conn.KeyKindZSet:
			return w.rwlock(ctx, stem, wireKey)
		}
	}
	if kind != conn.KeyKindString {
		return nil
	}
	return w.mutex(ctx, name, wireKey)
}

// primitiveName splits "{N}:sem", "{N}:w" or "{N}:r" into N and the
// suffix.
func primitiveName(name string) (stem, suffix string, ok bool) {
	for _, suffix := range []string{":sem", ":w", ":r"} {
		if rest, found := strings.CutSuffix(name, suffix); found && len(rest) > 2 &&
			rest[0] == '{' && rest[len(rest)-1] == '}' {
			return rest[1 : len(rest)-1], suffix, true
		}
	}
	return "", "", false
}

// mutex describes a mutex's key.
func (w *lister) mutex(ctx context.Context, name, wireKey string) error {
	h, value, found, err := w.l.readOwner(ctx, wireKey)
	if err != nil || !found {
		return err
	}
	info := LockInfo{Key: name, Kind: KindMutex, Owner: h.Label, Held: value == valueToken,
		Reserved: value == valueReserved, Remaining: h.Remaining, NoExpiry: h.NoExpiry}
	if q, err := conn.FairMutexQueue(wireKey); err == nil {
		if info.Waiters, err = w.l.count(ctx, q.WaitersOp()); err != nil {
			return err
		}
		if info.Overtaken, err = w.l.count(ctx, q.OvertakenOp()); err != nil {
			return err
		}
	}
	w.out = append(w.out, info)
	return nil
}

// semaphore describes a semaphore by its holders key.
func (w *lister) semaphore(ctx context.Context, name, holdersKey string) error {
	sem := conn.SemaphoreOfHolders(holdersKey, 1)
	info := LockInfo{Key: name, Kind: KindSemaphore}
	var err error
	if info.Holders, err = w.l.count(ctx, sem.HoldersOp()); err != nil {
		return err
	}
	if info.Limit, err = w.l.count(ctx, sem.LimitOp()); err != nil {
		return err
	}
	if info.Remaining, err = w.nextEnd(ctx, holdersKey); err != nil {
		return err
	}
	if info.Waiters, err = w.l.count(ctx, sem.Queue().WaitersOp()); err != nil {
		return err
	}
	info.Held = info.Holders > 0
	w.out = append(w.out, info)
	return nil
}

// rwlock describes a read/write lock by either of its keys, once.
func (w *lister) rwlock(ctx context.Context, name, wireKey string) error {
	if w.seen[name] {
		return nil
	}
	w.seen[name] = true
	rw := conn.RWLockOfKey(wireKey)
	info := LockInfo{Key: name, Kind: KindRWLock}
	h, value, found, err := w.l.readOwner(ctx, rw.WriterKey)
	if err != nil {
		return err
	}
	if found {
		info.Owner, info.Remaining, info.NoExpiry = h.Label, h.Remaining, h.NoExpiry
		info.Held, info.Reserved, info.WriterWaiting = value == valueToken, value == valueReserved, value == valueMarker
	}
	if info.Holders, err = w.l.count(ctx, rw.ReadersOp()); err != nil {
		return err
	}
	if info.Holders > 0 && !info.Held {
		info.Held = true
		if info.Remaining, err = w.nextEnd(ctx, rw.ReadersKey); err != nil {
			return err
		}
	}
	if info.Waiters, err = w.l.count(ctx, rw.Queue().WaitersOp()); err != nil {
		return err
	}
	w.out = append(w.out, info)
	return nil
}

// nextEnd reads how long until the first live holder's lease of a
// holders set ends.
func (w *lister) nextEnd(ctx context.Context, holdersKey string) (time.Duration, error) {
	ms, err := w.l.count(ctx, conn.NextEndOp(holdersKey))
	return time.Duration(ms) * time.Millisecond, err
}
