package main

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel kill the redis-server if this process dies
// without running its clean-up (a panic on another goroutine, SIGKILL).
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
