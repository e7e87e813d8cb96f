// Package bench holds the performance benchmarks of the managed lock handles
// (lease.TryAcquire + Release, held locks with keep-alive), side by side with
// raw rueidis doing the same wire work by hand. They need a private
// redis-server: RESPIRE_REAL_REDIS70=host:port and
// RESPIRE_REAL_REDIS70_PASSWORD (`make bench` starts one); they skip
// otherwise. Run: go test -run '^$' -bench . -benchmem ./bench/
package bench
