//go:build respire_mutation_guard

package dst

// conn's guarded-write mutation is built in (conn/mutation_guard_on.go: the
// guard scripts skip their ownership check): a replay must be built the
// same way.
func init() { buildTags = append(buildTags, "respire_mutation_guard") }
