package closedprobe

import (
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

type replyError struct{ s string }

func (e *replyError) Error() string { return e.s }

var errClosing = errors.New("closing")

// settledClosed asks p until a probe has run and answered (every ask after
// Gap starts one), and returns the last answer.
func settledClosed(p *Prober, probes *atomic.Int64, want int64) error {
	for probes.Load() < want || p.inflight.Load() != nil {
		time.Sleep(Gap)
		p.Closed()
	}
	return p.Closed()
}

// TestClientClosed_TwoClosedAnswersInARowAreRemembered: ErrClosing twice,
// or the very same dial error twice, is a closed client, remembered for
// good; an open client's answer (its refusal of the cancelled ctx) or two
// distinct dial errors are not.
func TestClientClosed_TwoClosedAnswersInARowAreRemembered(t *testing.T) {
	reply := func(err error) bool { _, ok := err.(*replyError); return ok }
	dial := &net.OpError{Op: "dial", Err: errors.New("refused")}
	cases := []struct {
		name    string
		answers func(n int64) error
		closed  bool
	}{
		{"ErrClosing twice", func(int64) error { return errClosing }, true},
		{"the same dial error twice", func(int64) error { return dial }, true},
		{"the same error reply twice", func() func(int64) error {
			r := &replyError{"NOAUTH"}
			return func(int64) error { return r }
		}(), true},
		{"an open client", func(int64) error { return errors.New("context canceled") }, false},
		{"a fresh dial error each time", func(int64) error { return &net.OpError{Op: "dial", Err: errors.New("refused")} }, false},
		{"ErrClosing once (a connection being replaced)", func(n int64) error {
			if n == 1 {
				return errClosing
			}
			return errors.New("context canceled")
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var probes atomic.Int64
			p := New(func() error { return c.answers(probes.Add(1)) }, errClosing, reply)
			err := settledClosed(p, &probes, 2)
			if (err != nil) != c.closed {
				t.Fatalf("Closed() = %v after %d probes; want closed %v", err, probes.Load(), c.closed)
			}
			if c.closed {
				n := probes.Load()
				time.Sleep(2 * Gap)
				if p.Closed() == nil || probes.Load() != n {
					t.Fatalf("a closed client was asked again (%d probes, then %d)", n, probes.Load())
				}
			}
		})
	}
}

// TestFirstIsTheSmallestAddress: a cluster's probes go to one node, the
// same while the nodes do not change.
func TestFirstIsTheSmallestAddress(t *testing.T) {
	nodes := map[string]int{"127.0.0.1:7002": 2, "127.0.0.1:7000": 0, "127.0.0.1:7001": 1}
	for range 10 {
		if n, ok := First(nodes); !ok || n != 0 {
			t.Fatalf("First = %d, %v; want the node of 127.0.0.1:7000", n, ok)
		}
	}
	if _, ok := First(map[string]int{}); ok {
		t.Fatal("First of no nodes found one")
	}
}
