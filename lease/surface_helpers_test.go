package lease

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
)

// Helpers of the tests of lease's public surface (Lock.Context, errors,
// fmt/slog, bounded Close, a closed rueidis client, waiting).

// lossOf returns cause as a *LossError, failing t unless it is one that
// also matches ErrOwnershipLost.
func lossOf(t *testing.T, cause error) *LossError {
	t.Helper()
	var loss *LossError
	if !errors.As(cause, &loss) || !errors.Is(cause, ErrOwnershipLost) {
		t.Fatalf("cause %v (%T); want a *LossError matching ErrOwnershipLost", cause, cause)
	}
	return loss
}

// causeOf waits (bounded) for ctx to end and returns its cause.
func causeOf(t *testing.T, ctx context.Context) error {
	t.Helper()
	waitDone(t, ctx)
	return context.Cause(ctx)
}

// leasePrefix finds the package prefix as a word ("Release: " holds none).
var leasePrefix = regexp.MustCompile(`\blease: `)

// assertOneLeasePrefix fails t unless err's text starts with exactly one
// "lease: " and names no inner package.
func assertOneLeasePrefix(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	text := err.Error()
	if !strings.HasPrefix(text, "lease: ") || len(leasePrefix.FindAllStringIndex(text, -1)) != 1 {
		t.Errorf("%s: error %q; want exactly one \"lease: \" prefix", what, text)
	}
	for _, inner := range []string{"statemachine:", "conn:", "respire:"} {
		if strings.Contains(text, inner) {
			t.Errorf("%s: error %q names %q", what, text, inner)
		}
	}
}
