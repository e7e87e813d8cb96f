package conn

import (
	"errors"
	"strconv"
	"strings"
)

// Key naming of the semaphore and the read/write lock. A user's name N
// (after the view's key prefix P) becomes the stem P + "{" + N + "}"; every
// key of one semaphore or lock is the stem plus a fixed suffix, so all of
// them carry the same hash tag and live in one cluster slot:
//
//	semaphore:        P{N}:sem (holders and the limit, sorted set)
//	read/write lock:  P{N}:w   (writer, string)       P{N}:r (readers, sorted set)
//
// The tag is the text between the stem's first "{" and the first "}" after
// it (Redis Cluster's rule): N itself, unless P already contains a "{…}"
// pair, whose tag then applies to these keys as to the view's other keys. A
// stem whose tag would be empty (N = "" or N beginning with "}" after a P
// without braces, or P's first braces empty) is refused: its keys would
// hash whole, to different slots.

// The errors of bad semaphore and read/write lock input, returned before
// anything is sent.
var (
	// ErrEmptyName: the semaphore or lock name is empty.
	ErrEmptyName = errors.New("empty semaphore or lock name")
	// ErrEmptyHashTag: the keys' hash tag would be empty, so they could hash
	// to different cluster slots.
	ErrEmptyHashTag = errors.New("the name gives an empty hash tag, so its keys could hash to different cluster slots")
	// ErrBadLimit: a semaphore limit below 1 or above MaxSemaphoreLimit.
	ErrBadLimit = errors.New("semaphore limit must be between 1 and 2147483647")
	// ErrEmptyHolderToken: an empty owner token for a semaphore permit or a
	// read hold (the empty member holds a semaphore's limit).
	ErrEmptyHolderToken = errors.New("a permit's or reader's owner token must not be empty")
	// ErrReservedToken: a write-lock owner token beginning with "waiting:",
	// the prefix of waiting markers.
	ErrReservedToken = errors.New("a write-lock owner token must not begin with \"waiting:\"")
)

// primitiveStem returns prefix + "{" + name + "}" after checking that its
// hash tag is not empty.
func primitiveStem(prefix, name string) (string, error) {
	if name == "" {
		return "", ErrEmptyName
	}
	stem := prefix + "{" + name + "}"
	open := strings.IndexByte(stem, '{')
	if strings.IndexByte(stem[open+1:], '}') == 0 {
		return "", ErrEmptyHashTag
	}
	return stem, nil
}

// Semaphore names the key and limit of one lease semaphore. Build it with
// NewSemaphore; it is a small immutable value, safe to copy and to share
// between goroutines.
type Semaphore struct {
	// HoldersKey, P{N}:sem, is the sorted set of owner token → lease end
	// (server ms), which also stores the limit the live holders use
	// (SemaphoreLimitMember).
	HoldersKey string
	Limit      int // the limit this caller acquires with (1 to MaxSemaphoreLimit)
}

// NewSemaphore names the semaphore name under the key prefix prefix with
// limit permits. It returns ErrEmptyName, ErrEmptyHashTag or ErrBadLimit
// (a limit below 1 or above MaxSemaphoreLimit) for bad input. It sends
// nothing.
func NewSemaphore(prefix, name string, limit int) (Semaphore, error) {
	if limit < 1 || int64(limit) > MaxSemaphoreLimit {
		return Semaphore{}, ErrBadLimit
	}
	stem, err := primitiveStem(prefix, name)
	if err != nil {
		return Semaphore{}, err
	}
	return Semaphore{HoldersKey: stem + ":sem", Limit: limit}, nil
}

// SemaphoreOfHolders returns the Semaphore whose HoldersKey is holdersKey,
// a key NewSemaphore named (P{N}:sem), with limit (0 for a Semaphore that
// only renews, releases and reads permits: its AcquireOp must not be
// sent). It lets a held permit keep one key instead of the Semaphore. It
// sends nothing.
func SemaphoreOfHolders(holdersKey string, limit int) Semaphore {
	return Semaphore{HoldersKey: holdersKey, Limit: limit}
}

