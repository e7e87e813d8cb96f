package dst

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/respire-go/respire/conn"
)

// transcript is the readable schedule: one line per event, virtual time
// first. Owner tokens are secrets even in a simulation: they are printed as
// "tok(p1.3)", the process and the number of the try that drew them. It
// costs nothing when disabled.
type transcript struct {
	enabled bool
	lines   []string
	tokens  map[string]string // token -> "tok(hN)"
	order   []string          // tokens in creation order (deterministic redaction)
}

func (t *transcript) nameToken(token, label string) {
	if !t.enabled {
		return
	}
	if t.tokens == nil {
		t.tokens = map[string]string{}
	}
	t.tokens[token] = "tok(" + label + ")"
	t.order = append(t.order, token)
}

// tokenName names a token without revealing it: tok(p1.3), from the label
// every token of a schedule starts with (see world.newToken).
func tokenName(token string) string {
	label, _, _ := strings.Cut(token, "-")
	return "tok(" + label + ")"
}

// redactText replaces every token inside a free text (server error
// messages quote their arguments).
func (t *transcript) redactText(s string) string {
	for _, token := range t.order {
		if strings.Contains(s, token) {
			s = strings.ReplaceAll(s, token, t.tokens[token])
		}
	}
	return s
}

// logf appends one line: "  12.345ms p1 h3   message".
func (t *transcript) logf(w *world, p *process, handle, format string, args ...any) {
	if !t.enabled {
		return
	}
	var b strings.Builder
	ms := strconv.FormatFloat(float64(w.now)/1e6, 'f', 3, 64)
	b.WriteString(strings.Repeat(" ", max(0, 10-len(ms))))
	b.WriteString(ms)
	b.WriteString("ms ")
	who := "--"
	if p != nil {
		who = p.name
	}
	b.WriteString(who)
	b.WriteByte(' ')
	b.WriteString(handle)
	b.WriteString(strings.Repeat(" ", max(0, 5-len(handle))))
	fmt.Fprintf(&b, format, args...)
	t.lines = append(t.lines, t.redactText(b.String()))
}

// redact renders a command with tokens and script bodies replaced.
func (t *transcript) redact(args []string) string {
	if !t.enabled {
		return ""
	}
	out := make([]string, len(args))
	for i, a := range args {
		switch {
		case t.tokens[a] != "":
			out[i] = t.tokens[a]
		case a == conn.ReleaseScript || a == conn.ReleaseScriptSHA:
			out[i] = "<cad>"
		case a == conn.ExtendScript || a == conn.ExtendScriptSHA:
			out[i] = "<cap>"
		case a == conn.FencedAcquireScript || a == conn.FencedAcquireScriptSHA:
			out[i] = "<fenced>"
		case i == 1 && strings.EqualFold(args[0], "EVAL"):
			out[i] = "<" + strings.TrimPrefix(family(conn.Command{Args: args}), "script:")[:12] + ">"
		default:
			out[i] = a
		}
	}
	return strings.Join(out, " ")
}

// String is the whole transcript, newline-terminated lines.
func (t *transcript) String() string {
	if len(t.lines) == 0 {
		return ""
	}
	return strings.Join(t.lines, "\n") + "\n"
}
