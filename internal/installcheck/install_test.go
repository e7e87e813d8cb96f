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
// with an empty module cache, each README install line ("go get ...") runs
// as written, alone in a fresh module, with nothing but that proxy for
// respire-go's modules (a replace directive of ours would be ignored, so a
// requirement between our modules that no release satisfies fails here);
// then all of them in one fresh module, where every Go snippet of the
// README compiles: its programs, one per client, and its fragments. Third-party modules come from the local
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

	ctx := t.Context()
	if deadline, ok := t.Deadline(); ok { // end the go command before the test binary's timeout does
		var cancel func()
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-10*time.Second))
		defer cancel()
	}
	g := goCommand{ctx: ctx, env: freshEnv(t, proxy, filepath.Join(tmp, "modcache")), repo: repo}
	// Each install line alone, in a module of its own: a user of one
	// client runs only its line (a module that resolves only beside
	// another's requirement fails here).
	for i, args := range r.installs {
		dir := g.newModule(t, filepath.Join(tmp, fmt.Sprintf("line%d", i)))
		g.run(t, dir, args...)
	}
	// Then every line in one module, and every snippet compiled in it.
	user := g.newModule(t, filepath.Join(tmp, "user"))
	for _, args := range r.installs {
		g.run(t, user, args...)
	}
	if err := writeSnippets(user, r.snippets); err != nil {
		t.Fatal(err)
	}
	// Compile every package (go list -export fails on a compile error) but
	// link none: links are never cached, and three programs' links would be
	// most of a warm run. -trimpath: the build cache is the developer's
	// (warm), and without it the fresh module cache's path would be part
	// of every package's key.
	g.run(t, user, "list", "-export", "-trimpath", "-f", "{{if .Error}}{{.Error}}{{end}}", "./...")
}

// goCommand runs the go command as a new user: in freshEnv, bounded by ctx.
type goCommand struct {
	ctx  context.Context
	env  []string
	repo string
}

// run runs go with args in dir and fails the test on an error.
func (g goCommand) run(t *testing.T, dir string, args ...string) {
	t.Helper()
	start := time.Now()
	cmd := exec.CommandContext(g.ctx, "go", args...)
	cmd.Dir, cmd.Env = dir, g.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in %s: go %s: %v\n%s", filepath.Base(dir), strings.Join(args, " "), err, out)
	}
	t.Logf("in %s: go %s: %v", filepath.Base(dir), strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
}

// newModule makes dir a new user's module, with the repository's
// third-party checksums (seedSums), and returns dir.
func (g goCommand) newModule(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	g.run(t, dir, "mod", "init", "example.com/firstuse")
	if err := seedSums(g.repo, filepath.Join(dir, "go.sum")); err != nil {
		t.Fatal(err)
	}
	return dir
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
