package dst

import (
	"errors"
	"net"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
)

// classifyTransport tells what a modelled transport error proves about a
// command handed to the simulated transport, as rueidis v1.0.79 does over
// real sockets: only ErrDedicatedClientRecycled and a dial failure prove
// it never reached a socket; everything else (ErrClosing included) is
// Uncertain. (It was conn.ClassifyTransport; the engine classifies by the
// seam's conn.ErrNotWritten now, and this transport model goes once sim/dst
// runs the engine over simulated connections.)
func classifyTransport(err error) conn.Class {
	if errors.Is(err, rueidis.ErrDedicatedClientRecycled) {
		return conn.NotSubmitted
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return conn.NotSubmitted
	}
	return conn.Uncertain
}
