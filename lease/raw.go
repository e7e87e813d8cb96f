package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/respire-go/respire/conn"
)

// TryTake acquires key for token with a lease of ttl (rounded up to whole
// milliseconds) using SET key token NX PX ms. It returns true when this call
// created the lock, false when the key already exists (whoever holds it).
// It blocks for one round trip. Validation errors (ErrEmptyKey,
// ErrEmptyToken, ErrInvalidTTL) come before anything is sent. If ctx is
// cancelled after the command was sent, the lock may have been taken anyway
// (error matching ErrOutcomeUnknown); it then lives until its expiry or
// a Release with the same token. Use a fresh, secret token per acquisition.
// On a Sentinel client a SET the primary answered OK that its replicas did
// not acknowledge is deleted again (owner-compared) and reported as false
// with an error (rule SentinelAcquisitionsNeedReplicaAcks).
func (l *Locks) TryTake(ctx context.Context, key string, token Token, ttl time.Duration) (bool, error) {
	ms, err := validate(key, token, ttl, true)
	if err != nil {
		return false, opError("TryTake", key, err)
	}
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	res, err := l.core.transport.Do(ctx, conn.AcquireOp(l.key(key), token.wire(), ms), nil)
	if err == nil && res.Unconfirmed != nil {
		return false, opError("TryTake", key, l.untake(ctx, key, token, res.Unconfirmed))
	}
	return res.Owned, opError("TryTake", key, err)
}

// untake deletes (owner-compared) a key a Sentinel primary set for token
// that its replicas did not confirm (rule
// SentinelAcquisitionsNeedReplicaAcks): the error of a take that is not
// one, not submitted once the key is deleted again, unknown otherwise.
func (l *Locks) untake(ctx context.Context, key string, token Token, why error) error {
	class, cause := conn.Uncertain, fmt.Errorf("%w; the key may stay until its lease ends", why)
	if _, err := l.core.transport.Do(ctx, conn.ReleaseOp(l.key(key), token.wire()), nil); err == nil {
		class, cause = conn.NotSubmitted, fmt.Errorf("%w; the key was deleted again", why)
	}
	return &conn.Error{Class: class, Op: "acquire", Err: cause}
}

// ResetExpiry sets key's expiry to ttl from now if key holds token (SET
// IFEQ PX, or the Lua compare-and-pexpire on servers without it). false
// means the lock is not ours: missing, expired or held by another token; in
// that case nothing changed — no key is created and another owner's TTL is
// untouched. It blocks until a definite answer. It never fences: after an
// error matching ErrOutcomeUnknown the expiry may or may not have been
// reset. Do not retry protected writes after false.
func (l *Locks) ResetExpiry(ctx context.Context, key string, token Token, ttl time.Duration) (bool, error) {
	ms, err := validate(key, token, ttl, true)
	if err != nil {
		return false, opError("ResetExpiry", key, err)
	}
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	res, err := l.core.transport.Do(ctx, conn.ExtendOp(l.key(key), token.wire(), ms), nil)
	l.logFailure(ctx, "ResetExpiry", key, err)
	return res.Owned, opError("ResetExpiry", key, err)
}

// Release deletes key if it holds token (DELEX, DELIFEQ or Lua, as the
// connection supports). true means this call deleted our lock; false means
// it was not ours (missing, expired or another owner) and nothing changed.
// It blocks until a definite answer; an error matching
// ErrOutcomeUnknown means the delete may have run. A server error such
// as NOPERM is returned unchanged (it matches ErrServerReply) and no
// other implementation is tried.
func (l *Locks) Release(ctx context.Context, key string, token Token) (bool, error) {
	if _, err := validate(key, token, 0, false); err != nil {
		return false, opError("Release", key, err)
	}
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	res, err := l.core.transport.Do(ctx, conn.ReleaseOp(l.key(key), token.wire()), nil)
	l.logFailure(ctx, "Release", key, err)
	return res.Owned, opError("Release", key, err)
}

// OwnerToken reads key's current owner token with GET on the primary.
// found is false when the key does not exist. The token owns a copy of the
// reply bytes. It blocks for one round trip (plus redirects).
func (l *Locks) OwnerToken(ctx context.Context, key string) (token Token, found bool, err error) {
	if key == "" {
		return Token{}, false, opError("OwnerToken", key, ErrEmptyKey)
	}
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	res, err := l.core.transport.Do(ctx, conn.OwnerOp(l.key(key)), nil)
	if err != nil || !res.Owned {
		return Token{}, false, opError("OwnerToken", key, err)
	}
	return Token{bytes: res.Token}, true, nil
}

// validate checks the arguments common to the raw operations and returns the
// duration in milliseconds.
func validate(key string, token Token, ttl time.Duration, needTTL bool) (int64, error) {
	if key == "" {
		return 0, ErrEmptyKey
	}
	if token.IsZero() {
		return 0, ErrEmptyToken
	}
	if !needTTL {
		return 0, nil
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return 0, fmt.Errorf("%w (got %v)", err, ttl)
	}
	return ms, nil
}

func (l *Locks) logFailure(ctx context.Context, op, key string, err error) {
	if err != nil {
		l.core.logger.DebugContext(ctx, "lease: raw operation failed", l.core.driver.KeyArgs(l.key(key), "op", op, "error", err)...)
	}
}
