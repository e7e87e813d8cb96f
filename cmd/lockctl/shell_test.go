package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/internal/faultproxy"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// TestLockctlDurationLimits_OutOfRangeValuesNameTheLimit: NaN, infinite,
// negative and too long durations are refused as usage errors naming the
// limit (lease.MaxTTL), never turned into a wrapped or saturated int64;
// the limit itself is accepted.
func TestLockctlDurationLimits_OutOfRangeValuesNameTheLimit(t *testing.T) {
	t.Parallel()
	limit := maxDuration.String()
	for _, args := range [][]string{
		{"run", "--key", "k", "--ttl", "NaN", "--", "true"},
		{"run", "--key", "k", "--ttl", "1e10", "--", "true"},
		{"run", "--key", "k", "--ttl", "+Inf", "--", "true"},
		{"run", "--key", "k", "--ttl", "876001h", "--", "true"},
		{"run", "--key", "k", "--wait", "1e300", "--", "true"},
		{"run", "--key", "k", "--wait", "-1e300", "--", "true"},
		{"run", "--key", "k", "--grace", "1e300", "--", "true"},
		{"run", "--key", "k", "--grace", "3000000h", "--", "true"},
		{"run", "--key", "k", "--grace", "-3000000h", "--", "true"},
		{"watch", "--interval", "1e400", "k"},
	} {
		code, stdout, stderr := runCLI(t, nil, append([]string{"--sim", "redis-8.4"}, args...)...)
		if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, limit) {
			t.Errorf("%q: exit %d, stderr %q; want 64 and one line naming the limit %s", args, code, stderr, limit)
		}
	}
	for _, in := range []string{limit, "3153600000"} {
		if d, err := parseDuration(in); err != nil || d != maxDuration {
			t.Errorf("parseDuration(%q) = %v, %v; want the limit itself", in, d, err)
		}
	}
	code, _, stderr := runCLI(t, nil, "--sim", "redis-8.4", "run", "--key", "k", "--ttl", limit,
		"--wait", limit, "--grace", limit, "--", "true")
	if code != 0 {
		t.Errorf("every duration at the limit: exit %d, %q; want 0", code, stderr)
	}
}

// TestLockctlRedisCliFlags_HostPortPasswordDBUser: redis-cli's -h, -p, -a
// and -n reach the server and database they name, before or after the
// command, and CMD runs (it used to print help instead); --user and -u
// work as in redis-cli.
func TestLockctlRedisCliFlags_HostPortPasswordDBUser(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		host, port, _ := net.SplitHostPort(tg.addr)
		key := uniqueKey(t, "redis-cli")
		dir := t.TempDir()
		ran, finish := filepath.Join(dir, "ran"), filepath.Join(dir, "finish")
		script := `echo ran > "$1"; while [ ! -e "$2" ]; do sleep 0.02; done`
		p := start(t, cleanEnv(), "-h", host, "-p", port, "-a", tg.password, "run", "-n", "3", "--key", key,
			"--", "sh", "-c", script, "sh", ran, finish)
		eventually(t, 10*time.Second, "CMD to run", fileHas(ran, "ran"))
		db3 := newTargetDB(t, tg, 3)
		if _, found := db3.get(t, key); !found {
			t.Error("the key is not held in database 3 (-n 3)")
		}
		if _, found := tg.get(t, key); found {
			t.Error("the key is held in database 0 despite -n 3")
		}
		if err := os.WriteFile(finish, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t, 10*time.Second); code != 0 {
			t.Fatalf("exit %d; stderr %q", code, p.stderr.String())
		}
	})

	srv, err := sim.Start(context.Background(), sim.Config{Profile: sim.Redis70, Password: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.SetUser("reader", "readerpw", "get", "pttl")
	srv.Exec("SET", "k", "v", "PX", "60000")
	host, port, _ := net.SplitHostPort(srv.Addr())
	for _, args := range [][]string{
		{"-h", host, "-p", port, "--user", "reader", "-a", "readerpw", "status", "k"},
		{"status", "-u", "redis://reader:readerpw@" + srv.Addr(), "k"},
	} {
		if code, stdout, stderr := runCLI(t, nil, args...); code != 0 || !strings.HasPrefix(stdout, "k: owner present") {
			t.Errorf("%q: exit %d, %q %q", args, code, stdout, stderr)
		}
	}
}

// newTargetDB is a connection to database db of tg.
func newTargetDB(t *testing.T, tg *target, db int) *target {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{tg.addr}, Password: tg.password,
		SelectDB: db, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatalf("%s: connect to database %d: %v", tg.name, db, err)
	}
	t.Cleanup(client.Close)
	return &target{name: tg.name, addr: tg.addr, password: tg.password, client: client}
}

