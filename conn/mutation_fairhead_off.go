//go:build !respire_mutation_fairhead

package conn

// fairHeadOffset is where the fair queue's scripts start reading the
// queue for the waiters to grant: at its head, in every real build. The
// deterministic simulator's and the chaos campaign's fair-order invariant
// is checked against a build that breaks this on purpose
// (mutation_fairhead_on.go).
const fairHeadOffset = "0"
