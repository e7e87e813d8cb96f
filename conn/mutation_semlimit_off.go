//go:build !respire_mutation_semlimit

package conn

// mutationLimitSlack is 0 in every real build. The chaos campaign's
// mutation check builds with -tags respire_mutation_semlimit to prove that
// its checker catches a semaphore that admits one permit more than its
// limit (mutation_semlimit_on.go).
const mutationLimitSlack = 0
