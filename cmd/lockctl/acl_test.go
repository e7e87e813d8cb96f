package main

import (
	"context"
	"os"
	"strings"
	"testing"

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

// fencedScriptCommands are what run --help says --fenced adds to the rule.
var fencedScriptCommands = []string{"evalsha", "eval", "exists", "get", "pttl", "incr", "set"}

// TestRunAsLeastPrivilegeUser: on every server version, a user with just
// the rule of `lockctl acl --server V --managed` can `lockctl run` (no
// CLIENT TRACKING needed), and with the commands run --help lists for
// --fenced, run --fenced; with the raw-token rule only, run fails with 77 (EX_NOPERM)
// and names the fix, and --unfenced-renewal makes it work.
func TestRunAsLeastPrivilegeUser(t *testing.T) {
	t.Parallel()
	for _, c := range fencedScriptCommands {
		if !strings.Contains(runUsage, "+"+c) {
			t.Errorf("run --help does not list +%s for --fenced", c)
		}
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
			fenced := append(aclCommands(t, "--server", string(profile), "--managed"), fencedScriptCommands...)
			srv.SetUser("locker", "lockerpw", fenced...)
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
