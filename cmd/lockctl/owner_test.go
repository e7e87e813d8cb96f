package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHolderRevealsNoToken_LockctlStatusShowsTheLabel: a lock taken by
// `lockctl run --owner LABEL` shows `label "LABEL"` in `lockctl status`,
// which prints no byte of its token; an owner label lease refuses is a
// usage error (exit 64) and nothing is held.
func TestHolderRevealsNoToken_LockctlStatusShowsTheLabel(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		key := uniqueKey(t, "owner")
		started := filepath.Join(t.TempDir(), "started")
		p := start(t, tg.env(), append(tg.conn(), "run", "--key", key, "--owner", "nightly-report host=db7",
			"--", "sh", "-c", holdScript(false), "sh", started)...)
		eventually(t, 10*time.Second, "CMD to start", fileHas(started, "started"))
		code, stdout, stderr := runCLI(t, tg.env(), append(tg.conn(), "status", key)...)
		if code != 0 || !strings.HasPrefix(stdout, key+": owner present (owner=") ||
			!strings.HasSuffix(stdout, `, label "nightly-report host=db7"`+"\n") {
			t.Fatalf("status: exit %d, %q, %q; want the owner's label", code, stdout, stderr)
		}
		value, _ := tg.get(t, key)
		secret, _, _ := strings.Cut(value, "\x00")
		if len(secret) != 32 || strings.Contains(stdout, secret) || strings.Contains(stdout, strings.ToUpper(secret)) {
			t.Fatalf("status %q shows the token's secret %q", stdout, secret)
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		p.wait(t, 10*time.Second)

		bad := uniqueKey(t, "owner-bad")
		code, _, stderr = runCLI(t, tg.env(), append(tg.conn(), "run", "--key", bad, "--owner", "two\nlines", "--", "true")...)
		if code != exitUsage || !strings.Contains(stderr, "owner label") {
			t.Fatalf("run --owner with a newline: exit %d, %q; want %d and the label's refusal", code, stderr, exitUsage)
		}
		if _, found := tg.get(t, bad); found {
			t.Fatal("a refused label took the key")
		}
	})
}
