package installcheck

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/lease"
)

// TestEveryModuleInstalls_FromAFreshModuleCache is RELEASING.md's check,
// as a new user meets a release: every released module of the working
// tree is published at v<lease.Version> in a throw-away file module proxy;
// in a fresh module with an empty module cache, each README install line
// ("go get ...") runs as written, with nothing but that proxy for
// respire-go's modules (a replace directive of ours would be ignored, so a
// requirement between our modules that no release satisfies fails here),
// and then every Go snippet of the README compiles: its programs, one per
// client, and its fragments. Third-party modules come from the local
// module cache's download directory (offline once the repository's modules
// are cached), else from the registry proxy in GOPROXY; their checksums
// are the repository's go.sum lines. It leaves nothing behind.
func TestEveryModuleInstalls_FromAFreshModuleCache(t *testing.T) {
	if testing.Short() {
		t.Skip("the install check builds every module: not in -short")
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is needed to list the modules' files")
	}
	version := "v" + lease.Version
	mods, err := modules(repo)
	if err != nil {
		t.Fatal(err)
	}
	checkRequirements(t, mods, version)

	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	for _, m := range mods {
		if err := publish(proxy, repo, m, version); err != nil {
			t.Fatalf("publishing %s: %v", m.tagName(version), err)
		}
	}
	text, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseReadme(text)
	if err != nil {
		t.Error(err) // the install lines still run
	}

	user := filepath.Join(tmp, "user")
	env := freshEnv(t, proxy, filepath.Join(tmp, "modcache"))
	ctx := t.Context()
	if deadline, ok := t.Deadline(); ok { // end the go command before the test binary's timeout does
		var cancel func()
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-10*time.Second))
		defer cancel()
	}
	run := func(args ...string) {
		t.Helper()
		start := time.Now()
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir, cmd.Env = user, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("go %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	}
	if err := os.MkdirAll(user, 0o755); err != nil {
		t.Fatal(err)
	}
	run("mod", "init", "example.com/firstuse")
	if err := seedSums(repo, filepath.Join(user, "go.sum")); err != nil {
		t.Fatal(err)
	}
	for _, args := range r.installs {
		run(args...)
	}
	if err := writeSnippets(user, r.snippets); err != nil {
		t.Fatal(err)
	}
	// Compile every package (go list -export fails on a compile error) but
	// link none: links are never cached, and three programs' links would be
	// most of a warm run. -trimpath: the build cache is the developer's
	// (warm), and without it the fresh module cache's path would be part
	// of every package's key.
	run("list", "-export", "-trimpath", "-f", "{{if .Error}}{{.Error}}{{end}}", "./...")
}

// checkRequirements fails the test when a released module requires another
// at a version other than the release's: the tagged module must resolve
// from the proxy alone.
func checkRequirements(t *testing.T, mods []module, version string) {
	t.Helper()
	for _, m := range mods {
		for _, dep := range mods {
			if v := requires(m.gomod, dep.path); v != "" && v != version {
				t.Errorf("%s/go.mod requires %s %s; the release is %s (RELEASING.md)", m.dir, dep.path, v, version)
			}
		}
	}
}

// freshEnv is the go command's environment for a new user: an empty
// module cache, GOPROXY = the throw-away proxy, the local module cache's
// downloads, then the registry proxy of this machine's GOPROXY (never
// direct; none with INSTALLCHECK_OFFLINE=1); no checksum database (the repository's go.sum lines are
// seeded); the developer's build cache, no workspace, no toolchain switch.
func freshEnv(t *testing.T, proxy, modcache string) []string {
	t.Helper()
	goenv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	proxies := []string{"file://" + filepath.ToSlash(proxy), "file://" + filepath.ToSlash(filepath.Join(goenv("GOMODCACHE"), "cache", "download"))}
	for _, p := range strings.FieldsFunc(goenv("GOPROXY"), func(r rune) bool { return r == ',' || r == '|' }) {
		if p != "direct" && p != "off" && os.Getenv("INSTALLCHECK_OFFLINE") == "" {
			proxies = append(proxies, p)
		}
	}
	gocache := goenv("GOCACHE")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GO") {
			env = append(env, kv)
		}
	}
	return append(env,
		"GOMODCACHE="+modcache,
		"GOPATH="+filepath.Join(filepath.Dir(modcache), "gopath"),
		"GOCACHE="+gocache,
		"GOPROXY="+strings.Join(proxies, ","),
		"GOSUMDB=off",
		"GOPRIVATE=", "GONOPROXY=", "GONOSUMDB=", "GOINSECURE=",
		"GOFLAGS=-mod=mod -modcacherw",
		"GOWORK=off",
		"GOTOOLCHAIN=local",
		"GOENV=off",
	)
}

// seedSums writes to name every go.sum line of the released modules that
// is not one of respire-go's own: the third-party checksums the
// repository committed, so that the fresh module verifies what it
// downloads without a checksum database.
func seedSums(repo, name string) error {
	seen := map[string]bool{}
	var b bytes.Buffer
	for _, dir := range releasedDirs {
		data, err := os.ReadFile(filepath.Join(repo, dir, "go.sum"))
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			line := sc.Text()
			if line == "" || seen[line] || strings.HasPrefix(line, rootModule+" ") || strings.HasPrefix(line, rootModule+"/") {
				continue
			}
			seen[line] = true
			fmt.Fprintln(&b, line)
		}
	}
	return os.WriteFile(name, b.Bytes(), 0o644)
}
