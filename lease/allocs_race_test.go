//go:build race

package lease

// pairAllocsBaseline is pair's allocation figure in the race build, whose
// instrumentation allocates more (see allocs_norace_test.go).
const pairAllocsBaseline = 7
