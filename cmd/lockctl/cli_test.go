package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/acldoc"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestBadInputGivesOneLineAndUsageStatus: every kind of bad input — a
// missing key, a negative TTL, an unknown flag or command, contradictory
// connection options — prints one line on stderr, nothing on stdout, and
// exits 64; never a panic or a stack trace. (An unreachable server and a
// wrong password have their own statuses: TestLockctlExitStatuses.)
func TestBadInputGivesOneLineAndUsageStatus(t *testing.T) {
	t.Parallel()
	srv, err := sim.Start(context.Background(), sim.Config{Profile: sim.Valkey81, Password: "right"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cases := [][]string{
		{},
		{"frobnicate"},
		{"--bogus", "status", "k"},
		{"run", "--", "true"},
		{"run", "--key", "k"},
		{"run", "--key", "k", "--ttl", "-1s", "--", "true"},
		{"run", "--key", "k", "--ttl", "soon", "--", "true"},
		{"run", "--key", "k", "--wait", "-5s", "--", "true"},
		{"run", "--key", "k", "--bogus", "--", "true"},
		{"run", "--key", "k", "--fenced", "k", "--", "true"},
		{"status"},
		{"status", "--url", "http://example.com", "k"},
		{"status", "--url", "redis://127.0.0.1:6379", "--addr", "127.0.0.1:6379", "k"},
		{"status", "--sim", "redis-6.2", "k"},
		{"status", "--sim", "redis-8.4", "--addr", srv.Addr(), "k"},
		{"release", "k"},
		{"release", "--token", "00ff"},
		{"release", "k", "--token", "not-hex"},
		{"watch"},
		{"watch", "--interval", "0s", "k"},
		{"acl"},
		{"acl", "--server", "redis-6.2"},
		{"acl", "--server", "redis-7.0", "--sentinel"},
		{"acl", "--server", "redis-7.0", "--managed", "--sentinel=maybe"},
		{"guard", "--", "HSET", "h", "f", "v"},
		{"guard", "--key", "k"},
		{"guard", "--key", "k", "--", "FLUSHALL"},
		{"guard", "--key", "k", "--", "HSET", "h", "f"},
		{"guard", "--key", "k", "--ttl", "0s", "--", "DEL", "x"},
	}
	t.Run("cases", func(t *testing.T) { // srv lives until every case ended
		for _, args := range cases {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				t.Parallel()
				code, stdout, stderr := runCLI(t, nil, args...)
				if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 ||
					!strings.HasPrefix(stderr, "lockctl: ") || strings.Contains(stderr, "goroutine") {
					t.Errorf("exit %d, stdout %q, stderr %q; want 64 and one line on stderr", code, stdout, stderr)
				}
			})
		}
	})
}

