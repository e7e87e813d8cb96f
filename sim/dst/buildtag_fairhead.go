//go:build respire_mutation_fairhead

package dst

// conn's fair-head mutation is built in (conn/mutation_fairhead_on.go: the
// fair queue's scripts grant to the waiter behind the head): a replay must
// be built the same way.
func init() { buildTags = append(buildTags, "respire_mutation_fairhead") }