// AcquireOp takes a permit for token with a lease of ttlMillis
// (SemaphoreAcquireScript). Result.Owned: the token holds a permit; false:
// the semaphore is full. A different stored limit, or none stored while
// holders are live, is a Definite *Error (Code "LIMITMISMATCH") whose chain
// holds a *LimitMismatchError (errors.Is ErrLimitMismatch); nothing
// changed. After an Uncertain outcome, LeaseOp settles whether the token
// holds a permit. An empty token is refused before anything is sent
// (NotSubmitted, ErrEmptyHolderToken), as by RenewOp, ReleaseOp and LeaseOp.
func (s Semaphore) AcquireOp(token string, ttlMillis int64) Op {
	return primitiveOp(&primitiveCall{name: "semaphore-acquire", kind: primAcquire,
		script: SemaphoreAcquireScript, sha: SemaphoreAcquireScriptSHA,
		keys: []string{s.HoldersKey}, args: []string{token, millis(ttlMillis), strconv.Itoa(s.Limit + mutationLimitSlack)},
		limit: s.Limit, invalid: checkHolderToken(token)})
}

// RenewOp sets token's permit to end ttlMillis from now by server time
// (HolderRenewScript). Result.Owned: renewed; false: the token holds no
// live permit (missing, or its lease ended), nothing changed.
func (s Semaphore) RenewOp(token string, ttlMillis int64) Op {
	return holderRenewOp("semaphore-renew", token, ttlMillis, s.HoldersKey)
}

// ReleaseOp gives token's permit back (HolderReleaseScript; with the last
// live holder the key, and the limit stored in it, goes). Result.Owned: a
// live permit was released; false: none was held (an expired one is
// removed all the same).
func (s Semaphore) ReleaseOp(token string) Op {
	return holderReleaseOp("semaphore-release", token, s.HoldersKey)
}

// LeaseOp reads token's permit without changing anything
// (HolderLeaseScript). Result.Owned: a live permit, with
// Result.RemainingMillis of its lease left by server time.
func (s Semaphore) LeaseOp(token string) Op {
	return holderLeaseOp("semaphore-lease", token, s.HoldersKey)
}

// HoldersOp counts the live permits (HolderCountScript) into
// Result.Holders, removing nothing.
func (s Semaphore) HoldersOp() Op { return holderCountOp("semaphore-holders", s.HoldersKey) }

// RWLock names the keys of one writer-preferring read/write lock. Build it
// with NewRWLock; it is a small immutable value, safe to copy and to share
// between goroutines.
type RWLock struct {
	WriterKey  string // P{N}:w, string: the writer's token or a waiting writer's marker
	ReadersKey string // P{N}:r, sorted set: reader token → lease end (server ms)
}

// NewRWLock names the read/write lock name under the key prefix prefix. It
// returns ErrEmptyName or ErrEmptyHashTag for bad input. It sends nothing.
func NewRWLock(prefix, name string) (RWLock, error) {
	stem, err := primitiveStem(prefix, name)
	if err != nil {
		return RWLock{}, err
	}
	return RWLock{WriterKey: stem + ":w", ReadersKey: stem + ":r"}, nil
}

// RWLockOfKey returns the RWLock one of whose keys is key, as NewRWLock
// named them: its writer key (P{N}:w) or its readers key (P{N}:r). It lets
// a held lock keep one key instead of the RWLock. A key NewRWLock could not
// have named gives an RWLock whose keys are not the lock's. It sends
// nothing.
func RWLockOfKey(key string) RWLock {
	stem, _ := strings.CutSuffix(key, ":w")
	if stem == key {
		stem, _ = strings.CutSuffix(key, ":r")
	}
	return RWLock{WriterKey: stem + ":w", ReadersKey: stem + ":r"}
}

// ReadAcquireOp takes a read hold for token with a lease of ttlMillis
// (ReadAcquireScript). Result.Owned: the token holds a read lease; false: a
// writer holds the lock or waits for it, nothing changed. An empty token is
// refused before anything is sent (NotSubmitted, ErrEmptyHolderToken), as
// by the other reader Ops.
func (l RWLock) ReadAcquireOp(token string, ttlMillis int64) Op {
	return primitiveOp(&primitiveCall{name: "read-acquire", kind: primAcquire,
		script: ReadAcquireScript, sha: ReadAcquireScriptSHA,
		keys: []string{l.WriterKey, l.ReadersKey}, args: []string{token, millis(ttlMillis)},
		invalid: checkHolderToken(token)})
}

// ReadRenewOp renews token's read hold to ttlMillis from now
// (HolderRenewScript); a waiting writer does not stop it.
func (l RWLock) ReadRenewOp(token string, ttlMillis int64) Op {
	return holderRenewOp("read-renew", token, ttlMillis, l.ReadersKey)
}

// ReadReleaseOp releases token's read hold (HolderReleaseScript).
func (l RWLock) ReadReleaseOp(token string) Op {
	return holderReleaseOp("read-release", token, l.ReadersKey)
}

// ReadLeaseOp reads token's read hold (HolderLeaseScript): Result.Owned and
// Result.RemainingMillis as for Semaphore.LeaseOp.
func (l RWLock) ReadLeaseOp(token string) Op { return holderLeaseOp("read-lease", token, l.ReadersKey) }

