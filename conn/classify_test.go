package conn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/redis/rueidis"
)

// Only two transport errors prove that a command never reached a socket;
// every other one — a socket the library closed itself included — may come
// back for a command that was written and even executed.
func TestOnlyProofIsNotSubmitted_OnlyARecycledConnectionOrADialFailureProvesIt(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	notSubmitted := []error{
		rueidis.ErrDedicatedClientRecycled,
		fmt.Errorf("wrapped: %w", rueidis.ErrDedicatedClientRecycled),
		dial,
		fmt.Errorf("wrapped: %w", dial),
	}
	for _, err := range notSubmitted {
		if got := ClassifyTransport(err); got != NotSubmitted {
			t.Errorf("ClassifyTransport(%v) = %s; want NotSubmitted", err, got)
		}
	}
	uncertain := []error{
		rueidis.ErrClosing, // a socket closed locally answers commands it had written, even executed ones
		io.EOF,
		io.ErrUnexpectedEOF,
		net.ErrClosed,
		syscall.ECONNRESET,
		&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET},
		&net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE},
		os.ErrDeadlineExceeded,
		context.Canceled,
		context.DeadlineExceeded,
		errors.New("anything else"),
	}
	for _, err := range uncertain {
		if got := ClassifyTransport(err); got != Uncertain {
			t.Errorf("ClassifyTransport(%v) = %s; want Uncertain", err, got)
		}
	}
}

// severalNodes is a Sentinel client that lists more than one node, as one
// made with SendToReplicas does. Only Mode and Nodes may be called: anything
// that would send a command panics on the nil Client.
type severalNodes struct{ rueidis.Client }

func (severalNodes) Mode() rueidis.ClientMode { return rueidis.ClientModeSentinel }

func (severalNodes) Nodes() map[string]rueidis.Client {
	return map[string]rueidis.Client{"10.0.0.1:6379": nil, "10.0.0.2:6379": nil}
}

func TestLocksNeedOnePrimary_ASentinelClientWithSeveralNodesIsRefusedBeforeSending(t *testing.T) {
	p := NewPool(severalNodes{})
	defer p.Close()
	ctx := ctxT(t)
	for name, call := range map[string]func() error{
		"acquire": func() error { _, err := p.Acquire(ctx, "k", "tok", 1000); return err },
		"extend":  func() error { _, err := p.Extend(ctx, "k", "tok", 1000); return err },
		"release": func() error { _, err := p.Release(ctx, "k", "tok"); return err },
		"owner":   func() error { _, err := p.Owner(ctx, "k"); return err },
	} {
		err := call()
		if !errors.Is(err, ErrAmbiguousPrimary) || ClassOf(err) != NotSubmitted {
			t.Errorf("%s = %v (class %s); want ErrAmbiguousPrimary, NotSubmitted", name, err, ClassOf(err))
		}
	}
}
