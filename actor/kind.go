package actor

import "github.com/respire-go/respire/conn"

// This file is what differs between the kinds of lease a handle can hold:
// which commands acquire, renew, release and read it back. Everything else
// — the state graph, the keep-alive, fences, settling, clean-ups, push —
// is the same for all of them.

// Kind is what a lock handle holds. A Lock keeps one key, its wire key;
// the kind says what that key is and how its lease is handled on the
// server (conn's scripts and key names).
type Kind uint8

// The kinds of lease.
const (
	// KindMutex is a lease key of its own (SET NX PX): the zero value.
	KindMutex Kind = iota
	// KindPermit is a semaphore permit: the token is a member of the
	// semaphore's holders set (the wire key, conn.Semaphore.HoldersKey),
	// scored with its lease end on the server's clock.
	KindPermit
	// KindRead is a read hold of a read/write lock: the token is a member
	// of its readers set (the wire key, conn.RWLock.ReadersKey).
	KindRead
	// KindWrite is the write hold of a read/write lock: the writer key
	// (the wire key, conn.RWLock.WriterKey) holds the token, renewed and
	// released as a mutex's key is.
	KindWrite
)

// String names the kind.
func (k Kind) String() string {
	switch k.base() {
	case KindMutex:
		return "mutex"
	case KindPermit:
		return "permit"
	case KindRead:
		return "read"
	case KindWrite:
		return "write"
	}
	return "unknown"
}

// member reports whether the lease is a member of a sorted set (a permit,
// a read hold) rather than a key's value.
func (k Kind) member() bool { k = k.base(); return k == KindPermit || k == KindRead }

// Kind returns what the lock holds. It does not block.
func (l *Lock) Kind() Kind { return l.kind.base() }

// setKind records the lock's kind; l is not shared yet.
func (l *Lock) setKind(k Kind) { l.kind = k }

// leaseRef names one lease on the server: the key it lives under, the
// owner token (or, for a waiting writer's marker, the marker's value) and
// how it is handled (its kind). It is a small value.
type leaseRef struct {
	key, token string
	kind       Kind
}

// ref returns the lock's lease.
func (l *Lock) ref() leaseRef { return leaseRef{key: l.wireKey, token: l.token, kind: l.kind} }

// markerOf returns the waiting marker a writer trying with token may have
// left in the writer key writerKey: a mutex-like value ("waiting:" +
// token), read with GET and deleted with the compare-and-delete
// (conn.RWLock.AbandonWaitOp).
func markerOf(writerKey, token string) leaseRef {
	return leaseRef{key: writerKey, token: conn.WaitingMarker(token), kind: KindMutex}
}

// renew returns the renewal of the lease to ms from now.
func (r leaseRef) renew(ms int64) conn.Op {
	switch r.kind.base() {
	case KindPermit:
		return conn.SemaphoreOfHolders(r.key, 0).RenewOp(r.token, ms)
	case KindRead:
		return conn.RWLockOfKey(r.key).ReadRenewOp(r.token, ms)
	}
	return conn.ExtendOp(r.key, r.token, ms)
}

// release returns the compare-and-delete of the lease; a fair hold's is
// its queue's release, which hands the lock on at once.
func (r leaseRef) release() conn.Op {
	if r.fair() {
		return fairResource(r.key, r.kind, 0).ReleaseOp(r.token)
	}
	switch r.kind {
	case KindPermit:
		return conn.SemaphoreOfHolders(r.key, 0).ReleaseOp(r.token)
	case KindRead:
		return conn.RWLockOfKey(r.key).ReadReleaseOp(r.token)
	}
	return conn.ReleaseOp(r.key, r.token)
}

// read returns the read of the lease that changes nothing: GET of a key,
// the lease read of a member.
func (r leaseRef) read() conn.Op {
	switch r.kind.base() {
	case KindPermit:
		return conn.SemaphoreOfHolders(r.key, 0).LeaseOp(r.token)
	case KindRead:
		return conn.RWLockOfKey(r.key).ReadLeaseOp(r.token)
	}
	return conn.OwnerOp(r.key)
}

// fair reports whether the lease is a fair hold, released through its
// queue.
func (r leaseRef) fair() bool { return r.kind&kindFair != 0 }

// held reports whether read's answer shows the token holding the lease: the
// key holds it, or the member is live by the server's clock.
func (r leaseRef) held(res conn.Result) bool {
	if r.kind.member() {
		return res.Owned
	}
	return res.Owned && res.Token == r.token
}

// acquireOp returns the acquisition of one try with token for ms: SET NX
// PX, or the semaphore's, the reader's or the writer's script (a writer
// waiting for readers sets its marker for markerMs), or, for a fair
// acquisition, the queue's try (a single one when the caller does not
// wait).
func (s *AcquireSpec) acquireOp(token string, ms, markerMs int64) conn.Op {
	if s.Fair != nil {
		once := s.Wait <= 0 && !s.UntilDone
		return s.fairResource().TryOp(token, ms, s.Fair.waiterMillis(), once)
	}
	switch s.Kind {
	case KindPermit:
		return conn.SemaphoreOfHolders(s.WireKey, s.Limit).AcquireOp(token, ms)
	case KindRead:
		return conn.RWLockOfKey(s.WireKey).ReadAcquireOp(token, ms)
	case KindWrite:
		return conn.RWLockOfKey(s.WireKey).WriteAcquireOp(token, ms, markerMs)
	}
	return conn.AcquireOp(s.WireKey, token, ms)
}
