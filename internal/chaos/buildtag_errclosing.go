//go:build respire_mutation_errclosing

package chaos

// conn's ErrClosing mutation is built in (conn/mutation_on.go): a replay
// must be built the same way.
func init() { buildTags = append(buildTags, "respire_mutation_errclosing") }
