package conn

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
)

// This file is the protocol of fair waiting (lease.WithFairWait): the keys
// of a lock's queue and the Ops of its scripts (fair_scripts.go). A fair
// waiter takes a ticket from the queue's counter on the server, keeps a
// short waiter lease of its own (renewed in the keep-alive batches), and is
// granted the lock only at the head of the queue (a semaphore: among the
// first limit − live), as a reservation in the lock that it then claims.

// FairQueue names the two keys of a lock's fair queue: QueueKey (the
// tickets) and LeasesKey (the waiter leases), both in the lock's hash slot.
type FairQueue struct {
	QueueKey, LeasesKey string
}

// The suffixes of a queue's keys after its base (the mutex's key, or
// "{" + key + "}" when the key has no hash tag of its own; a semaphore's
// holders key; a read/write lock's writer key).
const (
	FairQueueSuffix  = ":fair:q"
	FairLeasesSuffix = ":fair:l"
)

// ErrFairKey is a mutex key whose fair queue could not live in its hash
// slot: a key with a "}" but no hash tag (its slot hashes the whole key,
// and no other key can name the same slot by a tag). Nothing is sent.
var ErrFairKey = errors.New("a key with '}' and no hash tag of its own cannot have a fair queue in its cluster slot")

// FairMutexQueue returns the queue of the mutex key wireKey (with the
// view's prefix): its base is the key itself when it has a hash tag, else
// "{" + key + "}", whose tag is the whole key, so that the queue hashes to
// the key's slot. ErrFairKey when neither works. It sends nothing.
func FairMutexQueue(wireKey string) (FairQueue, error) {
	base := wireKey
	if !hasHashTag(wireKey) {
		if strings.IndexByte(wireKey, '}') >= 0 {
			return FairQueue{}, ErrFairKey
		}
		base = "{" + wireKey + "}"
	}
	return FairQueue{QueueKey: base + FairQueueSuffix, LeasesKey: base + FairLeasesSuffix}, nil
}

// hasHashTag reports whether key has a non-empty hash tag: text between
// its first "{" and the first "}" after it.
func hasHashTag(key string) bool {
	open := strings.IndexByte(key, '{')
	return open >= 0 && strings.IndexByte(key[open+1:], '}') > 0
}

// Queue returns the semaphore's fair queue.
func (s Semaphore) Queue() FairQueue { return queueAfter(s.HoldersKey) }

// Queue returns the read/write lock's fair queue.
func (l RWLock) Queue() FairQueue { return queueAfter(l.WriterKey) }

func queueAfter(base string) FairQueue {
	return FairQueue{QueueKey: base + FairQueueSuffix, LeasesKey: base + FairLeasesSuffix}
}

// FairReservation is the value (a mutex's or writer's key) or member (a
// semaphore's holders, a lock's readers) that grants the lock to the
// waiter with token until the waiter claims it.
func FairReservation(token string) string { return FairReservationPrefix + token }

// FairReservationPrefix begins every reservation.
const FairReservationPrefix = "fair:"

// FairResource is what a fair queue stands in front of, as the fair Ops
// need it: the lock's keys and its kind.
type FairResource struct {
	kind  fairKind
	keys  []string // the lock's keys, then the queue's
	limit int      // a semaphore's limit
}

type fairKind uint8

const (
	fairMutex fairKind = iota + 1
	fairSemaphore
	fairRead
	fairWrite
)

// FairMutex is the fair queue of the mutex key wireKey (see
// FairMutexQueue; ErrFairKey for a key that cannot have one).
func FairMutex(wireKey string) (FairResource, error) {
	q, err := FairMutexQueue(wireKey)
	if err != nil {
		return FairResource{}, err
	}
	return FairResource{kind: fairMutex, keys: []string{wireKey, q.QueueKey, q.LeasesKey}}, nil
}

// Fair is the fair queue of the semaphore's permits (limit: s.Limit, 0
// for a FairResource that only renews, releases and counts).
func (s Semaphore) Fair() FairResource {
	q := s.Queue()
	return FairResource{kind: fairSemaphore, keys: []string{s.HoldersKey, q.QueueKey, q.LeasesKey}, limit: s.Limit}
}

// Fair is the fair queue of the read/write lock, for read holds (write
// false) or the write hold.
func (l RWLock) Fair(write bool) FairResource {
	q := l.Queue()
	kind := fairRead
	if write {
		kind = fairWrite
	}
	return FairResource{kind: kind, keys: []string{l.WriterKey, l.ReadersKey, q.QueueKey, q.LeasesKey}}
}

// Queue returns the resource's queue keys.
func (r FairResource) Queue() FairQueue {
	n := len(r.keys)
	return FairQueue{QueueKey: r.keys[n-2], LeasesKey: r.keys[n-1]}
}

