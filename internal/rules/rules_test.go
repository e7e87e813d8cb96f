package rules

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// rulesDoc is the page this package checks, relative to the module root.
const rulesDoc = "docs/rules.md"

// TestDocsRulesMdMatchesTheTests fails when docs/rules.md and the module's
// tests disagree. Each failure says what to change, and where.
func TestDocsRulesMdMatchesTheTests(t *testing.T) {
	root, module := moduleRoot(t)
	text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rulesDoc)))
	if err != nil {
		t.Fatalf("%v: every rule of the project lives in %s (see internal/rules)", err, rulesDoc)
	}
	rules, notRules, problems := parseRules(rulesDoc, string(text))
	tests, scanProblems := scanTests(root, path.Base(module))
	problems = append(problems, scanProblems...)
	problems = append(problems, check(rulesDoc, rules, notRules, tests)...)
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) > 0 {
		t.Logf("the conventions are at the top of %s; %d rules and %d test functions were read", rulesDoc, len(rules), len(tests))
	}
}

// TestCheckerReportsEveryKindOfMistake feeds the checker a small page and a
// small set of tests with one mistake of each kind, and checks that each is
// reported with what to fix.
func TestCheckerReportsEveryKindOfMistake(t *testing.T) {
	doc := strings.Join([]string{
		"# Rules",
		"## Conventions",
		"- `lease.TestNotARuleListing` is an example, not a rule.",
		"## Test names that are not rules",
		"- `HelperProcess`: serves a child process.",
		"- `Stale`: no test uses it.",
		"## Topic",
		"### GoodRule",
		"A statement.",
		"Checked by:",
		"- `lease.TestGoodRule_Works`",
		"- `lease.TestFreeForm`",
		"### EmptyRule",
		"A rule with no test.",
		"Checked by:",
		"### MissingTest",
		"A rule whose test is gone.",
		"Checked by:",
		"- `lease.TestGone`",
		"- `lease.TestElsewhere`",
		"### GoodRule",
		"The same id again.",
		"Checked by:",
		"- `lease.TestFreeForm`",
		"### not camel",
		"A bad heading.",
		"Checked by:",
		"- `lease.TestFreeForm`",
		"### NoStatement",
		"Checked by:",
		"- `lease.TestFreeForm`",
		"- lease.TestFreeForm",
		"### UnlistedRule",
		"Its named test is not listed.",
		"Checked by:",
		"- `lease.TestFreeForm`",
	}, "\n")
	tests := []testFunc{
		{dir: "lease", name: "TestGoodRule_Works", file: "lease/a_test.go", line: 3},
		{dir: "lease", name: "TestFreeForm", file: "lease/a_test.go", line: 9},
		{dir: "conn", name: "TestElsewhere", file: "conn/b_test.go", line: 4},
		{dir: "lease", name: "TestNoSuchRule_DoesThings", file: "lease/a_test.go", line: 12},
		{dir: "lease", name: "TestUnlistedRule_IsNamed", file: "lease/a_test.go", line: 20},
		{dir: "lease", name: "TestHelperProcess_ServesAChild", file: "lease/a_test.go", line: 30},
	}
	rules, notRules, problems := parseRules("rules.md", doc)
	problems = append(problems, check("rules.md", rules, notRules, tests)...)
	wants := []string{
		`rules.md:13: rule EmptyRule lists no test`,
		`rules.md:19: rule MissingTest lists lease.TestGone, but there is no func TestGone in any lease/*_test.go`,
		`rules.md:20: rule MissingTest lists lease.TestElsewhere, but there is no func TestElsewhere in any lease/*_test.go: it is in conn/b_test.go (write conn.TestElsewhere)`,
		`rules.md:21: rule id GoodRule is used twice (first at rules.md:8)`,
		`rules.md:25: "### not camel" is not a rule id`,
		`rules.md:29: rule NoStatement has no statement`,
		"rules.md:32: a Checked by item must be written \"- `dir.TestName`\"",
		`lease/a_test.go:12: TestNoSuchRule_DoesThings names rule NoSuchRule, which rules.md does not define`,
		`lease/a_test.go:20: TestUnlistedRule_IsNamed names rule UnlistedRule, but rules.md does not list it there: add "- ` + "`lease.TestUnlistedRule_IsNamed`" + `" to the Checked by list of UnlistedRule (rules.md:33)`,
		`rules.md:6: no test is named TestStale_<What> any more: remove Stale`,
	}
	for _, want := range wants {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, want) }) {
			t.Errorf("no problem starts with\n\t%s\ngot:\n\t%s", want, strings.Join(problems, "\n\t"))
		}
	}
	if len(problems) != len(wants) {
		t.Errorf("%d problems; want %d:\n\t%s", len(problems), len(wants), strings.Join(problems, "\n\t"))
	}
}

// rule is one "### Id" section of the page.
type rule struct {
	id     string
	line   int // of the heading
	tests  []listedTest
	listAt int // line of "Checked by:", 0 when missing
}

