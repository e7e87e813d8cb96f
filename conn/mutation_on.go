//go:build respire_mutation_errclosing

package conn

// mutationClosingNotSubmitted reintroduces, on purpose, the bug that a
// locally closed socket proves nothing was sent. Only the chaos campaign's
// mutation check builds it (go run -tags respire_mutation_errclosing
// ./cmd/chaos); it must then report violations.
const mutationClosingNotSubmitted = true
