package conn

// This file exposes, to the external test package conn_test (which can
// import internal/wire: a client of conn's own would be an import cycle
// for package conn's tests), the engine's internals the tests inspect.

import "context"

// Pinned is the engine's session type.
type Pinned = session

// Pool is the engine (the tests' name for it).
type Pool = Engine

// Pin returns s as the engine's session type.
func Pin(s Session) *Pinned { return s.(*session) }

// SessionForT is sessionFor.
func (e *Engine) SessionForT(ctx context.Context, node string) (*Pinned, error) {
	return e.sessionFor(ctx, node)
}

// RouteT is route.
func (e *Engine) RouteT(ctx context.Context, op, key string) (string, error) {
	return e.route(ctx, op, key)
}

// OpenSessionT is openSession.
func (e *Engine) OpenSessionT(ctx context.Context, node string) (*Pinned, error) {
	return e.openSession(ctx, node)
}

// WaitCount is waitCount.
var WaitCount = waitCount
