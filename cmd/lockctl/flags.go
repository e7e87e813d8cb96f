package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/respire-go/respire/lease"
)

// newFlagSet returns a flag set that reports errors to its caller and
// prints nothing itself.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args with fs and returns the positional arguments. With
// interleave, flags may follow positional arguments ("release KEY --token
// HEX"); without it, parsing stops at the first positional argument, which
// starts the rest (the subcommand, or run's CMD). "--" always ends the
// flags.
func parseFlags(fs *flag.FlagSet, args []string, interleave bool) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" || !interleave || len(rest) == 0 {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// flagError turns a parse error of cmd's flags into the command's result:
// --help (or -help) prints usage to stdout and succeeds; anything else is
// one usage line on stderr. -h is never help: it is the server host, as in
// redis-cli, and a -h without a host says so.
func flagError(cmd, usage string, err error, e *env) error {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(e.stdout, usage)
		return nil
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		msg = "unknown flag " + name
	}
	msg = flagName.ReplaceAllStringFunc(msg, func(m string) string {
		i := strings.LastIndex(m, " -") + 1
		name := strings.TrimLeft(m[i:], "-")
		if len(name) == 1 {
			return m[:i] + "-" + name
		}
		return m[:i] + "--" + name
	})
	if msg == "flag needs an argument: -h" {
		msg += " (-h is the server host, as in redis-cli; help is --help)"
	}
	return usagef("%s; see '%s --help'", msg, cmd)
}

// flagName matches a flag's name in the flag package's messages.
var flagName = regexp.MustCompile(`(unknown flag|argument:|for flag|for) -+[^\s:]+`)

// maxDuration bounds every duration flag: lease.MaxTTL (about 100 years),
// the longest lease the library accepts. A bound checked before any
// conversion means no float or integer overflow, and the same result on
// every architecture (a float64 → int64 conversion out of range is
// undefined in Go: it saturates on some, wraps on others).
const maxDuration = lease.MaxTTL

// durationFlag is a flag.Value for a duration: Go syntax ("30s", "1m30s",
// "250ms") or a plain number of seconds ("30", "0.5"), as flock -w takes.
// It refuses NaN, infinities, negative values and values above
// maxDuration, naming the limit; a value rounds down to whole nanoseconds.
type durationFlag struct{ d *time.Duration }

// newDuration registers a duration flag on fs.
func newDuration(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	d := value
	fs.Var(durationFlag{&d}, name, usage)
	return &d
}

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

// goDuration is the grammar of time.ParseDuration without a sign: a value
// it matches that ParseDuration refuses overflowed int64 nanoseconds.
var goDuration = regexp.MustCompile(`^([0-9]*(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+$`)

func (f durationFlag) Set(s string) error {
	d, err := parseDuration(strings.TrimSpace(s))
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}

// parseDuration reads a duration flag's value (see durationFlag).
func parseDuration(s string) (time.Duration, error) {
	want := fmt.Sprintf("want a duration from 0 to %v (lease.MaxTTL, about 100 years)", maxDuration)
	tooLong := errors.New("longer than the limit; " + want)
	negative := errors.New("negative; " + want)
	if n, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		switch {
		case math.IsNaN(n):
			return 0, errors.New("not a number; " + want)
		case n < 0:
			return 0, negative
		case n > maxDuration.Seconds(): // also +Inf and out-of-range literals
			return 0, tooLong
		}
		if d := time.Duration(n * float64(time.Second)); d <= maxDuration {
			return d, nil
		}
		return 0, tooLong // rounded up past the limit
	}
	unsigned := strings.TrimPrefix(strings.TrimPrefix(s, "+"), "-")
	d, err := time.ParseDuration(s)
	switch {
	case err != nil && goDuration.MatchString(unsigned) && strings.HasPrefix(s, "-"):
		return 0, negative
	case err != nil && goDuration.MatchString(unsigned):
		return 0, tooLong
	case err != nil:
		return 0, errors.New("not a duration (want e.g. 30s, 1m, 250ms or a number of seconds)")
	case d < 0:
		return 0, negative
	case d > maxDuration:
		return 0, tooLong
	}
	return d, nil
}

// stringsFlag is a repeatable string flag.
type stringsFlag struct{ list *[]string }

func (f stringsFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f stringsFlag) Set(s string) error {
	*f.list = append(*f.list, s)
	return nil
}
