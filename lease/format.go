package lease

import (
	"fmt"
	"log/slog"
	"time"
)

// This file makes every value of the API safe to print and log: fmt (all
// verbs, %#v included) and slog show keys, states and estimates, never an
// owner token.

// Format prints the lock's key, state and remaining estimate for every
// verb, never its token.
func (l *Lock) Format(f fmt.State, verb rune) {
	if l == nil {
		fmt.Fprint(f, "<nil>")
		return
	}
	fmt.Fprintf(f, "lease.Lock{key: %q, state: %s, remaining: %v}", l.Key(), l.State(),
		l.RemainingEstimate().Round(time.Millisecond))
}

// LogValue logs the lock's key, state and remaining estimate, never its
// token.
func (l *Lock) LogValue() slog.Value {
	if l == nil {
		return slog.StringValue("<nil>")
	}
	return slog.GroupValue(slog.String("key", l.Key()), slog.String("state", l.State().String()),
		slog.String("remaining", l.RemainingEstimate().Round(time.Millisecond).String()))
}

// Format prints whether the attempt acquired, and its lock, for every verb.
func (a Attempt) Format(f fmt.State, verb rune) {
	if a.lock == nil {
		fmt.Fprint(f, "lease.Attempt{acquired: false}")
		return
	}
	fmt.Fprintf(f, "lease.Attempt{acquired: true, lock: %v}", a.lock)
}

// LogValue logs whether the attempt acquired, and its lock.
func (a Attempt) LogValue() slog.Value {
	if a.lock == nil {
		return slog.GroupValue(slog.Bool("acquired", false))
	}
	return slog.GroupValue(slog.Bool("acquired", true), slog.Any("lock", a.lock))
}

// Format prints the keep-alive's key and whether it runs, or why it ended,
// for every verb.
func (k *KeepAlive) Format(f fmt.State, verb rune) {
	if k == nil {
		fmt.Fprint(f, "<nil>")
		return
	}
	if err := k.Err(); err != nil {
		fmt.Fprintf(f, "lease.KeepAlive{key: %q, ended: %q}", lockOf(k.core().Lock()).Key(), err.Error())
		return
	}
	fmt.Fprintf(f, "lease.KeepAlive{key: %q, running: true}", lockOf(k.core().Lock()).Key())
}

// LogValue logs the keep-alive's key and whether it runs, or why it ended.
func (k *KeepAlive) LogValue() slog.Value {
	if k == nil {
		return slog.StringValue("<nil>")
	}
	if err := k.Err(); err != nil {
		return slog.GroupValue(slog.String("key", lockOf(k.core().Lock()).Key()), slog.String("ended", err.Error()))
	}
	return slog.GroupValue(slog.String("key", lockOf(k.core().Lock()).Key()), slog.Bool("running", true))
}

// Format prints the view's key prefix and whether it is closed, for every
// verb.
func (l *Locks) Format(f fmt.State, verb rune) {
	if l == nil {
		fmt.Fprint(f, "<nil>")
		return
	}
	fmt.Fprintf(f, "lease.Locks{prefix: %q, closed: %t}", l.prefix, l.core.driver.Closed())
}

// LogValue logs the view's key prefix and whether it is closed.
func (l *Locks) LogValue() slog.Value {
	if l == nil {
		return slog.StringValue("<nil>")
	}
	return slog.GroupValue(slog.String("prefix", l.prefix), slog.Bool("closed", l.core.driver.Closed()))
}

// Format prints a redacted token for every verb: "<redacted token>", or
// "<empty token>" for the zero token. Use Hex, Bytes or Text to read it.
func (t Token) Format(f fmt.State, verb rune) {
	fmt.Fprint(f, t.LogValue().String())
}
