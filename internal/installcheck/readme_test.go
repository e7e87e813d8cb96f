package installcheck

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A README Go block is preceded, on the line before its fence, by a marker
// saying how it compiles:
//
//	<!-- go: program -->        a whole program (package main), built alone
//	<!-- go: program a b -->    a part of the programs named a and b: the
//	                            parts of one name, in order, are one file
//	<!-- go: body -->           statements: the body of a func(ctx context.Context) error
//	<!-- go: decl -->           top-level declarations (a test function, say)
//
// body and decl snippets share one package, whose fixtures (snippetFixtures)
// are the names the README leaves to the reader: runReport, client, locks...
var marker = regexp.MustCompile(`^<!-- go: (program|body|decl)((?: [a-z0-9-]+)*) -->$`)

// snippet is one Go block of a Markdown file.
type snippet struct {
	kind  string   // program, body or decl
	names []string // the programs a program part belongs to
	line  int      // of its fence, 1-based
	code  string
}

// readme is what the install check takes from the README.
type readme struct {
	installs [][]string // each install line's arguments after "go"
	snippets []snippet
}

// parseReadme reads the README's install lines (the "go get" lines of its
// sh blocks, without their comments) and its Go blocks, each of which must
// carry a marker.
func parseReadme(text []byte) (readme, error) {
	var (
		r            readme
		fence, kind  string
		names        []string
		start        int
		code, errors []string
		prev         string
	)
	sc := bufio.NewScanner(bytes.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case fence == "" && strings.HasPrefix(line, "```"):
			fence, start, code = strings.TrimPrefix(line, "```"), n, nil
			kind, names = "", nil
			if m := marker.FindStringSubmatch(prev); m != nil {
				kind, names = m[1], strings.Fields(m[2])
			}
			if kind != "program" && len(names) > 0 {
				errors = append(errors, fmt.Sprintf("README.md:%d: only a program part has names", n))
			}
			if fence == "go" && kind == "" {
				errors = append(errors, fmt.Sprintf("README.md:%d: a ```go block needs a marker on the line before it: <!-- go: program|body|decl -->", n))
			}
		case fence != "" && line == "```":
			if fence == "go" && kind != "" {
				r.snippets = append(r.snippets, snippet{kind: kind, names: names, line: start, code: strings.Join(code, "\n") + "\n"})
			}
			fence = ""
		case fence == "sh" && strings.HasPrefix(line, "go get "):
			args := strings.Fields(strings.SplitN(line, "#", 2)[0])
			r.installs = append(r.installs, args[1:])
		case fence != "":
			code = append(code, line)
		}
		prev = line
	}
	if fence != "" {
		errors = append(errors, fmt.Sprintf("README.md:%d: the block opened here is never closed", start))
	}
	if len(errors) > 0 {
		return r, fmt.Errorf("%s", strings.Join(errors, "\n"))
	}
	return r, nil
}

// snippetImports are the imports of every body and decl snippet's file,
// each used once by the file so that a snippet may use any of them.
var snippetImports = map[string]string{
	"context":                      "context.Background",
	"errors":                       "errors.Is",
	"fmt":                          "fmt.Errorf",
	"log":                          "log.Print",
	"log/slog":                     "slog.Default",
	"os":                           "os.Getpid",
	"os/signal":                    "signal.NotifyContext",
	"syscall":                      "syscall.SIGTERM",
	"testing":                      "testing.Short",
	"time":                         "time.Second",
	"go.opentelemetry.io/otel":     "otel.GetMeterProvider",
	"github.com/redis/rueidis":     "rueidis.NewClient",
	"github.com/redis/go-redis/v9": "redis.NewClient",
	"github.com/redis/go-redis/v9/maintnotifications": "maintnotifications.ModeDisabled",
	"github.com/valkey-io/valkey-go":                  "valkey.NewClient",
	rootModule + "/lease":                             "lease.New",
	rootModule + "/election":                          "election.New",
	rootModule + "/coordination":                      "coordination.New",
	rootModule + "/leasetest":                         "leasetest.Start",
	rootModule + "/sim":                               "sim.Redis70",
	rootModule + "/rueidislease":                      "rueidislease.New",
	rootModule + "/goredis":                           "goredis.New",
	rootModule + "/valkeygo":                          "valkeygo.New",
}

// snippetFixtures are the names the README's body and decl snippets use
// without declaring them: your client, your locks, your work.
const snippetFixtures = `package snippets

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/lease"
)

var (
	client   rueidis.Client
	locks    *lease.Locks
	hostname string
	host     string
	invoice  string
	store    interface {
		WriteIfNewer(ctx context.Context, invoice string, token int64) error
	}
)

func runReport(ctx context.Context) error    { return ctx.Err() }
func runScheduler(ctx context.Context) error { return ctx.Err() }
func callPartner(ctx context.Context) error  { return ctx.Err() }
`

