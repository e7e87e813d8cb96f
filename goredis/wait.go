//go:build !goredisadapter

package goredis

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/respire-go/respire/conn"
)

// control sends cmds on a fresh Conn of node's client (another connection
// than node's session), with the witness, and returns their results; in
// Sentinel mode CLIENT INFO goes first and its laddr= (the node reached)
// is returned too. A transport failure is a *conn.Error: NotSubmitted when
// nothing was handed to the Conn, Uncertain otherwise.
func (t *Transport) control(ctx context.Context, node string, cmds ...conn.Command) ([]result, string, error) {
	nc, err := t.nodeClient(ctx, node)
	if err != nil {
		return nil, "", &conn.Error{Class: conn.NotSubmitted, Addr: node, Err: err}
	}
	rc := nc.Conn()
	defer func() { _ = rc.Close() }()
	var w witness
	w.install(rc)
	if t.mode == modeSentinel {
		cmds = append([]conn.Command{conn.ClientInfoCommand()}, cmds...)
	}
	t.report(ctx, cmds...)
	results, err := w.roundTrip(ctx, rc, cmds)
	if err == nil {
		for _, r := range results {
			if r.transport != nil {
				err = r.transport
				break
			}
		}
	}
	if err != nil {
		class := conn.Uncertain
		if errors.Is(err, errNotHandedOff) {
			class = conn.NotSubmitted
		}
		t.suspectNode(node)
		return nil, "", &conn.Error{Class: class, Addr: node, Err: err}
	}
	laddr := ""
	if t.mode == modeSentinel {
		_, laddr = infoFields(results[0].reply.Text)
		results = results[1:]
		t.notePrimary(laddr)
	}
	return results, laddr, nil
}

// AcquireReplicated implements conn.Transport as
// conn.AcquireFencedReplicated does: the fenced acquisition script and
// WAIT replicas waitMillis pipelined on one Conn of the lease key's
// primary (EVAL and WAIT again after the definite NOSCRIPT), so that WAIT
// counts the replicas that acknowledged the script's writes. The Conn is
// an EphemeralConn: its socket is never pooled again. When stop ends
// first the call returns at once, Uncertain with conn.ErrWaitStopped (not
// submitted if stop had ended before the call); go-redis cannot interrupt
// the read, so the round trip ends on its own (WAIT's timeout, the
// client's ReadTimeout) and Close waits for it.
func (t *Transport) AcquireReplicated(ctx, stop context.Context, leaseKey, counterKey, token string, ttlMillis, replicas,
	waitMillis int64) (conn.ReplicatedFencedResult, error) {
	const op = "fenced-acquire"
	if err := ctx.Err(); err != nil {
		return conn.ReplicatedFencedResult{}, &conn.Error{Class: conn.NotSubmitted, Op: op, Err: err}
	}
	if err := t.CheckFencedKeys(leaseKey, counterKey); err != nil {
		return conn.ReplicatedFencedResult{}, err
	}
	if replicas < 1 || waitMillis < 1 {
		return conn.ReplicatedFencedResult{}, &conn.Error{Class: conn.NotSubmitted, Op: op,
			Err: fmt.Errorf("%w (got %d replicas, %d ms)", conn.ErrInvalidWait, replicas, waitMillis)}
	}
	if stop.Err() != nil {
		return conn.ReplicatedFencedResult{}, &conn.Error{Class: conn.NotSubmitted, Op: op, Err: conn.ErrWaitStopped}
	}
	if t.isClosed() {
		return conn.ReplicatedFencedResult{}, &conn.Error{Class: conn.NotSubmitted, Op: op, Err: conn.ErrPoolClosed}
	}
	node, err := t.route(ctx, op, leaseKey)
	if err != nil {
		return conn.ReplicatedFencedResult{}, err
	}
	nc, err := t.nodeClient(ctx, node)
	if err != nil {
		return conn.ReplicatedFencedResult{}, &conn.Error{Class: conn.NotSubmitted, Op: op, Addr: node, Err: err}
	}
	type answer struct {
		res conn.ReplicatedFencedResult
		err error
	}
	done := make(chan answer, 1)
	t.running.Go(func() {
		res, err := t.replicated(ctx, nc.EphemeralConn(), node, leaseKey, counterKey, token, ttlMillis, replicas, waitMillis)
		done <- answer{res, err}
	})
	select {
	case a := <-done:
		return a.res, a.err
	case <-stop.Done():
		return conn.ReplicatedFencedResult{}, &conn.Error{Class: conn.Uncertain, Op: op, Addr: node, Err: conn.ErrWaitStopped}
	}
}

// replicated runs the script and WAIT on rc, then closes it.
func (t *Transport) replicated(ctx context.Context, rc *redis.Conn, node, leaseKey, counterKey, token string,
	ttlMillis, replicas, waitMillis int64) (conn.ReplicatedFencedResult, error) {
	const op = "fenced-acquire"
	defer func() { _ = rc.Close() }()
	var w witness
	w.install(rc)
	f := conn.NewFencedAcquire(leaseKey, counterKey, token, ttlMillis)
	for {
		cmds := []conn.Command{f.Command(), conn.WaitCommand(replicas, waitMillis)}
		t.report(ctx, cmds...)
		results, err := w.roundTrip(ctx, rc, cmds)
		if err == nil && results[0].transport != nil {
			err = results[0].transport
		}
		if err != nil {
			class := conn.Uncertain
			if errors.Is(err, errNotHandedOff) {
				class = conn.NotSubmitted
			}
			return conn.ReplicatedFencedResult{}, &conn.Error{Class: class, Op: op, Addr: node, Err: err}
		}
		out := f.Interpret(results[0].reply)
		if !out.Done {
			continue // NOSCRIPT: the script did not run; EVAL it
		}
		switch {
		case out.Err != nil:
			return conn.ReplicatedFencedResult{}, definite(op, nil, results[0])
		case out.Malformed != nil:
			return conn.ReplicatedFencedResult{}, &conn.Error{Class: conn.Definite, Op: op, Code: "PROTOCOL", Err: out.Malformed}
		case out.Redirect != nil:
			e := definite(op, nil, results[0])
			e.Code, e.Redirect = "MOVED", out.Redirect
			return conn.ReplicatedFencedResult{}, e
		}
		res := conn.ReplicatedFencedResult{FencedResult: conn.FencedResult{Acquired: out.Acquired, FencingToken: out.FencingToken}}
		if out.Acquired {
			res.Acknowledged, res.WaitErr = waitCount(results[1])
		}
		return res, nil
	}
}

// waitCount reads WAIT's result: a non-negative count, or why there is
// none (Uncertain after a transport failure, Definite otherwise).
func waitCount(r result) (int64, error) {
	switch {
	case r.transport != nil:
		return 0, &conn.Error{Class: conn.Uncertain, Op: "wait", Err: r.transport}
	case r.reply.Kind == conn.ReplyInt && r.reply.Int >= 0:
		return r.reply.Int, nil
	case r.reply.Kind == conn.ReplyError:
		return 0, definite("wait", nil, r)
	}
	return 0, &conn.Error{Class: conn.Definite, Op: "wait", Code: "PROTOCOL",
		Err: fmt.Errorf("WAIT replied with kind %d, not a non-negative integer", r.reply.Kind)}
}
