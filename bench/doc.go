// Package bench holds respire-go's benchmarks, in a Go module of its own
// (github.com/respire-go/respire/bench, replacing the library with ../) so
// that users of the library never inherit the peers' dependencies.
//
// The peer benchmark is the program in cmd/peerbench: respire-go against raw
// rueidis and raw go-redis doing the same wire work, redsync, bsm/redislock
// and rueidislock, on a private redis-server it starts itself. `make bench`
// runs it and writes RESULTS.md; from this directory:
//
//	go run ./cmd/peerbench -reps 3 -ctx both
//
// Besides throughput, latency and memory it compares waiting: hand-off
// latency between 16 waiters, loss-detection latency, server commands per
// held lock and the cost of 10,000 waiters, respire-go (invalidation
// pushes) against respire-go-poll (lease.WithoutPush), raw rueidis polling
// SET NX by hand and the peers that can wait (the hand-off tables give SET NX
// per hand-off, p50 and p99 side by side); fair waiting
// (lease.WithFairWait) with a waiter in a child process killed with SIGKILL
// in the middle of the queue (fair-dead-waiter: what it costs the waiters
// behind it, against its waiter lease); -scenarios selects tables, e.g.
//
//	go run ./cmd/peerbench -scenarios handoff,loss -reps 3
//
// This package's micro-benchmarks measure the managed lock handles
// (lease.TryAcquire + Release, held locks with keep-alive) side by side with
// raw rueidis by hand. They need a private redis-server:
// RESPIRE_REAL_REDIS70=host:port and RESPIRE_REAL_REDIS70_PASSWORD
// (`make bench-micro` starts one with scripts/with-servers.sh); they skip
// otherwise. Run: go test -run '^$' -bench . -benchmem . (from bench/).
package bench
