//go:build respire_mutation_renewal

package actor

// mutationRenewalUncertainIsOK reintroduces, on purpose, a bug in the
// driver's renewal code: a renewal whose outcome is unknown (a timeout,
// a cancellation or a connection lost after the write) is taken as a
// confirmed renewal, so the handle keeps its lease and renews again while
// the unknown one may still run, instead of fencing and giving the lease
// up. Only the mutation checks build it — the deterministic simulator's
// (go test -tags respire_mutation_renewal ./sim -run
// TestSimulatorRunsTheShippedDriver) and the chaos campaign's (go run -tags
// respire_mutation_renewal ./cmd/chaos -runs 300 -expect-violation); both
// must then report violations.
const mutationRenewalUncertainIsOK = true