// TryOp is one try of the waiter token (a fresh owner token, kept for
// every try while it waits) for a hold of ttlMillis, with a waiter lease
// of waiterMillis: Result.Owned, the token holds the lock; Result.Waiting,
// it is queued at position Result.Holders (1 is the head). once makes a
// single try that does not queue: it takes the lock only when it is free
// and nobody is queued (neither Owned nor Waiting otherwise). A semaphore's
// limit is checked as by Semaphore.AcquireOp (LIMITMISMATCH).
func (r FairResource) TryOp(token string, ttlMillis, waiterMillis int64, once bool) Op {
	args := []string{token, millis(ttlMillis), millis(waiterMillis)}
	c := &primitiveCall{kind: primFairTry, keys: r.keys, invalid: checkHolderToken(token)}
	switch r.kind {
	case fairMutex:
		c.name, c.script = "fair-acquire", FairMutexTryScript
		c.invalid = nil
	case fairSemaphore:
		c.name, c.script, c.limit = "fair-semaphore-acquire", FairSemaphoreTryScript, r.limit
		args = append(args, strconv.Itoa(r.limit+mutationLimitSlack))
	case fairRead:
		c.name, c.script = "fair-read-acquire", FairRWTryScript
		args = append(args, writeFlag(r.kind))
	default:
		c.name, c.script = "fair-write-acquire", FairRWTryScript
		args = append(args, writeFlag(r.kind))
		if r.kind == fairWrite && c.invalid == nil {
			c.invalid = CheckWriteToken(token)
		}
	}
	c.args = append(args, flag(once))
	c.sha = ScriptSHA(c.script)
	return primitiveOp(c)
}

// RenewOp renews the queued waiter token's waiter lease to waiterMillis
// from now and advances the queue. Result.Owned: renewed, still queued at
// position Result.Holders; Result.Waiting: granted (or holding already):
// try now; neither: not queued — its waiter lease ended, its place is
// lost. It may ride in a batch of renewals (ExtendRequest.Op).
func (r FairResource) RenewOp(token string, waiterMillis int64) Op {
	c := &primitiveCall{name: "fair-renew", kind: primFairRenew, keys: r.keys,
		args: []string{token, millis(waiterMillis)}}
	switch r.kind {
	case fairMutex:
		c.script = FairMutexRenewScript
	case fairSemaphore:
		c.script = FairSemaphoreRenewScript
	default:
		c.script = FairRWRenewScript
	}
	c.sha = ScriptSHA(c.script)
	return primitiveOp(c)
}

// ReleaseOp releases token's hold and hands the lock on to the queue at
// once (reserved for the head, so nothing can take it in between), and
// drops token's place in the queue and any reservation it has: a fair
// holder's release, the clean-up of a fair try, a waiter giving up.
// Result.Owned: a live hold was released.
func (r FairResource) ReleaseOp(token string) Op {
	c := &primitiveCall{name: "fair-release", kind: primOwned, keys: r.keys, args: []string{token}}
	switch r.kind {
	case fairMutex:
		c.script = FairMutexReleaseScript
	case fairSemaphore:
		c.script = FairSemaphoreReleaseScript
		c.invalid = checkHolderToken(token)
	default:
		c.script = FairRWReleaseScript
		c.args = append(c.args, writeFlag(r.kind))
	}
	c.sha = ScriptSHA(c.script)
	return primitiveOp(c)
}

// WaitersOp counts the queue's live waiters (their waiter leases not
// ended by server time) into Result.Holders. It changes nothing.
func (r FairResource) WaitersOp() Op { return r.Queue().WaitersOp() }

// WaitersOp counts the queue's live waiters into Result.Holders.
func (q FairQueue) WaitersOp() Op {
	return primitiveOp(&primitiveCall{name: "fair-waiters", kind: primCount, script: FairWaitersScript,
		sha: ScriptSHA(FairWaitersScript), keys: []string{q.LeasesKey}})
}

// OvertakenOp reads into Result.Holders how many times a non-fair
// acquisition took the mutex ahead of its fair waiters since the queue
// formed. It changes nothing.
func (q FairQueue) OvertakenOp() Op {
	return primitiveOp(&primitiveCall{name: "fair-overtaken", kind: primCount, script: FairOvertakenScript,
		sha: ScriptSHA(FairOvertakenScript), keys: []string{q.QueueKey}})
}

func writeFlag(k fairKind) string { return flag(k == fairWrite) }

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// ScriptSHA is the SHA1 (hex) that EVALSHA names script by.
func ScriptSHA(script string) string {
	if sha, ok := scriptSHAs[script]; ok {
		return sha
	}
	sum := sha1.Sum([]byte(script))
	return hex.EncodeToString(sum[:])
}

// scriptSHAs holds the SHA1 of every fair script, computed once.
var scriptSHAs = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{FairMutexTryScript, FairMutexRenewScript, FairMutexReleaseScript,
		FairSemaphoreTryScript, FairSemaphoreRenewScript, FairSemaphoreReleaseScript,
		FairRWTryScript, FairRWRenewScript, FairRWReleaseScript, FairWaitersScript, FairOvertakenScript,
		SemaphoreLimitScript, HoldersNextEndScript, KeyKindScript} {
		sum := sha1.Sum([]byte(s))
		m[s] = hex.EncodeToString(sum[:])
	}
	return m
}()
