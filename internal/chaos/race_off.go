//go:build !race

package chaos

// raceSlowdown is 1 without the race detector (race_on.go).
const raceSlowdown = 1
