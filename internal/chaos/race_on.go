//go:build race

package chaos

// raceSlowdown scales the checks' liveness windows (how soon a clean-up,
// a writer's marker or a freed permit must show on the server) in a build
// with the race detector, which runs the client several times slower: the
// CI budget (go test -race) would otherwise flag a slow machine as a
// broken rule. Its waits are not scaled, so with it the free-lock and
// permit checks seldom apply; make chaos (no -race) runs them all.
const raceSlowdown = 3
