//go:build !linux

package main

import "os/exec"

// setDeathSignal has no portable equivalent off Linux: there the deferred
// stop and the signal handler are the only clean-up.
func setDeathSignal(*exec.Cmd) {}