// TestLockctlRedisCliFlags_DashHIsNeverHelp: -h is the host everywhere
// (acl included); a -h without a host is a usage error that says so; help
// is --help (or -help).
func TestLockctlRedisCliFlags_DashHIsNeverHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-h"}, {"run", "-h"}, {"status", "k", "-h"}} {
		code, stdout, stderr := runCLI(t, nil, args...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, "-h is the server host") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 64 explaining -h", args, code, stdout, stderr)
		}
	}
	if code, stdout, _ := runCLI(t, nil, "acl", "-h", "127.0.0.1", "--server", "redis-7.0"); code != 0 ||
		!strings.HasPrefix(stdout, "ACL SETUSER") {
		t.Errorf("acl -h HOST: exit %d, %q; want the rule, not help", code, stdout)
	}
	for _, args := range [][]string{{"--help"}, {"-help"}, {"run", "--help"}} {
		if code, stdout, _ := runCLI(t, nil, args...); code != 0 || !strings.HasPrefix(stdout, "Usage: lockctl") {
			t.Errorf("%q: exit %d; want help", args, code)
		}
	}
	for _, args := range [][]string{
		{"-h", "127.0.0.1", "--addr", "127.0.0.1:6379", "status", "k"},
		{"-p", "6379", "--url", "redis://127.0.0.1", "status", "k"},
		{"-p", "0", "status", "k"},
		{"-n", "-2", "status", "k"},
		{"-c", "-n", "1", "status", "k"},
	} {
		if code, _, stderr := runCLI(t, nil, args...); code != exitUsage || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, %q; want 64", args, code, stderr)
		}
	}
}

// TestLockctlExitStatuses_EachFailureHasItsCode: contention 75, usage 64,
// an unreachable server 69, refused credentials or permissions 77, a free
// key for status 1 — on every command that connects.
func TestLockctlExitStatuses_EachFailureHasItsCode(t *testing.T) {
	t.Parallel()
	srv, err := sim.Start(context.Background(), sim.Config{Profile: sim.Valkey90, Password: "right"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.Exec("SET", "held", "other", "PX", "3600000") // an hour: the test's runs take minutes on a loaded machine
	srv.SetUser("reader", "readerpw", "get")
	down := closedPort(t)
	commands := [][]string{{"run", "--key", "k", "--", "true"}, {"status", "k"}, {"release", "k", "--token", "00ff"},
		{"watch", "k"}}
	conns := []struct {
		conn []string
		want int
	}{
		{[]string{"--addr", down}, exitUnavailable},
		{[]string{"-h", "127.0.0.1", "-p", strings.Split(down, ":")[1]}, exitUnavailable},
		{[]string{"--addr", srv.Addr(), "--password", "wrong"}, exitNoPerm},
		{[]string{"--addr", srv.Addr()}, exitNoPerm},
		{[]string{"--addr", srv.Addr(), "--user", "nobody", "--password", "x"}, exitNoPerm},
	}
	for _, c := range conns {
		for _, cmd := range commands {
			args := append(append([]string{}, c.conn...), cmd...)
			if code, _, stderr := runCLI(t, nil, args...); code != c.want || strings.Count(stderr, "\n") != 1 {
				t.Errorf("%q: exit %d, %q; want %d and one line", args, code, stderr, c.want)
			}
		}
	}
	ok := []string{"--addr", srv.Addr(), "--password", "right"}
	for _, tc := range []struct {
		args []string
		want int
	}{
		{append(ok, "run", "--key", "held", "--", "true"), exitNotAcquired},
		{append(ok, "run", "--key", "k", "--bogus", "--", "true"), exitUsage},
		{append(ok, "status", "held", "free"), exitNotHeld},
		{[]string{"--addr", srv.Addr(), "--user", "reader", "--password", "readerpw", "status", "held"}, exitNoPerm},
	} {
		if code, _, stderr := runCLI(t, nil, tc.args...); code != tc.want {
			t.Errorf("%q: exit %d, %q; want %d", tc.args, code, stderr, tc.want)
		}
	}
}

// TestLockctlOneTokenFormat_ShowTokenFeedsRelease: the token status
// --show-token prints (alone with -q) is exactly what release --token
// takes; the key's stored value, as redis-cli GET shows it, is refused
// with a hint and deletes nothing; status shows the owner's fingerprint
// exactly as watch does.
func TestLockctlOneTokenFormat_ShowTokenFeedsRelease(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		key := uniqueKey(t, "token")
		token := lease.NewToken() // what managed locks store: 32 hex characters
		stored, _ := token.Text()
		tg.do(t, tg.client.B().Set().Key(key).Value(stored).Px(time.Minute).Build())

		code, printed, stderr := runCLI(t, tg.env(), append(tg.conn(), "status", "-q", "--show-token", key)...)
		if code != 0 || printed != token.Hex()+"\n" {
			t.Fatalf("status -q --show-token: exit %d, %q, %q; want the token's hex alone", code, printed, stderr)
		}
		_, line, _ := runCLI(t, tg.env(), append(tg.conn(), "status", "--show-token", key)...)
		if !strings.Contains(line, "token "+token.Hex()) {
			t.Errorf("status --show-token printed %q; want %q in it", line, "token "+token.Hex())
		}
		fp := "owner=" + fingerprint(stored)
		if !strings.Contains(line, fp) {
			t.Errorf("status printed %q; want the fingerprint %s", line, fp)
		}
		if first := firstWatchLine(t, tg, key); !strings.Contains(first, fp) {
			t.Errorf("watch printed %q; want the same fingerprint %s as status", first, fp)
		}

		code, stdout, stderr := runCLI(t, tg.env(), append(tg.conn(), "release", key, "--token", stored)...)
		if code != exitNotHeld || stdout != "not owned\n" || !strings.Contains(stderr, "status --show-token") {
			t.Errorf("release with the stored value: exit %d, %q, %q; want 1 and a hint", code, stdout, stderr)
		}
		if _, found := tg.get(t, key); !found {
			t.Fatal("release with the stored value deleted the key")
		}
		given := strings.TrimSpace(printed)
		if code, stdout, _ := runCLI(t, tg.env(), append(tg.conn(), "release", key, "--token", given)...); code != 0 ||
			stdout != "released\n" {
			t.Fatalf("release with the printed token: exit %d, %q", code, stdout)
		}
	})
}

