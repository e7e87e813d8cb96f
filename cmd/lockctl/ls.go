package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/respire-go/respire/lease"
)

// listedLock is one lock of ls and top as --json prints it: never a token.
type listedLock struct {
	Kind          string `json:"kind"`
	Key           string `json:"key"`
	Owner         string `json:"owner,omitempty"`
	Held          bool   `json:"held"`
	Reserved      bool   `json:"reserved,omitempty"`
	WriterWaiting bool   `json:"writer_waiting,omitempty"`
	LeaseMillis   int64  `json:"lease_ms"`
	NoExpiry      bool   `json:"no_expiry,omitempty"`
	Holders       int    `json:"holders,omitempty"`
	Limit         int    `json:"limit,omitempty"`
	Waiters       int    `json:"waiters"`
	Overtaken     int    `json:"overtaken,omitempty"`
}

func listed(in lease.LockInfo) listedLock {
	return listedLock{Kind: string(in.Kind), Key: in.Key, Owner: in.Owner, Held: in.Held, Reserved: in.Reserved,
		WriterWaiting: in.WriterWaiting, LeaseMillis: in.Remaining.Milliseconds(), NoExpiry: in.NoExpiry,
		Holders: in.Holders, Limit: in.Limit, Waiters: in.Waiters, Overtaken: in.Overtaken}
}

// listFlags are ls's and top's own flags.
type listFlags struct {
	json  *bool
	limit *int
}

// listLocks opens a connection, lists the locks matching pattern and
// closes it.
func listLocks(ctx context.Context, g *connFlags, e *env, pattern string, limit int) ([]lease.LockInfo, error) {
	b, err := g.open(e.getenv)
	if err != nil {
		return nil, err
	}
	defer b.close()
	locks, err := lease.New(b.lockClient())
	if err != nil {
		return nil, err
	}
	defer locks.Close()
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	return locks.List(ctx, pattern, lease.WithListLimit(limit))
}

// cmdLs is `lockctl ls [PATTERN]`.
func cmdLs(args []string, g *connFlags, e *env) error {
	fs := newFlagSet("lockctl ls")
	g.register(fs)
	f := listFlags{json: fs.Bool("json", false, ""), limit: fs.Int("limit", lease.DefaultListLimit, "")}
	rest, err := parseFlags(fs, args, true)
	if err != nil {
		return flagError("lockctl ls", lsUsage, err, e)
	}
	pattern, err := onePattern("ls", rest, *f.limit)
	if err != nil {
		return err
	}
	infos, err := listLocks(context.Background(), g, e, pattern, *f.limit)
	if err != nil && infos == nil {
		return err
	}
	if perr := printLocks(e.stdout, infos, *f.json); perr != nil {
		return perr
	}
	return err // ErrListTruncated: printed what was found, and says so
}

// onePattern checks ls's and top's arguments: at most one PATTERN
// (default "*") and a positive --limit.
func onePattern(cmd string, rest []string, limit int) (string, error) {
	switch {
	case len(rest) > 1:
		return "", usagef("%s: one PATTERN at most (got %d); see 'lockctl %s --help'", cmd, len(rest), cmd)
	case limit < 1:
		return "", usagef("%s: --limit must be at least 1 (got %d)", cmd, limit)
	case len(rest) == 1:
		return rest[0], nil
	}
	return "*", nil
}

// printLocks prints infos as a table, or with asJSON as one JSON array.
func printLocks(w io.Writer, infos []lease.LockInfo, asJSON bool) error {
	if asJSON {
		out := make([]listedLock, 0, len(infos))
		for _, in := range infos {
			out = append(out, listed(in))
		}
		return json.NewEncoder(w).Encode(out)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tKEY\tOWNER\tLEASE\tHOLDERS\tWAITERS")
	for _, in := range infos {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", in.Kind, showKey(in.Key), ownerCell(in), leaseCell(in),
			holdersCell(in), in.Waiters)
	}
	return tw.Flush()
}

func ownerCell(in lease.LockInfo) string {
	switch {
	case in.Reserved:
		return "(granted to a fair waiter)"
	case in.WriterWaiting:
		return "(writer waiting)"
	case in.Owner != "":
		return strconv.Quote(in.Owner)
	case in.Held && (in.Kind == lease.KindMutex || in.Holders == 0):
		return "(no label)"
	}
	return "-"
}

func leaseCell(in lease.LockInfo) string {
	switch {
	case in.NoExpiry:
		return "no expiry"
	case !in.Held && !in.Reserved:
		return "-"
	}
	return in.Remaining.Round(time.Millisecond).String()
}

func holdersCell(in lease.LockInfo) string {
	switch in.Kind {
	case lease.KindSemaphore:
		return fmt.Sprintf("%d/%d", in.Holders, in.Limit)
	case lease.KindRWLock:
		return fmt.Sprintf("%d readers", in.Holders)
	}
	return "-"
}

// cmdTop is `lockctl top [PATTERN]`: the most-waited locks, refreshed.
func cmdTop(args []string, g *connFlags, e *env) error {
	fs := newFlagSet("lockctl top")
	g.register(fs)
	f := listFlags{json: fs.Bool("json", false, ""), limit: fs.Int("limit", lease.DefaultListLimit, "")}
	interval := newDuration(fs, "interval", 2*time.Second, "")
	count := fs.Int("count", 20, "")
	iterations := fs.Int("iterations", 0, "")
	rest, err := parseFlags(fs, args, true)
	if err != nil {
		return flagError("lockctl top", topUsage, err, e)
	}
	pattern, err := onePattern("top", rest, *f.limit)
	switch {
	case err != nil:
		return err
	case *interval <= 0:
		return usagef("top: --interval must be positive (got %v)", *interval)
	case *count < 1 || *iterations < 0:
		return usagef("top: --count must be at least 1 and --iterations at least 0")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for i := 0; *iterations == 0 || i < *iterations; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(*interval):
			}
		}
		infos, err := listLocks(ctx, g, e, pattern, *f.limit)
		if err != nil && infos == nil {
			return err
		}
		if err := printTop(e.stdout, topOf(infos, *count), *f.json); err != nil {
			return err
		}
	}
	return nil
}

// topOf sorts infos by waiters, then holders, most first, and keeps n.
func topOf(infos []lease.LockInfo, n int) []lease.LockInfo {
	slices.SortStableFunc(infos, func(a, b lease.LockInfo) int {
		if a.Waiters != b.Waiters {
			return b.Waiters - a.Waiters
		}
		return b.Holders - a.Holders
	})
	return infos[:min(n, len(infos))]
}

// printTop prints one refresh: a timestamped table, or one JSON object
// per line with --json.
func printTop(w io.Writer, infos []lease.LockInfo, asJSON bool) error {
	now := time.Now().Format(timeLayout)
	if asJSON {
		out := struct {
			Time  string       `json:"time"`
			Locks []listedLock `json:"locks"`
		}{Time: now, Locks: make([]listedLock, 0, len(infos))}
		for _, in := range infos {
			out.Locks = append(out.Locks, listed(in))
		}
		return json.NewEncoder(w).Encode(out)
	}
	fmt.Fprintf(w, "%s  %d locks, most waited first\n", now, len(infos))
	if err := printLocks(w, infos, false); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}
