package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// orphanedGroup reports whether lockctl's process group is orphaned: no
// member has its parent in another process group of the same session, so
// no job-control shell can continue the group once stopped. Where /proc
// can be read every member is looked at; elsewhere only lockctl's own
// parent (a group of one, the usual job, is then judged right).
func orphanedGroup() bool {
	pgrp, sid := syscall.Getpgrp(), mySession()
	if parentKeeps(os.Getppid(), pgrp, sid) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if st, ok := readStat(pid); ok && st.pgrp == pgrp && parentKeeps(st.ppid, pgrp, sid) {
			return false
		}
	}
	return true
}

// parentKeeps reports whether ppid, the parent of a member of group pgrp,
// is in another group of session sid: it keeps pgrp from being orphaned.
func parentKeeps(ppid, pgrp, sid int) bool {
	parentGroup, err := syscall.Getpgid(ppid)
	if err != nil || parentGroup == pgrp {
		return false
	}
	parentSession, err := getsid(ppid)
	return err == nil && parentSession == sid
}

// mySession is lockctl's session id.
func mySession() int {
	sid, _ := getsid(0)
	return sid
}

// getsid is getsid(2).
func getsid(pid int) (int, error) {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(sid), nil
}

// procStat is what orphanedGroup needs of /proc/PID/stat.
type procStat struct{ ppid, pgrp int }

// readStat reads /proc/PID/stat ("pid (comm) state ppid pgrp ...").
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	return procStat{ppid: ppid, pgrp: pgrp}, err1 == nil && err2 == nil
}
