package lease

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/respire-go/respire/conn"
)

// MaxOwnerLabel is the longest owner label WithOwner accepts, in bytes.
const MaxOwnerLabel = 256

// A labelled owner value is the managed token's secret (NewToken's 32
// lowercase hexadecimal characters), ownerSeparator, then the label.
const (
	ownerSeparator = "\x00"
	ownerSecretLen = 32
)

// WithOwner labels the lock with who holds it — a host name, a process id,
// a job id; never a secret — so that Locks.Holder (and `lockctl status`)
// can tell who holds the key without revealing its token. The label is
// stored in the key's value after the fresh owner token, separated by a
// NUL byte; that whole value is the lock's token from then on (Lock.Token),
// so every owner comparison — renewals, releases, VerifyStillHeld, the
// push-driven holder's read, a raw-token call given Lock.Token — compares
// it whole, and the label cannot be changed while the lock is held. It
// costs one byte plus the label's length in each command that carries the
// token, and nothing at all when not given (see docs/architecture.md).
//
// The label must be valid UTF-8 of at most MaxOwnerLabel bytes without
// control characters (NUL, newline, tab, …); otherwise the acquisition
// fails with ErrInvalidOption before anything is sent. "" means no label.
// It applies to managed acquisitions (TryAcquire, Acquire and package
// coordination's, Do); the raw-token API stores a token as given.
func WithOwner(label string) AcquireOption {
	suffix := ownerSuffix(label) // made once per option: an option reused costs nothing more
	return func(o *acquireOptions) { o.ownerSuffix = suffix }
}

// checkOwnerLabel refuses a label WithOwner does not accept.
func checkOwnerLabel(label string) error {
	switch {
	case len(label) > MaxOwnerLabel:
		return fmt.Errorf("%w: owner label of %d bytes (at most MaxOwnerLabel = %d)", ErrInvalidOption, len(label), MaxOwnerLabel)
	case !utf8.ValidString(label):
		return fmt.Errorf("%w: owner label is not valid UTF-8", ErrInvalidOption)
	case strings.ContainsFunc(label, unicode.IsControl):
		return fmt.Errorf("%w: owner label holds a control character (NUL, newline, tab, …)", ErrInvalidOption)
	}
	return nil
}

// ownerSuffix is what an acquisition labelled label appends to each try's
// token; "" for no label (nothing allocated).
func ownerSuffix(label string) string {
	if label == "" {
		return ""
	}
	return ownerSeparator + label
}

// OwnerLabel returns the label a WithOwner acquisition stored in the
// token (its secret's 32 hexadecimal characters, a NUL byte, the label)
// and true, or "" and false for any other token. It never returns a byte
// of the secret: a raw token that is not of that form has no label, even
// when it holds a NUL byte.
func (t Token) OwnerLabel() (string, bool) { return ownerLabelOf(t.bytes) }

// ownerLabelOf is Token.OwnerLabel of a key's value.
func ownerLabelOf(value string) (string, bool) {
	if len(value) < ownerSecretLen+2 || value[ownerSecretLen] != ownerSeparator[0] {
		return "", false
	}
	for i := range ownerSecretLen {
		if c := value[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	label := value[ownerSecretLen+1:]
	if checkOwnerLabel(label) != nil {
		return "", false
	}
	return label, true
}

// OwnerLabel returns the label the lock was acquired with (WithOwner), ""
// when none. It does not block.
func (l *Lock) OwnerLabel() string {
	label, _ := ownerLabelOf(l.core().Token())
	return label
}

// Holder is what Locks.Holder tells about a key's current owner. It never
// holds the owner token, nor any part of it, so it may be printed and
// logged.
type Holder struct {
	// Label is the owner label the holder acquired with (WithOwner); ""
	// when it set none, or when the key's value is not a labelled owner
	// token (a raw token, or a value written by something else).
	Label string
	// Remaining is the lease the key had left on the server when it was
	// read (its PTTL, whole milliseconds); 0 with NoExpiry.
	Remaining time.Duration
	// NoExpiry reports a key without an expiry: not a lease (written by
	// something else than a lock, or persisted).
	NoExpiry bool
}

// holderReads bounds the reads of Locks.Holder when the key's owner keeps
// changing between its GET and its lease read.
const holderReads = 4

// Holder reads who holds key now: its owner label and the lease it has
// left, never its token (GET, then the owner-compared PTTL script
// conn.OwnerLeaseScript, so that the lease is that owner's: when the owner
// changed between the two, it reads again, up to four times). found is
// false when the key does not exist. It changes nothing on the server and
// needs the ACL permissions +get +evalsha +eval +pttl (EVAL the first time
// a server lacks the script; PTTL inside it). It blocks for the round
// trips (plus redirects); ctx ends the wait. It is safe for concurrent use.
func (l *Locks) Holder(ctx context.Context, key string) (holder Holder, found bool, err error) {
	if key == "" {
		return Holder{}, false, opError("Holder", key, ErrEmptyKey)
	}
	ctx, cancel := l.withTimeout(ctx)
	defer cancel()
	h, _, found, err := l.readOwner(ctx, l.key(key))
	return h, found, opError("Holder", key, err)
}

// ownerValue says what a key's value was besides a holder's token.
type ownerValue uint8

const (
	valueToken    ownerValue = iota // an owner token
	valueReserved                   // a fair grant not claimed yet (conn.FairReservation)
	valueMarker                     // a waiting writer's marker
)

// readOwner reads wireKey's owner label and the lease it has left (see
// Holder), never returning the token, and what the value was.
func (l *Locks) readOwner(ctx context.Context, wireKey string) (Holder, ownerValue, bool, error) {
	for range holderReads {
		owner, err := l.core.transport.Do(ctx, conn.OwnerOp(wireKey), nil)
		if err != nil || !owner.Owned {
			return Holder{}, 0, false, err
		}
		left, err := l.core.transport.Do(ctx, conn.OwnerLeaseOp(wireKey, owner.Token), nil)
		if err != nil {
			return Holder{}, 0, false, err
		}
		if !left.Owned {
			continue // another owner, or none, since the GET: read again
		}
		h := Holder{Remaining: time.Duration(left.RemainingMillis) * time.Millisecond}
		value, kind := owner.Token, valueToken
		if v, ok := strings.CutPrefix(value, conn.FairReservationPrefix); ok {
			value, kind = v, valueReserved
		} else if v, ok := strings.CutPrefix(value, waitingMarkerPrefix); ok {
			value, kind = v, valueMarker
		}
		h.Label, _ = ownerLabelOf(value)
		if left.RemainingMillis < 0 {
			h.Remaining, h.NoExpiry = 0, true
		}
		return h, kind, true, nil
	}
	return Holder{}, 0, false, fmt.Errorf("the key's owner changed between the reads, %d times in a row", holderReads)
}

// waitingMarkerPrefix begins a waiting writer's marker in a read/write
// lock's writer key.
const waitingMarkerPrefix = "waiting:"
