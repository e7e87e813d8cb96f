package main

import (
	"os"
	"syscall"
	"unsafe"
)

// terminal is lockctl's controlling terminal while lockctl's process group
// is its foreground group: CMD's group is made the foreground group while
// CMD runs, as a shell does for a job, and lockctl's is restored after.
type terminal struct {
	fd   int
	pgrp int // lockctl's process group
}

// foregroundTerminal returns stdin's terminal when lockctl's process group
// is its foreground group, and nil otherwise (no terminal, or lockctl runs
// in the background or from a script).
func foregroundTerminal() *terminal {
	fd := int(os.Stdin.Fd())
	var pgrp int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCGPGRP,
		uintptr(unsafe.Pointer(&pgrp))); errno != 0 {
		return nil
	}
	if int(pgrp) != syscall.Getpgrp() {
		return nil
	}
	return &terminal{fd: fd, pgrp: int(pgrp)}
}

// setForeground makes pgrp the terminal's foreground process group. A
// background process doing so gets SIGTTOU unless it ignores it: startChild
// ignores it before the first call.
func (t *terminal) setForeground(pgrp int) bool {
	p := int32(pgrp)
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(t.fd), syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&p)))
	return errno == 0
}

// handTo makes CMD's group the foreground group.
func (t *terminal) handTo(pgid int) bool { return t.setForeground(pgid) }

// reclaim makes lockctl's group the foreground group again; nil does
// nothing.
func (t *terminal) reclaim() {
	if t != nil {
		t.setForeground(t.pgrp)
	}
}
