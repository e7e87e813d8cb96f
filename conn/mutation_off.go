//go:build !respire_mutation_errclosing

package conn

// mutationClosingNotSubmitted is false in every real build. The chaos
// campaign's and the deterministic simulator's mutation checks build with
// -tags respire_mutation_errclosing to prove that their checkers catch the
// old bug of treating an error of a connection the engine closed itself
// as "not submitted" (mutation_on.go).
const mutationClosingNotSubmitted = false