// listedTest is one "- `dir.TestName`" item of a rule's Checked by list.
type listedTest struct {
	dir, name string
	line      int
}

func (l listedTest) qualified() string { return l.dir + "." + l.name }

// testFunc is a test function found in a *_test.go file.
type testFunc struct {
	dir, name string // dir relative to the module root, with slashes
	file      string // relative to the module root, with slashes
	line      int
}

func (f testFunc) qualified() string { return f.dir + "." + f.name }

var (
	ruleID      = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	listedItem  = regexp.MustCompile("^- `([A-Za-z0-9_./-]+)\\.(Test[A-Za-z0-9_]*)`")
	notRuleItem = regexp.MustCompile("^- `([A-Z][A-Za-z0-9]*)`")
)

// notRulesHeading is the section of the page that lists the name prefixes
// of tests that are not about a rule (helper processes).
const notRulesHeading = "## Test names that are not rules"

// notRule is one "- `Prefix`" item of the notRulesHeading section.
type notRule struct {
	prefix string
	line   int
}

// parseRules reads the rules of the page: every "### " heading is a rule,
// followed by its statement, a "Checked by:" line and a list of tests.
// "#" and "##" headings end a rule and are not rules themselves; the items
// of the notRulesHeading section are prefixes that name no rule.
func parseRules(name, text string) ([]rule, []notRule, []string) {
	var (
		rules    []rule
		notRules []notRule
		problems []string
		cur      *rule
		stated   bool
		inNot    bool
	)
	finish := func() {
		if cur == nil {
			return
		}
		switch {
		case !stated:
			problems = append(problems, fmt.Sprintf("%s:%d: rule %s has no statement: write one to three sentences under its heading, before \"Checked by:\"", name, cur.line, cur.id))
		case cur.listAt == 0:
			problems = append(problems, fmt.Sprintf("%s:%d: rule %s has no \"Checked by:\" line: end the rule with \"Checked by:\" and a list of \"- `dir.TestName`\" items", name, cur.line, cur.id))
		}
		rules = append(rules, *cur)
		cur = nil
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "### "):
			finish()
			id := strings.TrimSpace(strings.TrimPrefix(line, "### "))
			if !ruleID.MatchString(id) {
				problems = append(problems, fmt.Sprintf("%s:%d: %q is not a rule id: a rule heading is \"### \" and one CamelCase word (an upper-case letter, then letters and digits)", name, n, line))
			}
			cur, stated = &rule{id: id, line: n}, false
		case strings.HasPrefix(line, "#"):
			finish()
			inNot = trimmed == notRulesHeading
		case inNot && strings.HasPrefix(trimmed, "- "):
			m := notRuleItem.FindStringSubmatch(trimmed)
			if m == nil {
				problems = append(problems, fmt.Sprintf("%s:%d: an item of %q must start \"- `Prefix`\" (one CamelCase word); got %q", name, n, notRulesHeading, trimmed))
				continue
			}
			notRules = append(notRules, notRule{prefix: m[1], line: n})
		case cur == nil || trimmed == "":
		case trimmed == "Checked by:":
			if cur.listAt != 0 {
				problems = append(problems, fmt.Sprintf("%s:%d: rule %s has a second \"Checked by:\" line (the first is at line %d): merge the lists", name, n, cur.id, cur.listAt))
			}
			cur.listAt = n
		case cur.listAt == 0:
			stated = true
		default:
			m := listedItem.FindStringSubmatch(trimmed)
			if m == nil {
				problems = append(problems, fmt.Sprintf("%s:%d: a Checked by item must be written \"- `dir.TestName`\" (dir relative to the module root, e.g. `sim/dst.TestSameSeedSameTranscript`); got %q", name, n, trimmed))
				continue
			}
			cur.tests = append(cur.tests, listedTest{dir: m[1], name: m[2], line: n})
		}
	}
	finish()
	if len(rules) == 0 {
		problems = append(problems, fmt.Sprintf("%s: no rules found: each rule is a \"### RuleId\" heading", name))
	}
	return rules, notRules, problems
}

// scannedModules are the nested modules whose tests check rules of this
// page (their directories relative to the module root): the client
// adapters (rueidislease/, goredis/, valkeygo/), whose guarantees are
// rules here too.
var scannedModules = map[string]bool{"goredis": true, "rueidislease": true, "valkeygo": true}

// scanTests returns every test function (TestXxx, TestMain included) of the
// module's *_test.go files and scannedModules', skipping other nested
// modules (bench/), testdata,
// vendor and hidden directories. rootName qualifies tests in the root.
func scanTests(root, rootName string) ([]testFunc, []string) {
	var (
		tests    []testFunc
		problems []string
	)
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			if p != root && !scannedModules[rel] {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir // another module (bench/)
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: cannot be parsed, so its tests cannot be matched with %s: %v", rel, rulesDoc, err))
			return nil
		}
		dir := path.Dir(rel)
		if dir == "." {
			dir = rootName
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !isTestName(fd.Name.Name) {
				continue
			}
			tests = append(tests, testFunc{dir: dir, name: fd.Name.Name, file: rel, line: fset.Position(fd.Pos()).Line})
		}
		return nil
	})
	if err != nil {
		problems = append(problems, fmt.Sprintf("reading the module's test files: %v", err))
	}
	return tests, problems
}

