package actor

import (
	"context"
	"slices"
)

// This file lets a package built on the driver (package election) follow a
// key's changes without waiting to acquire it: a KeyWatch is told of every
// invalidation of its key, as the waiters and holders of the push hub are,
// and re-arms the key's tracking with a read on the key's watcher.

// KeyWatch follows the changes of one wire key through the push hub. Its
// methods are safe for concurrent use.
type KeyWatch struct {
	h       *pushHub
	key     string
	changed chan struct{} // cap 1: the key changed (or its watcher ended) since the last Read
	present bool          // the last Read found the key (guarded by the hub's mutex)
}

// WatchKey starts following wireKey's changes, or reports false when push
// is off (Config.Push false): the caller then polls. Stop must follow.
func (d *Driver) WatchKey(wireKey string) (*KeyWatch, bool) {
	h := d.push
	if h == nil {
		return nil, false
	}
	w := &KeyWatch{h: h, key: wireKey, changed: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.observers == nil {
		h.observers = map[string][]*KeyWatch{}
	}
	h.observers[wireKey] = append(h.observers[wireKey], w)
	return w, true
}

// Changed returns the channel that receives a value once the key changed
// since the last Read (a write, a deletion, an expiry), or once the node's
// watcher ended, when any change may have been missed. Only a Read tracks
// the key again: a change that comes before the first Read is not told.
func (w *KeyWatch) Changed() <-chan struct{} { return w.changed }

// Read reads the key (GET) on its node's watcher, which tracks it again,
// so that its next change is told on Changed. It blocks for the round
// trip; an error matching conn.ErrTrackingRefused means the node refused
// tracking (poll instead).
func (w *KeyWatch) Read(ctx context.Context) (value string, found bool, err error) {
	select {
	case <-w.changed: // what a change before this read said, the read sees
	default:
	}
	h := w.h
	_, value, found, err = h.d.transport.WatchRead(ctx, w.key)
	if err != nil {
		return value, found, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !found && w.present {
		// This read may have expired the key itself (a lazy expiry): the
		// server then tells nobody on this watcher, which NOLOOP counts as
		// the writer. Tell the rest of the hub, as the push would have.
		h.notifyObserversLocked(w.key, false, w)
		h.invalidateLocked(w.key, h.keys[w.key])
	}
	w.present = found
	return value, found, nil
}

// Stop stops following the key. It is idempotent.
func (w *KeyWatch) Stop() {
	h := w.h
	h.mu.Lock()
	defer h.mu.Unlock()
	list := slices.DeleteFunc(h.observers[w.key], func(x *KeyWatch) bool { return x == w })
	if len(list) == 0 {
		delete(h.observers, w.key)
	} else {
		h.observers[w.key] = list
	}
}

// notifyObserversLocked tells the watches of key (every watch when all is
// set: the watcher ended or the server flushed), but except, that it
// changed; h.mu is held. It never blocks. The hub's own reads call it too
// when they find the key missing (keyMissingLocked).
func (h *pushHub) notifyObserversLocked(key string, all bool, except *KeyWatch) {
	notify := func(list []*KeyWatch) {
		for _, w := range list {
			if w == except {
				continue
			}
			select {
			case w.changed <- struct{}{}:
			default:
			}
		}
	}
	if !all {
		notify(h.observers[key])
		return
	}
	for _, list := range h.observers {
		notify(list)
	}
}

// keyMissingLocked is what a read of the hub's (a waiter's, a holder's)
// that found key missing tells the watches of key: the read may have
// expired the key itself, which the server then tells nobody on this
// watcher (NOLOOP). h.mu is held.
func (h *pushHub) keyMissingLocked(key string) {
	if len(h.observers[key]) > 0 {
		h.notifyObserversLocked(key, false, nil)
	}
}
