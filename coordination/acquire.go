package coordination

import (
	"context"
	"errors"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// tryOnce runs the script once under a fresh owner token. contended is true
// when another owner holds the lease (the only case worth polling again).
func (c *Coordinator) tryOnce(ctx context.Context, r request) (attempt Attempt, contended bool, err error) {
	owner := lease.NewToken()
	sentAt := time.Now() // before the send: the estimate never outlives the server's lease
	res, err := c.runScript(ctx, r, owner)
	if c.afterScript != nil {
		c.afterScript()
	}
	switch {
	case errors.Is(err, conn.ErrMalformedFencingToken):
		c.releaseNow(ctx, r.key, owner) // F5: the script may have created the lease
		return Attempt{}, false, err
	case err != nil:
		if conn.ClassOf(err) == conn.Uncertain {
			c.releaseInBackground(ctx, r.key, owner) // F7: never replayed, only cleaned up
		}
		return Attempt{}, false, err
	case !res.Acquired:
		return Attempt{}, true, nil
	case r.opts.replicas > 0 && (res.WaitErr != nil || res.Acknowledged < int64(r.opts.replicas)):
		return Attempt{}, false, c.notReplicated(ctx, r, owner, res)
	}
	if ctx.Err() != nil { // F6: the caller is gone; nobody will use this lease
		c.releaseInBackground(ctx, r.key, owner)
		return Attempt{}, false, context.Cause(ctx)
	}
	if c.since(sentAt) >= r.ttl { // F6: the lease may already belong to someone else
		c.releaseNow(ctx, r.key, owner)
		return Attempt{}, false, nil
	}
	return Attempt{lock: newFencedLock(c.locks, r, owner, res.FencingToken, sentAt)}, false, nil
}

// runScript sends the acquisition script, followed by WAIT on the same
// connection when WithReplicas asked for it.
func (c *Coordinator) runScript(ctx context.Context, r request, owner lease.Token) (conn.ReplicatedFencedResult, error) {
	prefix := c.locks.KeyPrefix()
	leaseKey, counterKey, token := prefix+r.key, prefix+r.counterKey, string(owner.Bytes())
	if r.opts.replicas == 0 {
		res, err := c.acquire(ctx, c.client, leaseKey, counterKey, token, r.ttl.Milliseconds())
		return conn.ReplicatedFencedResult{FencedResult: res}, err
	}
	return c.acquireReplicated(ctx, c.client, leaseKey, counterKey, token, r.ttl.Milliseconds(),
		int64(r.opts.replicas), r.opts.replicaTimeout.Milliseconds())
}

// notReplicated releases a lease whose increment WAIT did not confirm and
// returns the error that says so. The script's reply is in, so the delete
// cannot overtake it.
func (c *Coordinator) notReplicated(ctx context.Context, r request, owner lease.Token, res conn.ReplicatedFencedResult) error {
	released, _ := c.releaseNow(ctx, r.key, owner)
	e := &NotReplicatedError{Key: r.key, Required: r.opts.replicas, Timeout: r.opts.replicaTimeout,
		Acknowledged: int(res.Acknowledged), Released: released, Err: res.WaitErr}
	if res.WaitErr != nil {
		e.Acknowledged = -1
	}
	return e
}

// cleanupContext is a context that outlives the caller's cancellation but
// keeps its values, bounded to cleanupTimeout.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// releaseNow deletes the lease if it still holds owner, best effort, and
// reports whether it did.
func (c *Coordinator) releaseNow(ctx context.Context, key string, owner lease.Token) (bool, error) {
	cleanup, cancel := cleanupContext(ctx)
	defer cancel()
	return c.locks.Release(cleanup, key, owner)
}

// releaseInBackground is releaseNow without delaying the caller; Close
// waits for it. Once Close has begun, the release runs in the caller instead
// (so that Close's wait covers every cleanup).
func (c *Coordinator) releaseInBackground(ctx context.Context, key string, owner lease.Token) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.releaseNow(ctx, key, owner)
		return
	}
	c.cleanups.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.cleanups.Done()
		c.releaseNow(ctx, key, owner)
	}()
}
