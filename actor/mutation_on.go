//go:build respire_mutation_renewal

package actor

// mutationRenewalAnswerIgnored reintroduces, on purpose, a bug in the
// driver's renewal code: the renewer ignores its renewal's answer, so a
// renewal the server refused (the key expired or has another owner) or
// whose outcome is unknown (a timeout, a cancellation, a connection lost
// after the write) counts as confirmed: the handle keeps believing it
// holds the lease, and renews again while the unknown one may still run,
// instead of giving the lease up (and fencing). Only the mutation checks
// build it — the deterministic simulator's (make dst-mutation: go test
// -tags respire_mutation_renewal ./sim -run
// TestSimulatorRunsTheShippedDriver_CatchesTheDriversRenewalMutation) and
// the chaos campaign's (make chaos-mutation: go run -tags
// respire_mutation_renewal ./cmd/chaos -runs 300 -expect-violation); both
// must then report violations.
const mutationRenewalAnswerIgnored = true
