package actor

import "hash/maphash"

// holderTable maps a wire key to the first keep-alive holder of it (the
// others are chained by next): the push hub's held set. It is an
// open-addressing table of *Lock slots with linear probing, keyed by each
// lock's own wireKey, so a slot is one pointer: with 100,000 held locks it
// costs about 10 B a lock where a map[string]*Lock cost about 34 (the key's
// string header and the map's spare room). Not safe for concurrent use;
// the hub's mutex guards it.
type holderTable struct {
	seed  maphash.Seed
	slots []*Lock // len is 0 or a power of two; nil is a free slot
	n     int     // slots in use
	// next chains the holders of one wire key, the latest first: a
	// holder's entry names the one after it, and a holder last in its
	// chain (nearly every lock: one holder per key) has none. A map
	// instead of a pointer in every Lock (8 B a held lock) costs only the
	// keys held more than once (semaphores' permits, readers).
	next map[*Lock]*Lock
}

// nextOf returns the holder after l in its key's chain, nil when none.
func (t *holderTable) nextOf(l *Lock) *Lock { return t.next[l] }

// setNext makes n the holder after l (nil: none).
func (t *holderTable) setNext(l, n *Lock) {
	switch {
	case n != nil && t.next == nil:
		t.next = map[*Lock]*Lock{l: n}
	case n != nil:
		t.next[l] = n
	case t.next != nil:
		delete(t.next, l)
		if len(t.next) == 0 {
			t.next = nil // the room the busiest moment grew goes with it
		}
	}
}

// holderTableMin is the smallest non-empty table.
const holderTableMin = 16

// get returns the first holder of key, nil when none.
func (t *holderTable) get(key string) *Lock {
	if t.n == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		l := t.slots[i]
		if l == nil || l.wireKey == key {
			return l
		}
	}
}

// set makes l the first holder of its wire key, replacing the one there.
func (t *holderTable) set(l *Lock) {
	if 8*(t.n+1) > 7*len(t.slots) {
		t.resize(max(holderTableMin, 2*len(t.slots)))
	}
	mask := len(t.slots) - 1
	for i := t.home(l.wireKey); ; i = (i + 1) & mask {
		switch p := t.slots[i]; {
		case p == nil:
			t.slots[i] = l
			t.n++
			return
		case p.wireKey == l.wireKey:
			t.slots[i] = l
			return
		}
	}
}

// remove drops key's slot, if any. It shifts the slots after it that
// probed past it back (no tombstones), and shrinks a table left at an
// eighth full.
func (t *holderTable) remove(key string) {
	if t.n == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(key)
	for ; t.slots[i] == nil || t.slots[i].wireKey != key; i = (i + 1) & mask {
		if t.slots[i] == nil {
			return
		}
	}
	t.slots[i] = nil
	t.n--
	for j := (i + 1) & mask; t.slots[j] != nil; j = (j + 1) & mask {
		// The slot at j may move back to the hole at i unless its home
		// lies cyclically in (i, j]: then a probe for it never passes i.
		if h := t.home(t.slots[j].wireKey); (j-h)&mask >= (j-i)&mask {
			t.slots[i], t.slots[j] = t.slots[j], nil
			i = j
		}
	}
	if len(t.slots) > holderTableMin && 8*t.n < len(t.slots) {
		t.resize(len(t.slots) / 2)
	}
}

// each calls f with every key in the table; f must not change it.
func (t *holderTable) each(f func(key string)) {
	for _, l := range t.slots {
		if l != nil {
			f(l.wireKey)
		}
	}
}

// home is key's first slot; the table is not empty.
func (t *holderTable) home(key string) int {
	return int(maphash.String(t.seed, key) & uint64(len(t.slots)-1))
}

// resize moves every slot into a table of size slots (a power of two).
func (t *holderTable) resize(size int) {
	if t.slots == nil {
		t.seed = maphash.MakeSeed()
	}
	old := t.slots
	t.slots, t.n = make([]*Lock, size), 0
	for _, l := range old {
		if l != nil {
			t.set(l)
		}
	}
}
