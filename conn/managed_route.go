package conn

import "context"

// SessionForKey returns the current session to the primary that owns key
// (the single node in standalone mode), opening one when needed. Managed lock
// handles use it to learn, before sending, which session will carry a
// command, so that a later fence can name it. It blocks while routing
// (CLUSTER SLOTS on first use in cluster mode) or opening; failures are
// NotSubmitted *Error values.
func (p *Pool) SessionForKey(ctx context.Context, key string) (Session, error) {
	node, err := p.route(ctx, "open", key)
	if err != nil {
		return nil, err
	}
	return p.SessionFor(ctx, node)
}
