//go:build respire_mutation_fairhead

package chaos

// conn's fair-head mutation is built in (conn/mutation_fairhead_on.go): a
// replay must be built the same way.
func init() { buildTags = append(buildTags, "respire_mutation_fairhead") }
