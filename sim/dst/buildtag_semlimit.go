//go:build respire_mutation_semlimit

package dst

// conn's semaphore-limit mutation is built in (conn/mutation_semlimit_on.go:
// every permit acquisition asks for one permit more than its limit): a
// replay must be built the same way.
func init() { buildTags = append(buildTags, "respire_mutation_semlimit") }
