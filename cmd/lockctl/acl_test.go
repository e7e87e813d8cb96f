package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/sim"
)

// aclCommands returns the commands of the rule `lockctl acl` prints, as
// the simulator's SetUser takes them ("set", "client|id", ...).
func aclCommands(t *testing.T, args ...string) []string {
	t.Helper()
	code, stdout, stderr := runCLI(t, nil, append([]string{"acl"}, args...)...)
	if code != 0 {
		t.Fatalf("acl %q: exit %d, %q", args, code, stderr)
	}
	var cmds []string
	for _, f := range strings.Fields(stdout) {
		if c, ok := strings.CutPrefix(f, "+"); ok {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// TestRunAsLeastPrivilegeUser: on every server version, a user with just
// the rule of `lockctl acl --server V --managed` can `lockctl run` (no
// CLIENT TRACKING needed), and with that of `--managed --fenced`, run
// --fenced; with the raw-token rule only, run fails with 77 (EX_NOPERM)
// and names the fix, and --unfenced-renewal makes it work.
func TestRunAsLeastPrivilegeUser(t *testing.T) {
	t.Parallel()
	if !strings.Contains(runUsage, "lockctl acl --server VERSION --managed --fenced") {
		t.Error("run --help does not name the rule --fenced needs")
	}
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			srv, err := sim.Start(context.Background(), sim.Config{Profile: profile, Password: "admin"})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			conn := []string{"--addr", srv.Addr(), "--user", "locker", "--password", "lockerpw"}

			srv.SetUser("locker", "lockerpw", aclCommands(t, "--server", string(profile), "--managed")...)
			if code, _, stderr := runCLI(t, nil, append(conn, "run", "--key", "k", "--", "true")...); code != 0 {
				t.Fatalf("managed rule: exit %d, %q", code, stderr)
			}
			if reply := srv.Exec("EXISTS", "k"); reply != ":0\r\n" {
				t.Fatalf("EXISTS k = %q after run: not released", reply)
			}
			srv.SetUser("locker", "lockerpw", aclCommands(t, "--server", string(profile), "--managed", "--fenced")...)
			if code, _, stderr := runCLI(t, nil, append(conn, "run", "--key", "k", "--fenced", "f", "--", "true")...); code != 0 {
				t.Fatalf("managed rule + the script's commands, --fenced: exit %d, %q", code, stderr)
			}

			srv.SetUser("locker", "lockerpw", aclCommands(t, "--server", string(profile))...)
			code, _, stderr := runCLI(t, nil, append(conn, "run", "--key", "k", "--", "true")...)
			if code != exitNoPerm || !strings.Contains(stderr, "--unfenced-renewal") {
				t.Fatalf("raw rule: exit %d, %q; want 77 naming --unfenced-renewal", code, stderr)
			}
			if code, _, stderr := runCLI(t, nil, append(conn, "run", "--unfenced-renewal", "--key", "k", "--", "true")...); code != 0 {
				t.Fatalf("raw rule with --unfenced-renewal: exit %d, %q", code, stderr)
			}
		})
	}
}