// isTestName reports whether name is a test function's name for go test:
// "Test", optionally followed by a part that does not start in lower case.
func isTestName(name string) bool {
	rest, ok := strings.CutPrefix(name, "Test")
	if !ok {
		return false
	}
	for _, r := range rest {
		return !unicode.IsLower(r)
	}
	return true
}

// namedRule returns the rule id a test's name claims (Test<RuleId>_<What>),
// or "" for a free-form name.
func namedRule(name string) string {
	rest := strings.TrimPrefix(name, "Test")
	id, _, found := strings.Cut(rest, "_")
	if !found || !ruleID.MatchString(id) {
		return ""
	}
	return id
}

// check compares the rules of the page name with the tests.
func check(name string, rules []rule, notRules []notRule, tests []testFunc) []string {
	var problems []string
	exempt := map[string]int{}
	for _, nr := range notRules {
		exempt[nr.prefix] = nr.line
	}
	used := map[string]bool{}
	byQualified := map[string]testFunc{}
	byName := map[string][]testFunc{}
	for _, f := range tests {
		if _, dup := byQualified[f.qualified()]; !dup {
			byQualified[f.qualified()] = f
		}
		byName[f.name] = append(byName[f.name], f)
	}
	byID := map[string]rule{}
	firstFold := map[string]rule{}
	for _, r := range rules {
		if first, dup := firstFold[strings.ToLower(r.id)]; dup {
			as := ""
			if first.id != r.id {
				as = " as " + first.id
			}
			problems = append(problems, fmt.Sprintf("%s:%d: rule id %s is used twice (first at %s:%d%s): ids are unique, also ignoring case (they are link anchors); rename the newer rule", name, r.line, r.id, name, first.line, as))
		} else {
			firstFold[strings.ToLower(r.id)] = r
			byID[r.id] = r
		}
		if len(r.tests) == 0 {
			problems = append(problems, fmt.Sprintf("%s:%d: rule %s lists no test: list under \"Checked by:\" the tests that check it, or write one (name it Test%s_<What>)", name, r.line, r.id, r.id))
		}
		seen := map[string]bool{}
		for _, l := range r.tests {
			if seen[l.qualified()] {
				problems = append(problems, fmt.Sprintf("%s:%d: rule %s lists %s twice: remove one", name, l.line, r.id, l.qualified()))
			}
			seen[l.qualified()] = true
			if _, ok := byQualified[l.qualified()]; ok {
				continue
			}
			msg := fmt.Sprintf("%s:%d: rule %s lists %s, but there is no func %s in any %s/*_test.go", name, l.line, r.id, l.qualified(), l.name, l.dir)
			if others := byName[l.name]; len(others) > 0 {
				msg += fmt.Sprintf(": it is in %s (write %s)", others[0].file, others[0].qualified())
			} else {
				msg += ": fix the name (was the test renamed?) or remove the line"
			}
			problems = append(problems, msg)
		}
	}
	for _, f := range tests {
		id := namedRule(f.name)
		if id == "" {
			continue
		}
		if _, ok := exempt[id]; ok {
			used[id] = true
			continue
		}
		r, ok := byID[id]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s:%d: %s names rule %s, which %s does not define: add a rule \"### %s\" to %s that lists \"- `%s`\", or rename the test to Test<RuleId>_<What> with an existing rule id (a name without an underscore names no rule)", f.file, f.line, f.name, id, name, id, name, f.qualified()))
			continue
		}
		if !slices.ContainsFunc(r.tests, func(l listedTest) bool { return l.qualified() == f.qualified() }) {
			problems = append(problems, fmt.Sprintf("%s:%d: %s names rule %s, but %s does not list it there: add \"- `%s`\" to the Checked by list of %s (%s:%d)", f.file, f.line, f.name, id, name, f.qualified(), id, name, r.line))
		}
	}
	for _, nr := range notRules {
		if _, isRule := byID[nr.prefix]; isRule {
			problems = append(problems, fmt.Sprintf("%s:%d: %s is a rule id and also listed under %q: remove it from that list", name, nr.line, nr.prefix, notRulesHeading))
		} else if !used[nr.prefix] {
			problems = append(problems, fmt.Sprintf("%s:%d: no test is named Test%s_<What> any more: remove %s from %q", name, nr.line, nr.prefix, nr.prefix, notRulesHeading))
		}
	}
	return problems
}

// moduleRoot returns the directory of the module's go.mod (found upwards
// from the package directory) and the module path.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return dir, strings.Trim(strings.TrimSpace(m), `"`)
				}
			}
			t.Fatalf("%s/go.mod has no module line", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
