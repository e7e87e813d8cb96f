package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/respire-go/respire/sim"
)

// TestLockctlJobControl_CtrlZInAShell: in an interactive bash on a
// terminal (a pty), Ctrl-Z stops CMD and then lockctl, and bash gets the
// terminal and its prompt back; fg hands the terminal to CMD again and
// resumes it, and Ctrl-C then ends the job with 130 and releases the lock.
func TestLockctlJobControl_CtrlZInAShell(t *testing.T) {
	t.Parallel()
	srv, err := sim.Start(context.Background(), sim.Config{Profile: sim.Redis70})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	started, status := filepath.Join(dir, "started"), filepath.Join(dir, "status")
	master, bash := startShell(t)
	typeLine(t, master, fmt.Sprintf(`%s --addr %s run --key k --ttl 30s -- sh -c 'echo $$ > %s; exec sleep 30'`,
		binary, srv.Addr(), started))
	cmdPid := readPid(t, started)
	lockctl := parentOf(t, cmdPid)
	group := pidGroup(cmdPid)
	t.Cleanup(func() { killIfRunning(lockctl, binary); killIfRunning(cmdPid, "sleep") })
	eventually(t, 5*time.Second, "CMD to get the terminal", foreground(master, group))

	_, _ = master.Write([]byte{0x1a}) // Ctrl-Z
	eventually(t, 5*time.Second, "CMD to stop", stoppedState(cmdPid))
	eventually(t, 5*time.Second, "lockctl to stop after CMD", stoppedState(lockctl))
	eventually(t, 5*time.Second, "bash to get the terminal back", foreground(master, bash))
	if reply := srv.Exec("EXISTS", "k"); reply != ":1\r\n" {
		t.Fatalf("EXISTS k = %q while the job is stopped within its lease", reply)
	}

	typeLine(t, master, "fg")
	eventually(t, 5*time.Second, "CMD to get the terminal again", foreground(master, group))
	eventually(t, 5*time.Second, "CMD to resume", runningState(cmdPid))
	eventually(t, 5*time.Second, "lockctl to resume", runningState(lockctl))

	_, _ = master.Write([]byte{0x03}) // Ctrl-C
	eventually(t, 10*time.Second, "the job to end", func() bool { return processGone(lockctl) })
	typeLine(t, master, "echo status=$? > "+status)
	eventually(t, 5*time.Second, "bash to report the job's status", fileHas(status, "status=130"))
	if reply := srv.Exec("EXISTS", "k"); reply != ":0\r\n" {
		t.Errorf("EXISTS k = %q after Ctrl-C: not released", reply)
	}
}

// startShell starts an interactive bash as the leader of a new session
// whose controlling terminal is a new pty; it returns the pty's master
// (its output is drained) and bash's pid. bash is killed when the test
// ends.
func startShell(t *testing.T) (*os.File, int) {
	t.Helper()
	path, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	master, slave := openPty(t)
	sh := exec.Command(path, "--norc", "--noprofile", "-i")
	sh.Env = append(cleanEnv(), "PS1=$ ", "TERM=dumb")
	sh.Stdin, sh.Stdout, sh.Stderr = slave, slave, slave
	sh.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	t.Cleanup(func() { _ = sh.Process.Kill(); _ = sh.Wait() })
	go func() { _, _ = drain(master) }()
	eventually(t, 5*time.Second, "bash to take the terminal", foreground(master, sh.Process.Pid))
	return master, sh.Process.Pid
}

// typeLine types line and Enter on the terminal.
func typeLine(t *testing.T, master *os.File, line string) {
	t.Helper()
	if _, err := master.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
}

// parentOf is pid's parent.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	st, ok := readStat(pid)
	if !ok {
		t.Fatalf("cannot read /proc/%d/stat", pid)
	}
	return st.ppid
}

// TestLockctlJobControl_NoShellToResumeIt: with no job-control shell to
// continue it (lockctl leads its own session on a pty, as under script(1)
// or docker -t: its process group is orphaned), Ctrl-Z does what the
// kernel does to an orphaned group: nothing lasting. CMD is continued at
// once, lockctl never stops, and Ctrl-C still ends the job.
func TestLockctlJobControl_NoShellToResumeIt(t *testing.T) {
	t.Parallel()
	master, slave := openPty(t)
	dir := t.TempDir()
	started, cont := filepath.Join(dir, "started"), filepath.Join(dir, "cont")
	script := `trap 'echo cont > "$2"' CONT; echo $$ > "$1"; while :; do sleep 0.05 & wait; done`
	p := startWith(t, nil, func(cmd *exec.Cmd) {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}, "--sim", "redis-7.0", "run", "--key", "k", "--ttl", "30s", "--", "sh", "-c", script, "sh", started, cont)
	slave.Close()
	go func() { _, _ = drain(master) }()
	cmdPid, lockctl := readPid(t, started), p.cmd.Process.Pid
	eventually(t, 5*time.Second, "CMD to get the terminal", foreground(master, pidGroup(cmdPid)))

	_, _ = master.Write([]byte{0x1a}) // Ctrl-Z
	eventually(t, 5*time.Second, "CMD to be continued after Ctrl-Z", fileHas(cont, "cont"))
	eventually(t, 5*time.Second, "CMD to run", runningState(cmdPid))
	if !runningState(lockctl)() {
		t.Fatal("lockctl stopped with nobody to continue it")
	}
	_, _ = master.Write([]byte{0x03}) // Ctrl-C
	if code := p.wait(t, 10*time.Second); code != exitSignalBase+int(syscall.SIGINT) {
		t.Fatalf("exit status %d after Ctrl-C, want 130", code)
	}
}

// openPty opens a new pseudo-terminal: its master, and its slave (not
// made the test's controlling terminal).
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	var unlock int32
	if err := ioctlInt(master, syscall.TIOCSPTLCK, &unlock); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	var n int32
	if err := ioctlInt(master, syscall.TIOCGPTN, &n); err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pty's slave: %v", err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// foreground reports whether pgrp is the foreground process group of the
// pty whose master is m.
func foreground(m *os.File, pgrp int) func() bool {
	return func() bool {
		var fg int32
		return ioctlInt(m, syscall.TIOCGPGRP, &fg) == nil && int(fg) == pgrp
	}
}

// drain reads f until it fails (the pty's output, which nobody checks).
func drain(f *os.File) (int64, error) {
	var total int64
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
}

// ioctlInt runs an ioctl on f whose argument is a pointer to an int32.
func ioctlInt(f *os.File, req uintptr, arg *int32) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(unsafe.Pointer(arg))); errno != 0 {
		return errno
	}
	return nil
}