// TestRunAsLeastPrivilegeUserOnRealRedis: the same on the real
// redis-server 7.0, with the rule sent as printed (user and password
// replaced).
func TestRunAsLeastPrivilegeUserOnRealRedis(t *testing.T) {
	t.Parallel()
	addr := os.Getenv("RESPIRE_REAL_REDIS70")
	if addr == "" {
		t.Skip("RESPIRE_REAL_REDIS70 not set (run under scripts/with-servers.sh)")
	}
	realserver.Lock(t, addr)
	tg := newTarget(t, "real", addr, os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD"))
	user := strings.ReplaceAll(uniqueKey(t, "user"), ":", "-")
	rule := aclCommands(t, "--server", "redis-7.0", "--managed")
	args := []string{"SETUSER", user, "on", ">lockerpw", "~*"}
	for _, c := range rule {
		args = append(args, "+"+c)
	}
	tg.do(t, tg.client.B().Arbitrary("ACL").Args(args...).Build())
	t.Cleanup(func() {
		_ = tg.client.Do(context.Background(), tg.client.B().Arbitrary("ACL").Args("DELUSER", user).Build()).Error()
	})
	key := uniqueKey(t, "acl")
	code, _, stderr := runCLI(t, nil, "--addr", addr, "--user", user, "--password", "lockerpw",
		"run", "--key", key, "--", "true")
	if code != 0 {
		t.Fatalf("exit %d, %q", code, stderr)
	}
	if _, found := tg.get(t, key); found {
		t.Fatal("the key is still held after run")
	}
}

// TestLeastPrivilegeAcl_LockctlAclRulesRunEveryKindOfRun: a user with
// exactly the rule `lockctl acl` prints runs each kind of `lockctl run`:
// --managed a plain run, --managed --fenced a fenced run, --managed --limit
// a run --limit and the status of its KEY while the permit is live; on
// every sim profile and on the real redis-server 7.0, the rule sent as
// printed.
func TestLeastPrivilegeAcl_LockctlAclRulesRunEveryKindOfRun(t *testing.T) {
	t.Parallel()
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			srv, err := sim.Start(context.Background(), sim.Config{Profile: profile, Password: "admin"})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			_ = runEveryKind(t, string(profile), srv.Addr(), func(rule []string) { srv.SetUser("locker", "lockerpw", rule...) })
		})
	}
	addr := os.Getenv("RESPIRE_REAL_REDIS70")
	if addr == "" {
		return
	}
	t.Run("real-redis-7.0", func(t *testing.T) {
		realserver.Lock(t, addr)
		tg := newTarget(t, "real", addr, os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD"))
		t.Cleanup(func() {
			_ = tg.client.Do(context.Background(), tg.client.B().Arbitrary("ACL").Args("DELUSER", "locker").Build()).Error()
		})
		counter := runEveryKind(t, "redis-7.0", addr, func(rule []string) {
			args := []string{"SETUSER", "locker", "reset", "on", ">lockerpw", "~*"}
			for _, c := range rule {
				args = append(args, "+"+c)
			}
			tg.do(t, tg.client.B().Arbitrary("ACL").Args(args...).Build())
		})
		tg.do(t, tg.client.B().Del().Key(counter).Build()) // a fencing counter never expires
	})
}

// runEveryKind runs each kind of lockctl run as "locker" on addr, set up
// by setUser with the rule lockctl acl prints for server, and returns the
// fencing counter it used.
func runEveryKind(t *testing.T, server, addr string, setUser func(rule []string)) string {
	conn := []string{"--addr", addr, "--user", "locker", "--password", "lockerpw"}
	key, counter := uniqueKey(t, "acl"), uniqueKey(t, "aclfence")
	for _, tc := range []struct {
		flags []string
		run   []string
	}{
		{[]string{"--managed"}, []string{"run", "--key", key, "--", "true"}},
		{[]string{"--managed", "--fenced"}, []string{"run", "--key", key, "--fenced", counter, "--", "true"}},
		{[]string{"--managed", "--limit"}, []string{"run", "--key", key, "--limit", "2", "--", "true"}},
	} {
		setUser(aclCommands(t, append([]string{"--server", server}, tc.flags...)...))
		if code, _, stderr := runCLI(t, nil, append(conn, tc.run...)...); code != 0 {
			t.Fatalf("acl %v: %v: exit %d, %q", tc.flags, tc.run, code, stderr)
		}
	}
	setUser(aclCommands(t, "--server", server, "--managed", "--limit"))
	dir := t.TempDir()
	held, release := filepath.Join(dir, "held"), filepath.Join(dir, "release")
	holder := start(t, nil, append(conn, "run", "--key", key, "--limit", "2", "--",
		"sh", "-c", `echo started > "$1"; while [ ! -e "$2" ]; do sleep 0.05; done`, "sh", held, release)...)
	eventually(t, 10*time.Second, "the permit's CMD to start", fileHas(held, "started"))
	if code, stdout, stderr := runCLI(t, nil, append(conn, "status", key)...); code != 0 || !strings.Contains(stdout, "1 live permit (limit 2)") {
		t.Errorf("status of the KEY with acl --managed --limit: exit %d, %q, %q", code, stdout, stderr)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := holder.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("the permit's run exited %d: %s", code, holder.stderr.String())
	}
	return counter
}