// TestHelpReadsLikeAManual: --help prints the synopsis, the commands, the
// connection options and the exit statuses on stdout and exits 0; each
// command has its own help.
func TestHelpReadsLikeAManual(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, nil, "--help")
	if code != 0 || stderr != "" {
		t.Fatalf("--help: exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"Usage: lockctl", "run ", "status ", "release ", "watch ", "acl ",
		"--url", "REDIS_URL", "REDIS_PASSWORD", "--cluster", "--sim", "-h HOST", "-p PORT", "-a, --password", "-n DB",
		"Exit status", "64", "69", "75", "76", "77"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	for cmd, want := range map[string]string{"run": "--grace", "status": "--show-token", "release": "--token",
		"watch": "--interval", "acl": "--managed", "guard": "HSET"} {
		for _, args := range [][]string{{cmd, "--help"}, {"help", cmd}, {cmd, "-help"}} {
			code, stdout, _ := runCLI(t, nil, args...)
			if code != 0 || !strings.Contains(stdout, "Usage: lockctl "+cmd) || !strings.Contains(stdout, want) {
				t.Errorf("lockctl %q: exit %d, output %q", args, code, stdout)
			}
		}
	}
}

// TestACLMatchesCompatibilityDoc: acl prints the exact ACL line of
// docs/compatibility.md for each server, with what the page's table adds
// for managed locks (--managed), fencing-token locks (--fenced) and
// semaphores (--limit) and Sentinel clients (--sentinel, with --managed),
// each command once.
func TestACLMatchesCompatibilityDoc(t *testing.T) {
	t.Parallel()
	page, err := acldoc.Read("../../docs/compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	uses := map[string]string{"--managed": "managed locks:", "--fenced": "coordination", "--limit": "Locks.Semaphore",
		"--sentinel": "a Sentinel client"}
	for flag, label := range uses {
		u, ok := page.Find(label)
		if !ok {
			t.Fatalf("docs/compatibility.md has no row %q for acl %s", label, flag)
		}
		uses[flag] = strings.Join(u.Commands, " ")
	}
	for _, server := range []string{"redis-7.0", "redis-8.4", "valkey-8.1", "valkey-9.0"} {
		row := page.Rows[server]
		for _, flags := range [][]string{nil, {"--managed"}, {"--managed", "--fenced"}, {"--managed", "--limit"},
			{"--fenced"}, {"--managed", "--fenced", "--limit"}, {"--managed", "--sentinel"}, {"--managed", "--limit", "--sentinel"}} {
			var lists [][]string
			for _, f := range flags {
				lists = append(lists, strings.Fields(uses[f]))
			}
			want := acldoc.Line(acldoc.Compose(row, lists...)) + "\n"
			code, stdout, stderr := runCLI(t, nil, append([]string{"acl", "--server", server}, flags...)...)
			if code != 0 || stdout != want {
				t.Errorf("acl --server %s %v: exit %d, %q, %q; want %q (docs/compatibility.md)", server, flags, code, stdout, stderr, want)
			}
		}
	}
}

// TestStatusAndRawRelease: status shows an owner's fingerprint and its PTTL
// but no token (unless --show-token), and exits 1 as one key is free; release with the token's hex, in either case,
// deletes the key once, then reports "not owned" with exit 1.
func TestStatusAndRawRelease(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		key, free := uniqueKey(t, "status"), uniqueKey(t, "free")
		token := lease.NewToken()
		text, _ := token.Text()
		tg.do(t, tg.client.B().Set().Key(key).Value(text).Px(time.Minute).Build())

		code, stdout, stderr := runCLI(t, tg.env(), append(tg.conn(), "status", key, free)...)
		if code != exitNotHeld || stderr != "" {
			t.Fatalf("status of a held and a free key: exit %d, stderr %q; want 1", code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], key+": owner present (owner="+fingerprint(text)+"), PTTL ") ||
			lines[1] != free+": no owner" {
			t.Fatalf("status printed %q", stdout)
		}
		if strings.Contains(stdout, text) || strings.Contains(strings.ToUpper(stdout), token.Hex()) {
			t.Fatalf("status revealed the token without --show-token: %q", stdout)
		}
		_, shown, _ := runCLI(t, tg.env(), append(tg.conn(), "status", "--show-token", key)...)
		if !strings.Contains(shown, "token "+token.Hex()) {
			t.Fatalf("status --show-token printed %q; want the token's hex", shown)
		}

		args := append(tg.conn(), "release", key, "--token", strings.ToLower(token.Hex()))
		if code, stdout, _ := runCLI(t, tg.env(), args...); code != 0 || stdout != "released\n" {
			t.Fatalf("release: exit %d, %q", code, stdout)
		}
		if _, found := tg.get(t, key); found {
			t.Fatal("the key survived the release")
		}
		if code, stdout, _ := runCLI(t, tg.env(), args...); code != exitNotHeld || stdout != "not owned\n" {
			t.Fatalf("second release: exit %d, %q; want 1, not owned", code, stdout)
		}
	})
}

// TestConnectionConventions: REDIS_URL with the password in it, and
// --password instead of REDIS_PASSWORD, reach a password-protected server.
func TestConnectionConventions(t *testing.T) {
	t.Parallel()
	srv, err := sim.Start(context.Background(), sim.Config{Profile: sim.Redis70, Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.Exec("SET", "k", "v", "PX", "60000")
	env := append(cleanEnv(), "REDIS_URL=redis://:s3cret@"+srv.Addr()+"/0")
	if code, stdout, stderr := runCLI(t, env, "status", "k"); code != 0 || !strings.HasPrefix(stdout, "k: owner present") {
		t.Errorf("REDIS_URL: exit %d, %q %q", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, nil, "--addr", srv.Addr(), "--password", "s3cret", "status", "k"); code != 0 ||
		!strings.HasPrefix(stdout, "k: owner present") {
		t.Errorf("--password: exit %d, %q %q", code, stdout, stderr)
	}
}
