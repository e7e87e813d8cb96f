//go:build respire_mutation_fairhead

package conn

// fairHeadOffset breaks, on purpose, fair waiting: the scripts grant the
// lock to the waiter behind the head (the head itself only when it is
// alone), so grants leave ticket order whenever two waiters are queued.
// Only for `make dst-mutation` and `make chaos-mutation`
// (-tags respire_mutation_fairhead), which must catch it.
const fairHeadOffset = "1"
