package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/respire-go/respire/internal/leakcheck"
	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/sim"
)

// binary is the lockctl built once for all tests (by TestMain).
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lockctl-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "lockctl")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building lockctl:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(leakcheck.RueidisBackground()...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// target is a server the end-to-end tests run lockctl against: a sim
// started by the test, or the real redis-server of scripts/with-servers.sh.
// client is the test's own connection, to look at and change keys.
type target struct {
	name, addr, password string
	client               rueidis.Client
}

// targets returns a redis-8.4 sim and, when RESPIRE_REAL_REDIS70 is set,
// the real redis-server 7.0 (locked for this test: other packages' tests
// flush it).
func targets(t *testing.T) []*target {
	t.Helper()
	srv, err := sim.Start(context.Background(), sim.Config{Profile: sim.Redis84, Password: "sim-pw"})
	if err != nil {
		t.Fatalf("sim.Start: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	list := []*target{newTarget(t, "sim-redis-8.4", srv.Addr(), "sim-pw")}
	if addr := os.Getenv("RESPIRE_REAL_REDIS70"); addr != "" {
		list = append(list, newTarget(t, "real-redis-7.0", addr, os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD")))
	}
	return list
}

func newTarget(t *testing.T, name, addr, password string) *target {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Password: password,
		DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatalf("%s: connect: %v", name, err)
	}
	t.Cleanup(client.Close)
	return &target{name: name, addr: addr, password: password, client: client}
}

// each runs f as a subtest per target; the real server is locked first.
func each(t *testing.T, f func(t *testing.T, tg *target)) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			if strings.HasPrefix(tg.name, "real") {
				realserver.Lock(t, tg.addr)
			}
			f(t, tg)
		})
	}
}

// conn returns the connection flags for tg (the password goes in the
// environment, see env).
func (tg *target) conn() []string { return []string{"--addr", tg.addr} }

// env is lockctl's environment for tg.
func (tg *target) env() []string { return append(cleanEnv(), "REDIS_PASSWORD="+tg.password) }

// get returns key's value, or "" with found false.
func (tg *target) get(t *testing.T, key string) (string, bool) {
	t.Helper()
	v, err := tg.client.Do(context.Background(), tg.client.B().Get().Key(key).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "", false
	}
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	return v, true
}

// do runs a command on tg for the test.
func (tg *target) do(t *testing.T, cmd rueidis.Completed) {
	t.Helper()
	if err := tg.client.Do(context.Background(), cmd).Error(); err != nil {
		t.Fatalf("%v: %v", cmd.Commands(), err)
	}
}

// cleanEnv is the test process's environment without the variables
// lockctl reads. A race-enabled lockctl is told not to sleep 1 s at exit
// (the race detector's default, for other threads to report).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDIS_URL=") && !strings.HasPrefix(kv, "REDIS_PASSWORD=") &&
			!strings.HasPrefix(kv, "GORACE=") {
			env = append(env, kv)
		}
	}
	if raceEnabled {
		env = append(env, "GORACE=atexit_sleep_ms=0 halt_on_error=1")
	}
	return env
}

// uniqueKey returns a key no other test uses.
func uniqueKey(t *testing.T, what string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "lockctl-test:" + what + ":" + hex.EncodeToString(b[:])
}

// proc is a started lockctl.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
}

// start starts lockctl with args and env (nil: cleanEnv()).
func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	return startWith(t, env, nil, args...)
}

// startWith is start with setup applied to the command before it starts
// (its process attributes, its streams).
func startWith(t *testing.T, env []string, setup func(*exec.Cmd), args ...string) *proc {
	t.Helper()
	if env == nil {
		env = cleanEnv()
	}
	p := &proc{cmd: exec.Command(binary, args...), done: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if setup != nil {
		setup(p.cmd)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start lockctl: %v", err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// patience is the least time a test waits for an event it expects — a
// process starting or exiting, a line printed, a file written — whatever
// shorter limit the call names (what an idle machine needs). Such a wait
// only turns a hang into a failure and claims nothing about how soon the
// event comes; a race-enabled lockctl on a loaded machine (load 30 on two
// cores) takes tens of seconds for what takes a second on an idle one.
const patience = 2 * time.Minute

// wait waits for lockctl to exit (for limit, at least patience) and returns
// its status. When it does not exit, it is sent SIGQUIT (its goroutines'
// stacks go to stderr) and killed, and the test fails with its stderr.
func (p *proc) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	limit = max(limit, patience)
	select {
	case <-p.done:
	case <-time.After(limit):
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		t.Fatalf("lockctl %q did not exit within %v; stderr: %s", p.cmd.Args[1:], limit, p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// runCLI runs lockctl to completion (at most 20 s) and returns its
// status, stdout and stderr.
func runCLI(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	p := start(t, env, args...)
	code := p.wait(t, 20*time.Second)
	return code, p.stdout.String(), p.stderr.String()
}

// eventually polls cond every 10 ms until it holds or limit (at least
// patience) passes.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	limit = max(limit, patience)
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fileHas reports whether the file at path holds want (trimmed).
func fileHas(path, want string) func() bool {
	return func() bool {
		b, err := os.ReadFile(path)
		return err == nil && strings.TrimSpace(string(b)) == want
	}
}

// processGone reports whether pid has exited (a zombie counts as exited).
func processGone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err != nil || !liveMember(string(stat), pidGroup(pid))
}

// procState is pid's state letter from /proc/PID/stat ('R', 'S', 'T' for
// stopped, 'Z', ...), or 0 when it cannot be read.
func procState(pid int) byte {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}

// stoppedState reports whether pid is stopped (by a signal or a tracer).
func stoppedState(pid int) func() bool {
	return func() bool { s := procState(pid); return s == 'T' || s == 't' }
}

// runningState reports whether pid is alive and not stopped.
func runningState(pid int) func() bool {
	return func() bool { s := procState(pid); return s != 0 && s != 'T' && s != 't' && s != 'Z' && s != 'X' }
}

// killIfRunning sends SIGKILL to pid if it still runs the program named
// prog (so that a pid reused by another program is left alone).
func killIfRunning(pid int, prog string) {
	cmdline, err := os.ReadFile("/proc/" + fmt.Sprint(pid) + "/cmdline")
	if err == nil && strings.HasPrefix(string(cmdline), prog) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// pidGroup is pid's process group, or -1.
func pidGroup(pid int) int {
	g, err := syscall.Getpgid(pid)
	if err != nil {
		return -1
	}
	return g
}
