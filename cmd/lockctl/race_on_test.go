//go:build race

package main

// raceEnabled: the test binary runs with the race detector, so TestMain
// builds lockctl with it too.
const raceEnabled = true