// firstWatchLine runs watch on key until it prints its first line.
func firstWatchLine(t *testing.T, tg *target, key string) string {
	t.Helper()
	cmd := exec.Command(binary, append(tg.conn(), "watch", key)...)
	cmd.Env = tg.env()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	select {
	case line := <-readLines(stdout):
		return line
	case <-time.After(patience):
		t.Fatalf("watch printed nothing within %v", patience)
	}
	return ""
}

// TestLockctlStatusIsScriptable_ExitStatusAndQuiet: status exits 0 when
// every KEY is held and 1 when one is free, printing nothing with -q, so
// `lockctl status -q KEY && ...` runs only while KEY is held; fencing
// counters do not count.
func TestLockctlStatusIsScriptable_ExitStatusAndQuiet(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		held, free := uniqueKey(t, "held"), uniqueKey(t, "free")
		tg.do(t, tg.client.B().Set().Key(held).Value("owner").Px(time.Minute).Build())
		for _, tc := range []struct {
			args   []string
			want   int
			output bool
		}{
			{[]string{"status", "-q", held}, 0, false},
			{[]string{"status", "-q", free}, exitNotHeld, false},
			{[]string{"status", "-q", held, free}, exitNotHeld, false},
			{[]string{"status", held, free}, exitNotHeld, true},
			{[]string{"status", "--fenced", free}, 0, true},
		} {
			code, stdout, stderr := runCLI(t, tg.env(), append(tg.conn(), tc.args...)...)
			if code != tc.want || (stdout != "") != tc.output || stderr != "" {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d", tc.args, code, stdout, stderr, tc.want)
			}
		}
		for key, want := range map[string]string{held: "held-branch\n", free: ""} {
			sh := exec.Command("sh", "-c", `"$0" --addr "$1" status -q "$2" && echo held-branch`, binary, tg.addr, key)
			sh.Env = tg.env()
			out, _ := sh.Output()
			if string(out) != want {
				t.Errorf("lockctl status -q %s && echo held-branch: printed %q; want %q", key, out, want)
			}
		}
	})
}

// TestLockctlWatchReportsConnection_LostAndBack: when watch's reads fail
// for want of a connection it prints one timestamped "disconnected" line,
// and one "reconnected" line once they work again, then goes on reporting
// the key.
func TestLockctlWatchReportsConnection_LostAndBack(t *testing.T) {
	t.Parallel()
	srv, err := sim.Start(context.Background(), sim.Config{Profile: sim.Redis70})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	proxy, err := faultproxy.Start(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	cmd := exec.Command(binary, "--addr", proxy.Addr(), "watch", "--interval", "20ms", "k")
	cmd.Env = cleanEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := readLines(stdout)
	expect(t, lines, "free", "k", "")

	proxy.Refuse(true)
	for _, c := range proxy.Conns() {
		c.Reset()
	}
	expectConnLine(t, lines, "disconnected from "+proxy.Addr())
	proxy.Refuse(false)
	expectConnLine(t, lines, "reconnected to "+proxy.Addr())
	srv.Exec("SET", "k", "owner-a", "PX", "60000")
	for { // a socket the client opened while refused may fail once more: a flap, reported as such
		select {
		case line := <-lines:
			if fields := strings.Fields(line); len(fields) > 1 && (fields[1] == "disconnected" || fields[1] == "reconnected") {
				continue
			}
			if want := "acquired k owner=" + fingerprint("owner-a"); !strings.Contains(line, want) {
				t.Fatalf("watch printed %q; want %q", line, want)
			}
			return
		case <-time.After(patience):
			t.Fatalf("watch printed no acquisition within %v of the reconnection", patience)
		}
	}
}

// expectConnLine reads the next line (waiting up to patience) and checks that it is
// a timestamped line containing want.
func expectConnLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	select {
	case line := <-lines:
		stamp, rest, _ := strings.Cut(line, " ")
		if _, err := time.Parse(timeLayout, stamp); err != nil || !strings.HasPrefix(rest, want) {
			t.Fatalf("watch printed %q; want a timestamped %q line", line, want)
		}
	case <-time.After(patience):
		t.Fatalf("watch printed no %q line within %v", want, patience)
	}
}
