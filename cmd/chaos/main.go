// Command chaos runs a randomised fault campaign through the wire engine
// (make chaos): many seeded schedules of internal/chaos, each a few
// processes of lease on the root module's own client (internal/wire) behind
// a fault proxy, an outsider, and a fault injector, checked against the
// lock's rules. It prints a progress line, every failing seed with its
// violations and the command that replays it, and the totals of what was
// exercised; the exit status is 1 when any schedule broke a rule. Each
// client adapter runs the same campaign on its client from its own module
// (rueidislease/cmd/chaos, goredis/cmd/chaos): this module links no Redis
// client for its locks.
//
//	go run ./cmd/chaos -runs 10000                      # sim nodes, every profile
//	go run ./cmd/chaos -runs 200 -target 127.0.0.1:6379 -password …
//	go run -tags respire_mutation_errclosing ./cmd/chaos -runs 300 -expect-violation
//	go run -tags respire_mutation_semlimit ./cmd/chaos -runs 300 -expect-violation
//	go run -tags respire_mutation_guard ./cmd/chaos -runs 300 -expect-violation
//
// With -expect-violation (the mutation check) it exits 0 as soon as one
// schedule reports a violation and 1, "mutation survived N schedules", when
// none does.
package main

import (
	"os"

	"github.com/respire-go/respire/internal/chaos"
)

func main() { os.Exit(chaos.Main(os.Args[1:], os.Stdout, chaos.Wire)) }
