//go:build respire_mutation_errclosing

package conn

// mutationClosingNotSubmitted reintroduces, on purpose, the bug that a
// locally closed socket proves nothing was sent: the engine takes an error
// of a connection it closed itself (a retired or fenced session) as "not
// submitted" (link.classify). Only the mutation checks build it — the
// chaos campaign's (make chaos-mutation) and the deterministic
// simulator's, which runs this engine (make dst-mutation); both must then
// report violations.
const mutationClosingNotSubmitted = true
