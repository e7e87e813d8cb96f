//go:build respire_mutation_semlimit

package conn

// mutationLimitSlack breaks, on purpose, the semaphore's limit: every
// acquisition asks the server for one permit more than its limit (and
// stores that limit, so that every process agrees on the wrong one). Only
// the chaos campaign's mutation check builds it (go run -tags
// respire_mutation_semlimit ./cmd/chaos); it must then report violations.
const mutationLimitSlack = 1
