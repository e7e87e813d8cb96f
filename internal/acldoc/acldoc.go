// Package acldoc reads the least-privilege ACL lines that
// docs/compatibility.md documents, so that the tests which create users
// with exactly those lines (lease's and goredis' behaviour suite, conn,
// lockctl) test what the page says, and every line the page (or the
// README) shows is one of them. It is test code: only tests import it.
package acldoc

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Profiles names the server rows of the page's first ACL table, by the
// simulator's profile names.
var Profiles = map[string]string{
	"Redis 7.0":  "redis-7.0",
	"Redis 8.4":  "redis-8.4",
	"Valkey 8.1": "valkey-8.1",
	"Valkey 9.0": "valkey-9.0",
}

// Use is one row of the page's "Add to the row" table.
type Use struct {
	Label       string   // the first cell, as written
	Commands    []string // what it adds ("evalsha", "client|id", ...)
	WithManaged bool     // the row says it goes with the managed locks' line
}

// Page is what the page documents.
type Page struct {
	Rows map[string][]string // profile → the raw-token row's commands
	Uses []Use
	// Lines are every `ACL SETUSER …` line the files show, whitespace
	// folded to single spaces.
	Lines []string
}

var (
	codeSpan = regexp.MustCompile("`([^`]*)`")
	rowLine  = regexp.MustCompile(`^\|\s*([^|]+?)\s*\|\s*` + "`(ACL SETUSER [^`]*)`" + `\s*\|$`)
)

// Read parses the compatibility page at path and collects the ACL lines of
// it and of the other files (the README).
func Read(path string, others ...string) (Page, error) {
	doc, err := os.ReadFile(path)
	if err != nil {
		return Page{}, err
	}
	p := Page{Rows: map[string][]string{}}
	for _, line := range strings.Split(string(doc), "\n") {
		line = strings.TrimSpace(line)
		if m := rowLine.FindStringSubmatch(line); m != nil {
			for label, profile := range Profiles {
				if strings.HasPrefix(m[1], label) {
					p.Rows[profile] = Commands(m[2])
				}
			}
			continue
		}
		if u, ok := useRow(line); ok {
			p.Uses = append(p.Uses, u)
		}
	}
	if len(p.Rows) != len(Profiles) || len(p.Uses) == 0 {
		return Page{}, fmt.Errorf("%s: found %d server rows and %d uses; want %d and some", path, len(p.Rows), len(p.Uses), len(Profiles))
	}
	for _, f := range append([]string{path}, others...) {
		text, err := os.ReadFile(f)
		if err != nil {
			return Page{}, err
		}
		folded := strings.Join(strings.Fields(string(text)), " ")
		for _, m := range codeSpan.FindAllStringSubmatch(folded, -1) {
			if strings.HasPrefix(m[1], "ACL SETUSER") {
				p.Lines = append(p.Lines, strings.ReplaceAll(m[1], `\|`, "|"))
			}
		}
	}
	return p, nil
}

// useRow reads a row of the "Add to the row" table: a label and one code
// span of +commands.
func useRow(line string) (Use, bool) {
	cells := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")
	if len(cells) != 4 || cells[0] != "" || cells[3] != "" {
		return Use{}, false
	}
	label, adds := strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])
	if !strings.HasPrefix(adds, "`+") || !strings.HasSuffix(adds, "`") {
		return Use{}, false
	}
	adds = strings.ReplaceAll(strings.Trim(adds, "`"), "\x00", "|")
	return Use{Label: strings.ReplaceAll(label, "\x00", "|"), Commands: Commands(adds),
		WithManaged: strings.Contains(label, "with the managed locks' line")}, true
}

// Commands returns the +commands of an ACL line or list, without the "+".
func Commands(line string) []string {
	var out []string
	for _, f := range strings.Fields(line) {
		if c, ok := strings.CutPrefix(f, "+"); ok {
			out = append(out, c)
		}
	}
	return out
}

// Find returns the use whose label contains what.
func (p Page) Find(what string) (Use, bool) {
	for _, u := range p.Uses {
		if strings.Contains(u.Label, what) {
			return u, true
		}
	}
	return Use{}, false
}

// Compose returns the commands of row followed by each list's commands
// not already there, in order.
func Compose(row []string, lists ...[]string) []string {
	out := slices.Clone(row)
	for _, l := range lists {
		for _, c := range l {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// Line renders commands as the page writes a line.
func Line(commands []string) string {
	return "ACL SETUSER locker on >pw ~* +" + strings.Join(commands, " +")
}
