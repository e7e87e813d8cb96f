package installcheck

import (
	"archive/zip"
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// rootModule is the root module's path; the released modules are it and
// the adapters below it.
const rootModule = "github.com/respire-go/respire"

// releasedDirs are the released modules' directories relative to the
// repository root ("" is the root module), in RELEASING.md's tag order.
// bench/ is a module too, but never released.
var releasedDirs = []string{"", "rueidislease", "goredis", "valkeygo"}

// module is one released module of the working tree.
type module struct {
	dir   string   // relative to the repository root, "" for the root
	path  string   // the module path, from its go.mod
	gomod []byte   // its go.mod as it is
	files []string // its files, relative to the repository root
}

// tagName returns the git tag that releases m at version (RELEASING.md).
func (m module) tagName(version string) string {
	if m.dir == "" {
		return version
	}
	return m.dir + "/" + version
}

// modules returns the released modules of the repository at repo with the
// files each would hold in a module zip: the files git knows of (tracked,
// or untracked and not ignored, as they are on disk), each in the innermost
// directory holding a go.mod; files of modules that are not released
// (bench/) belong to none.
func modules(repo string) ([]module, error) {
	out, err := exec.Command("git", "-C", repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []string
	modDirs := map[string]bool{}
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(repo, f)); err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink (never in a module zip)
		}
		files = append(files, f)
		if path.Base(f) == "go.mod" {
			modDirs[strings.TrimSuffix(path.Dir(f), ".")] = true
		}
	}
	sort.Strings(files)
	byDir := map[string]*module{}
	var mods []module
	for _, dir := range releasedDirs {
		gomod, err := os.ReadFile(filepath.Join(repo, dir, "go.mod"))
		if err != nil {
			return nil, err
		}
		mods = append(mods, module{dir: dir, path: modulePath(gomod), gomod: gomod})
	}
	for i := range mods {
		byDir[mods[i].dir] = &mods[i]
	}
	for _, f := range files {
		if m := byDir[owner(f, modDirs)]; m != nil {
			m.files = append(m.files, f)
		}
	}
	return mods, nil
}

// owner returns the directory of the innermost module holding file f.
func owner(f string, modDirs map[string]bool) string {
	for d := path.Dir(f); d != "." && d != "/"; d = path.Dir(d) {
		if modDirs[d] {
			return d
		}
	}
	return ""
}

// modulePath returns the path of a go.mod's module line.
func modulePath(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// requires returns the version a go.mod requires of module path ("" if
// none), from either form of a require directive.
func requires(gomod []byte, path string) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
		if len(f) >= 2 && f[0] == path {
			return f[1]
		}
	}
	return ""
}

// publish writes m at version into the file module proxy at dir in the
// GOPROXY layout: <path>/@v/list, <version>.info, .mod and .zip, whose
// entries are <path>@<version>/<file relative to the module>.
func publish(dir, repo string, m module, version string) error {
	at := filepath.Join(dir, filepath.FromSlash(m.path), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	info := fmt.Sprintf(`{"Version":%q,"Time":"2026-01-01T00:00:00Z"}`, version)
	for name, data := range map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": []byte(info),
		version + ".mod":  m.gomod,
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			return err
		}
	}
	return writeZip(filepath.Join(at, version+".zip"), repo, m, version)
}

// writeZip writes m's module zip.
func writeZip(name, repo string, m module, version string) error {
	out, err := os.Create(name)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(out)
	prefix := m.path + "@" + version + "/"
	for _, f := range m.files {
		rel := strings.TrimPrefix(f, m.dir+"/")
		if m.dir == "" {
			rel = f
		}
		data, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil {
			_ = out.Close()
			return err
		}
		w, err := zw.Create(prefix + rel)
		if err == nil {
			_, err = w.Write(data)
		}
		if err != nil {
			_ = out.Close()
			return err
		}
	}
	if err := zw.Close(); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
