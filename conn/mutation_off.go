//go:build !respire_mutation_errclosing

package conn

// mutationClosingNotSubmitted is false in every real build. The chaos
// campaign's mutation check builds with -tags respire_mutation_errclosing to
// prove that its checker catches the old bug of treating rueidis.ErrClosing
// as "not submitted" (mutation_on.go).
const mutationClosingNotSubmitted = false
