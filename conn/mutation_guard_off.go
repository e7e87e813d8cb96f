//go:build !respire_mutation_guard

package conn

// guardCheck is the guarded-write scripts' ownership check, unchanged in
// every real build. The chaos campaign and the deterministic simulator
// build with -tags respire_mutation_guard to prove that their checkers
// catch a guard that lets a stale holder write (mutation_guard_on.go).
const guardCheck = guardCheckSource

// MutationGuard reports whether this build's guarded-write scripts skip
// their ownership check (the respire_mutation_guard build tag).
const MutationGuard = false
