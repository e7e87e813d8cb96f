package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestListShowsWhoHoldsWhat_LockctlLsAndTop: a lock held by `lockctl run
// --owner LABEL` is listed by `lockctl ls PATTERN` (table and --json) and
// `lockctl top --iterations 1 --json` with its label and lease, and no
// byte of its token; a key outside PATTERN is not listed.
func TestListShowsWhoHoldsWhat_LockctlLsAndTop(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		key := uniqueKey(t, "ls")
		started := filepath.Join(t.TempDir(), "started")
		p := start(t, tg.env(), append(tg.conn(), "run", "--key", key, "--owner", "nightly host=db7",
			"--", "sh", "-c", holdScript(false), "sh", started)...)
		eventually(t, 10*time.Second, "CMD to start", fileHas(started, "started"))
		defer func() {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			p.wait(t, 10*time.Second)
		}()
		value, _ := tg.get(t, key)
		secret, _, _ := strings.Cut(value, "\x00")

		code, stdout, stderr := runCLI(t, tg.env(), append(tg.conn(), "ls", key)...)
		if code != 0 || !strings.Contains(stdout, key) || !strings.Contains(stdout, `"nightly host=db7"`) {
			t.Fatalf("ls: exit %d, %q, %q; want the key and its label", code, stdout, stderr)
		}
		code, stdout, stderr = runCLI(t, tg.env(), append(tg.conn(), "ls", "--json", key)...)
		var locks []listedLock
		if err := json.Unmarshal([]byte(stdout), &locks); code != 0 || err != nil || len(locks) != 1 {
			t.Fatalf("ls --json: exit %d, %q (%v), %q; want one lock", code, stdout, err, stderr)
		}
		if l := locks[0]; l.Key != key || l.Kind != "mutex" || l.Owner != "nightly host=db7" || !l.Held || l.LeaseMillis <= 0 {
			t.Fatalf("ls --json = %+v; want %s held by the label with a lease", l, key)
		}
		code, top, stderr := runCLI(t, tg.env(), append(tg.conn(), "top", "--iterations", "1", "--json", key)...)
		if code != 0 || !strings.Contains(top, `"key":"`+key+`"`) {
			t.Fatalf("top: exit %d, %q, %q; want the key", code, top, stderr)
		}
		code, none, _ := runCLI(t, tg.env(), append(tg.conn(), "ls", "--json", key+"-other*")...)
		if code != 0 || strings.TrimSpace(none) != "[]" {
			t.Fatalf("ls of another pattern: exit %d, %q; want []", code, none)
		}
		for _, out := range []string{stdout, top} {
			if len(secret) != 32 || strings.Contains(out, secret) || strings.Contains(out, strings.ToUpper(secret)) {
				t.Fatalf("%q shows the token's secret %q", out, secret)
			}
		}
	})
}
