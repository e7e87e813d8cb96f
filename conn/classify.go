package conn

import (
	"errors"
	"net"

	"github.com/redis/rueidis"
)

// ClassifyTransport tells what a transport error from rueidis proves about a
// command that was handed to it. As tried over real sockets with rueidis
// v1.0.79, only two errors prove the command never reached a socket:
// ErrDedicatedClientRecycled (checked before any write) and a dial failure
// (no connection existed for that attempt). Everything else — ErrClosing, io.EOF, resets, "use of
// closed network connection", i/o timeouts, context errors — is returned
// also for commands that were written and even executed, so it is
// Uncertain. In particular a socket the library closed itself (a retired
// session, Pool.Close) answers the commands still waiting on it with
// ErrClosing although they may have run. It is pure and safe for concurrent
// use; the deterministic simulator classifies its modelled transport errors
// with it too.
func ClassifyTransport(err error) Class {
	if mutationClosingNotSubmitted && errors.Is(err, rueidis.ErrClosing) {
		return NotSubmitted // deliberately wrong: see mutation_on.go
	}
	if errors.Is(err, rueidis.ErrDedicatedClientRecycled) {
		return NotSubmitted
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return NotSubmitted
	}
	return Uncertain
}
