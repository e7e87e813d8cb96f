//go:build respire_mutation_renewal

package dst

// The driver's renewal mutation is built in (actor/mutation_on.go): a
// replay must be built the same way.
func init() { buildTags = append(buildTags, "respire_mutation_renewal") }
