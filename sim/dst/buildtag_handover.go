//go:build respire_mutation_handover

package dst

// conn's hand-over mutation is built in (conn/mutation_handover_on.go: the
// hand-over script skips its owner compare): a replay must be built the
// same way.
func init() { buildTags = append(buildTags, "respire_mutation_handover") }
