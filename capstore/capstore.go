// Package capstore holds what one physical server connection (a conn
// session) has learned about the server behind it: which native lock
// commands it rejected and which scripts it already has cached.
//
// This package is part of respire-go's implementation: applications use
// the lease and coordination packages. Its API may change in any release,
// without notice; it carries no compatibility promise.
//
// A Store is created together with its session and dropped with it, so a
// reconnect, a failover destination or a cluster redirect target always
// starts empty and discovers again. Bits are only ever set, never cleared,
// and only after a reply that confirms the fact (see conn's protocol rules);
// nothing here sends INFO or COMMAND.
package capstore

import "sync/atomic"

// Set is an immutable snapshot of capability bits. The zero value is the
// state of a fresh connection: everything native assumed supported, no
// script known to be loaded.
type Set uint32

// The capability bits.
const (
	// ConditionalSetUnsupported: SET key token IFEQ token PX ms answered
	// exactly "ERR syntax error" on this connection.
	ConditionalSetUnsupported Set = 1 << iota
	// DelexUnsupported: DELEX answered its standard unknown-command error.
	DelexUnsupported
	// DelifeqUnsupported: DELIFEQ answered its standard unknown-command error.
	DelifeqUnsupported
	// ReleaseScriptLoaded: the compare-and-delete script ran on this
	// connection's server (EVALSHA or EVAL succeeded), so EVALSHA is expected
	// to find it.
	ReleaseScriptLoaded
	// ExtendScriptLoaded: likewise for the compare-and-pexpire script.
	ExtendScriptLoaded
)

// Has reports whether every bit of c is set in s.
func (s Set) Has(c Set) bool { return s&c == c && c != 0 }

// String lists the set bits, for logs and test failure messages.
func (s Set) String() string {
	names := []string{"conditional-set-unsupported", "delex-unsupported",
		"delifeq-unsupported", "release-script-loaded", "extend-script-loaded"}
	out := ""
	for i, name := range names {
		if s&(1<<i) != 0 {
			if out != "" {
				out += "|"
			}
			out += name
		}
	}
	if out == "" {
		return "none"
	}
	return out
}

// Store is the capability memory of one session. It is safe for concurrent
// use; updates are atomic ORs, so two callers discovering the same fact at
// once is harmless. The zero value is an empty, ready-to-use Store. A Store
// must not be copied after first use.
type Store struct {
	bits atomic.Uint32
}

// Load returns the current snapshot. It never blocks.
func (s *Store) Load() Set { return Set(s.bits.Load()) }

// Add sets the bits of learned (no-op for zero). It never blocks and never
// clears a bit.
func (s *Store) Add(learned Set) {
	if learned != 0 {
		s.bits.Or(uint32(learned))
	}
}

// FallbackBits are the bits that make an operation skip a native command:
// a connection that learned one of them takes a fallback.
const FallbackBits = ConditionalSetUnsupported | DelexUnsupported | DelifeqUnsupported

// AddNew sets the bits of learned, like Add, and returns those that were
// not set before (zero when learned adds nothing new). Concurrent callers
// learning the same bit get it returned exactly once between them.
func (s *Store) AddNew(learned Set) Set {
	if learned == 0 {
		return 0
	}
	old := Set(s.bits.Or(uint32(learned)))
	return learned &^ old
}
