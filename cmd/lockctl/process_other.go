//go:build !linux

package main

import "syscall"

// childAttr is how CMD is started outside Linux: in a process group apart
// from lockctl's (startChild sets which).
// There is no parent-death signal here: if lockctl dies, only the guard
// (guard.go) kills CMD's group.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
