//go:build race

package sim_test

// raceBuild: the race detector slows a schedule about tenfold, so the CI
// budget (make test runs with -race) is smaller; make sim runs the long
// campaigns.
const raceBuild = true
