package conn

import (
	"errors"
	"time"
)

// ErrTrackingRefused is the cause of WatchRead's error when the node will
// not deliver invalidations to this client: CLIENT TRACKING or CLIENT
// CACHING got an error reply (NOPERM, an unknown subcommand behind a
// proxy), or the connection speaks RESP2 (no pushes without a redirect).
// It is remembered for the node while the node's current session lasts
// (capabilities are learned per physical connection): callers poll instead.
var ErrTrackingRefused = errors.New("client-side tracking refused")

// TrackingOnCommand turns tracking on for the watcher: OPTIN (only reads
// after CLIENT CACHING YES are tracked) and NOLOOP.
func TrackingOnCommand() Command {
	return Command{Args: []string{"CLIENT", "TRACKING", "ON", "OPTIN", "NOLOOP"}, Key: -1}
}

// TrackingOffCommand turns tracking off (rueidis may have turned it on with
// other options; modes cannot be switched without OFF first).
func TrackingOffCommand() Command {
	return Command{Args: []string{"CLIENT", "TRACKING", "OFF"}, Key: -1}
}

// CachingYesCommand makes the next read of an OPTIN connection tracked.
func CachingYesCommand() Command {
	return Command{Args: []string{"CLIENT", "CACHING", "YES"}, Key: -1}
}

// WatchReadResult is one key's outcome of WatchReadMany, as WatchRead
// returns it: the node asked (empty when the key could not be routed), the
// owner token and whether the key exists, or the error.
type WatchReadResult struct {
	Node  string
	Token string
	Found bool
	Err   error
}

// errTooManyRedirects ends a watcher read whose key kept being redirected.
var errTooManyRedirects = errors.New("too many redirects")

// watchGroup is the keys of one WatchReadMany hop that go to one node: their
// indexes into the keys and results.
type watchGroup struct {
	node string
	idx  []int
}

// MemberRead is one sorted-set member WatchScoreMany tracks and reads.
type MemberRead struct {
	Key    string // the sorted set (a semaphore's holders, a lock's readers)
	Member string // the member: a holder's owner token
}

// DefaultIdleCheck is how long a session may stay without a reply before the
// next lock command on it is preceded by a PING.
const DefaultIdleCheck = time.Second

// fenceAttempts bounds how often one fence is sent when the connection it
// travels on fails: CLIENT KILL ID is idempotent (a second kill of a gone
// connection answers 0), so re-sending it is safe, and rueidis replaces a
// broken pipeline connection on the next command.
const fenceAttempts = 3

// ErrNotPrimary is the cause when a reply came from a session whose node is
// no longer the primary (a Sentinel switched the master under it): the
// command ran, if at all, on a server whose data the new primary does not
// have, so the reply proves nothing about the lock. It is Uncertain; the
// session is retired, and fencing it is immediate (nothing it still carries
// can affect the primary's data).
var ErrNotPrimary = errors.New("the session's node is no longer the primary")

// ErrAmbiguousPrimary: a Sentinel client that lists more than one node
// (SendToReplicas) or a replica (ReplicaOnly): the lock needs the primary,
// and the client does not say which node that is.
var ErrAmbiguousPrimary = errors.New("the client does not name one primary (Sentinel SendToReplicas or ReplicaOnly are not supported for locks)")