// ReadersOp counts the live readers (HolderCountScript) into
// Result.Holders.
func (l RWLock) ReadersOp() Op { return holderCountOp("readers", l.ReadersKey) }

// WriteAcquireOp takes the write hold for token with a lease of ttlMillis,
// or waits for the readers to drain (WriteAcquireScript). Result.Owned: the
// token holds the write lease. Result.Waiting: live readers remain; the
// token's waiting marker ("waiting:"+token, lease waitMillis, which must
// outlast the caller's next try) now refuses new readers — retry with the
// same token to refresh it or take the lock, and delete it with
// AbandonWaitOp when giving up. Neither: another writer holds the lock or
// waits. A token beginning with "waiting:" is refused before anything is
// sent (NotSubmitted, ErrReservedToken).
func (l RWLock) WriteAcquireOp(token string, ttlMillis, waitMillis int64) Op {
	return primitiveOp(&primitiveCall{name: "write-acquire", kind: primWriteAcquire,
		script: WriteAcquireScript, sha: WriteAcquireScriptSHA,
		keys: []string{l.WriterKey, l.ReadersKey}, args: []string{token, millis(ttlMillis), millis(waitMillis)},
		invalid: CheckWriteToken(token)})
}

// WriteRenewOp renews the write hold: the mutex compare-and-pexpire of the
// writer key (ExtendOp). A waiting marker never matches a token.
func (l RWLock) WriteRenewOp(token string, ttlMillis int64) Op {
	return ExtendOp(l.WriterKey, token, ttlMillis)
}

// WriteReleaseOp releases the write hold: the mutex compare-and-delete of
// the writer key (ReleaseOp).
func (l RWLock) WriteReleaseOp(token string) Op { return ReleaseOp(l.WriterKey, token) }

// AbandonWaitOp deletes token's waiting marker if it is still there (the
// compare-and-delete of the writer key with WaitingMarker(token)), so that
// readers need not wait for it to expire. Result.Owned: the marker was
// deleted.
func (l RWLock) AbandonWaitOp(token string) Op {
	return ReleaseOp(l.WriterKey, WaitingMarker(token))
}

// WriterOp reads the writer key (OwnerOp): Result.Token is the writer's
// owner token, or a waiting writer's marker (IsWaitingMarker).
func (l RWLock) WriterOp() Op { return OwnerOp(l.WriterKey) }

// WaitingMarker is the writer-key value of a writer waiting with token.
func WaitingMarker(token string) string { return WaitingMarkerPrefix + token }

// IsWaitingMarker reports whether a writer-key value is a waiting marker.
func IsWaitingMarker(value string) bool { return strings.HasPrefix(value, WaitingMarkerPrefix) }

// CheckWriteToken returns ErrReservedToken for a token that a waiting
// marker could be mistaken for (one beginning with "waiting:"), else nil.
func CheckWriteToken(token string) error {
	if IsWaitingMarker(token) {
		return ErrReservedToken
	}
	return nil
}

// checkHolderToken returns ErrEmptyHolderToken for an empty permit or
// reader token (the empty member holds a semaphore's limit), else nil.
func checkHolderToken(token string) error {
	if token == "" {
		return ErrEmptyHolderToken
	}
	return nil
}

func holderRenewOp(name, token string, ttlMillis int64, key string) Op {
	return primitiveOp(&primitiveCall{name: name, kind: primOwned, script: HolderRenewScript,
		sha: HolderRenewScriptSHA, keys: []string{key}, args: []string{token, millis(ttlMillis)},
		invalid: checkHolderToken(token)})
}

func holderReleaseOp(name, token string, key string) Op {
	return primitiveOp(&primitiveCall{name: name, kind: primOwned, script: HolderReleaseScript,
		sha: HolderReleaseScriptSHA, keys: []string{key}, args: []string{token}, invalid: checkHolderToken(token)})
}

func holderLeaseOp(name, token, key string) Op {
	return primitiveOp(&primitiveCall{name: name, kind: primLease, script: HolderLeaseScript,
		sha: HolderLeaseScriptSHA, keys: []string{key}, args: []string{token}, invalid: checkHolderToken(token)})
}

func holderCountOp(name, key string) Op {
	return primitiveOp(&primitiveCall{name: name, kind: primCount, script: HolderCountScript,
		sha: HolderCountScriptSHA, keys: []string{key}})
}

func primitiveOp(call *primitiveCall) Op {
	return Op{kind: opPrimitive, key: call.keys[0], prim: call}
}
