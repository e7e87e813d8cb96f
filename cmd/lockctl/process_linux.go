package main

import "syscall"

// childAttr is how CMD is started on Linux: in a process group apart from
// lockctl's (startChild sets which), and
// with SIGKILL as its parent-death signal, so that the kernel kills CMD
// the moment lockctl dies, even by SIGKILL: nobody renews the lease any
// more, so CMD must not go on (it gets no grace period, as there is no
// supervisor left to time one). The kernel clears the signal when CMD
// executes a set-user-ID or set-group-ID program (sudo CMD); the guard
// (guard.go) still kills CMD's group then, and it is what kills the
// processes CMD started. The signal is tied to the
// thread that started CMD: see child.run.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