// writeSnippets writes the README's snippets as packages under dir: each
// program in progN/, the others in snippets/ with snippetFixtures.
func writeSnippets(dir string, snippets []snippet) error {
	write := func(name, text string) error {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		return os.WriteFile(name, []byte(text), 0o644)
	}
	if err := write(filepath.Join(dir, "snippets", "fixtures.go"), snippetFixtures); err != nil {
		return err
	}
	programs := map[string]string{}
	for i, s := range snippets {
		var name, text string
		switch s.kind {
		case "program":
			for _, p := range s.names {
				programs[p] += lineDirective(s) + s.code
			}
			if len(s.names) > 0 {
				continue
			}
			name, text = filepath.Join(dir, fmt.Sprintf("prog%d", i), "main.go"), lineDirective(s)+s.code
		case "body":
			body, err := useDefined(s.code)
			if err != nil {
				return fmt.Errorf("README.md:%d: %w", s.line, err)
			}
			name = filepath.Join(dir, "snippets", fmt.Sprintf("s%d.go", i))
			text = snippetHeader() + fmt.Sprintf("func snippet%d(ctx context.Context) error {\n%s%s\treturn nil\n}\n", i, lineDirective(s), body)
		case "decl":
			name = filepath.Join(dir, "snippets", fmt.Sprintf("s%d.go", i))
			text = snippetHeader() + lineDirective(s) + s.code
		}
		if err := write(name, text); err != nil {
			return err
		}
	}
	for p, text := range programs {
		if err := write(filepath.Join(dir, "program-"+p, "main.go"), text); err != nil {
			return err
		}
	}
	return nil
}

// lineDirective makes the compiler name the README's line in its errors.
func lineDirective(s snippet) string {
	return fmt.Sprintf("//line README.md:%d\n", s.line+1)
}

// snippetHeader is the package clause and imports of a snippet file.
func snippetHeader() string {
	var b strings.Builder
	b.WriteString("package snippets\n\nimport (\n")
	for p := range snippetImports {
		fmt.Fprintf(&b, "\t%q\n", p)
	}
	b.WriteString(")\n\n")
	for _, use := range snippetImports {
		fmt.Fprintf(&b, "var _ = %s\n", use)
	}
	return b.String() + "\n"
}

// useDefined returns body with "_ = x" appended for each name its
// top-level statements declare with :=, so that a snippet that stops
// where the reader's code goes on still compiles.
func useDefined(body string) (string, error) {
	src := "package p\nfunc f() {\n" + body + "\n}\n"
	f, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(body)
	seen := map[string]bool{}
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		as, ok := st.(*ast.AssignStmt)
		if !ok || as.Tok != token.DEFINE {
			continue
		}
		for _, lhs := range as.Lhs {
			if id, ok := lhs.(*ast.Ident); ok && id.Name != "_" && !seen[id.Name] {
				seen[id.Name] = true
				fmt.Fprintf(&b, "\t_ = %s\n", id.Name)
			}
		}
	}
	return b.String(), nil
}

// TestReadmeSnippetsCompile_EveryGoBlockIsMarked fails on a README Go block
// without a marker (it would escape the install check's build), on a
// released module without an install line, and on a client adapter
// without a whole program in the README. It reads the README only (fast; the build is
// TestEveryModuleInstalls_FromAFreshModuleCache).
func TestReadmeSnippetsCompile_EveryGoBlockIsMarked(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseReadme(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.installs) == 0 {
		t.Fatal("README.md: no install line (a \"go get\" line of a ```sh block)")
	}
	// An install line per released module.
	for _, dir := range releasedDirs {
		path, found := rootModule, false
		if dir != "" {
			path += "/" + dir
		}
		for _, args := range r.installs {
			for _, a := range args {
				found = found || strings.SplitN(a, "@", 2)[0] == path
			}
		}
		if !found {
			t.Errorf("README.md: no install line for %s (\"go get %s@latest\" in a ```sh block)", path, path)
		}
	}
	// One whole program per client: the parts of each named program, joined.
	programs := map[string]string{}
	for _, s := range r.snippets {
		for _, p := range s.names {
			programs[p] += s.code
		}
	}
	for _, adapter := range releasedDirs[1:] {
		found := false
		for _, code := range programs {
			found = found || strings.Contains(code, `"`+rootModule+"/"+adapter+`"`)
		}
		if !found {
			t.Errorf("README.md: no program on %s (a <!-- go: program NAME --> whose parts import %s/%s)", adapter, rootModule, adapter)
		}
	}
}

// TestReadmeSnippetsCompile_GoRedisProgramAgreesWithExampleNew: the README's
// go-redis program, goredis.ExampleNew, goredis.New's doc and
// docs/compatibility.md's go-redis options table say the same about
// go-redis' maintenance notifications: off (ModeDisabled) unless the
// servers send them.
func TestReadmeSnippetsCompile_GoRedisProgramAgreesWithExampleNew(t *testing.T) {
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	text, err := parseReadme([]byte(read("README.md")))
	if err != nil {
		t.Fatal(err)
	}
	var program string
	for _, s := range text.snippets {
		for _, p := range s.names {
			if p == "goredis" {
				program += s.code
			}
		}
	}
	example := read("goredis/example_test.go")
	if i := strings.Index(example, "func ExampleNew()"); i >= 0 {
		example = example[i:]
		if j := strings.Index(example[1:], "\nfunc "); j >= 0 {
			example = example[:j+1]
		}
	}
	const off = "maintnotifications.ModeDisabled"
	for name, text := range map[string]string{
		"README.md's go-redis program (<!-- go: program goredis -->)": program,
		"goredis.ExampleNew":    example,
		"goredis.New's doc":     read("goredis/locks.go"),
		"docs/compatibility.md": read("docs/compatibility.md"),
	} {
		if !strings.Contains(text, off) {
			t.Errorf("%s does not say %s: the README's program, ExampleNew, New's doc and docs/compatibility.md must agree", name, off)
		}
	}
}
