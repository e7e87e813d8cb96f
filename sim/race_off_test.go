//go:build !race

package sim_test

// raceBuild: see race_on_test.go.
const raceBuild = false
