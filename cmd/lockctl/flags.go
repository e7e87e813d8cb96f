package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
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
// --help prints usage to stdout and succeeds; anything else is one usage
// line on stderr.
func flagError(cmd, usage string, err error, e *env) error {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(e.stdout, usage)
		return nil
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		dashes := "--"
		if len(name) == 1 {
			dashes = "-"
		}
		msg = "unknown flag " + dashes + name
	}
	msg = strings.NewReplacer("for flag -", "for flag --", "argument: -", "argument: --").Replace(msg)
	return usagef("%s; see '%s --help'", msg, cmd)
}

// durationFlag is a flag.Value for a duration: Go syntax ("30s", "1m30s",
// "250ms") or a plain number of seconds ("30", "0.5"), as flock -w takes.
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

func (f durationFlag) Set(s string) error {
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		*f.d = time.Duration(n * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration (want e.g. 30s, 1m, 250ms or a number of seconds)")
	}
	*f.d = d
	return nil
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
