//go:build respire_mutation_guard

package conn

// guardCheck breaks, on purpose, the guarded-write scripts: the lease
// key's value is read but never compared, so a holder whose lease ended
// (or was taken over) still writes. Only the mutation checks build it (go
// run -tags respire_mutation_guard ./cmd/chaos, go test -tags
// respire_mutation_guard ./sim); they must then report violations.
const guardCheck = "if false and redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end\n"

// MutationGuard reports whether this build's guarded-write scripts skip
// their ownership check (the respire_mutation_guard build tag).
const MutationGuard = true
