package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/rueidis"
)

// timeLayout is the timestamp of watch's lines: RFC 3339 with milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// watched is what watch knows about one key since its last poll.
type watched struct {
	key     string
	known   bool   // a poll succeeded
	owner   string // the owner token's bytes; "" when free
	expires time.Time
	// expires: the earliest time the owner's lease could end by expiry (the
	// PTTL measured at the server at the earliest when the poll was sent);
	// zero when the key has no expiry.
	failing bool // the last poll failed (reported once)
}

// pollTimeout bounds one poll of watch: a server that does not answer
// within it counts as unreachable.
const pollTimeout = 5 * time.Second

// link is what watch knows about its connection: it says on stdout, as a
// timestamped line, when its reads start failing and when they work again.
type link struct {
	where string    // the server address(es)
	down  time.Time // when the reads started failing; zero while they work
}

// cmdWatch is `lockctl watch`.
func cmdWatch(args []string, g *connFlags, e *env) error {
	fs := newFlagSet("lockctl watch")
	g.register(fs)
	interval := newDuration(fs, "interval", 100*time.Millisecond, "")
	keys, err := parseFlags(fs, args, true)
	if err != nil {
		return flagError("lockctl watch", watchUsage, err, e)
	}
	switch {
	case len(keys) == 0:
		return usagef("watch: missing KEY; see 'lockctl watch --help'")
	case *interval <= 0:
		return usagef("watch: --interval must be positive (got %v)", *interval)
	}
	if err := checkKeys(keys); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	g.noRetry = true
	b, err := g.open(e.getenv)
	if err != nil {
		return err
	}
	defer b.close()
	state := make([]watched, len(keys))
	for i, k := range keys {
		state[i].key = k
	}
	conn := &link{where: b.where}
	ticker := time.NewTicker(*interval)
	defer ticker.Stop()
	for {
		for i := range state {
			if !state[i].poll(ctx, b.client, conn, e) {
				break // the connection is down: the other keys wait for the next tick
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// poll reads the key once and prints what changed since the last poll. It
// returns false when the read failed for want of a connection.
func (w *watched) poll(ctx context.Context, client rueidis.Client, conn *link, e *env) bool {
	sent := time.Now()
	cmdCtx, cancel := context.WithTimeout(ctx, pollTimeout)
	st, err := readKey(cmdCtx, client, w.key)
	cancel()
	now := time.Now()
	switch {
	case ctx.Err() != nil:
		return false
	case err != nil && serverCode(err) == "":
		conn.failed(e.stdout, now, err)
		return false
	case err != nil:
		if !w.failing {
			fmt.Fprintf(e.stderr, "lockctl: watch %s: %s (retrying)\n", showKey(w.key), oneLine(err.Error()))
		}
		w.failing = true
		conn.works(e.stdout, now)
		return true
	}
	conn.works(e.stdout, now)
	w.failing = false
	w.report(e.stdout, now, st)
	w.owner = ""
	if st.present {
		w.owner = st.value
	}
	w.expires = time.Time{}
	if st.present && st.pttl >= 0 {
		w.expires = sent.Add(time.Duration(st.pttl) * time.Millisecond)
	}
	return true
}

// report prints the key's first state, or what changed since the last
// poll.
func (w *watched) report(out io.Writer, now time.Time, st keyState) {
	switch {
	case !w.known && st.present:
		w.printf(out, now, "held", st.value, ttlText(st.pttl))
	case !w.known:
		w.printf(out, now, "free", "", "")
	case st.value != w.owner || !st.present:
		w.transition(out, now, st)
	}
	w.known = true
}

// failed notes a read that failed for want of a connection; the first
// failure after working reads is printed.
func (l *link) failed(out io.Writer, now time.Time, err error) {
	if !l.down.IsZero() {
		return
	}
	l.down = now
	fmt.Fprintf(out, "%s disconnected from %s: %s (retrying)\n", now.Format(timeLayout), l.where, oneLine(err.Error()))
}

// works notes a read that reached the server; the first after failures is
// printed, with how long the connection was down.
func (l *link) works(out io.Writer, now time.Time) {
	if l.down.IsZero() {
		return
	}
	fmt.Fprintf(out, "%s reconnected to %s after %v (changes in that time may have been missed)\n",
		now.Format(timeLayout), l.where, now.Sub(l.down).Round(time.Millisecond))
	l.down = time.Time{}
}

// transition prints the end of the previous owner's lease, if there was
// one, and the new owner, if there is one. The previous lease ended by
// expiry unless the key was seen gone (or owned by another) before the
// lease could have run out; changes within one poll of the expiry count as
// expiries.
func (w *watched) transition(out io.Writer, now time.Time, st keyState) {
	if w.owner != "" {
		event := "released"
		if !w.expires.IsZero() && !now.Before(w.expires) {
			event = "expired"
		}
		w.printf(out, now, event, w.owner, "")
	}
	if st.present {
		w.printf(out, now, "acquired", st.value, ttlText(st.pttl))
	}
}

// printf prints one event line: time, event, key, and the owner's
// fingerprint and PTTL where they apply.
func (w *watched) printf(out io.Writer, at time.Time, event, owner, ttl string) {
	line := fmt.Sprintf("%s %-8s %s", at.Format(timeLayout), event, showKey(w.key))
	if owner != "" {
		line += " owner=" + fingerprint(owner)
	}
	if ttl != "" {
		line += " pttl=" + ttl
	}
	fmt.Fprintln(out, line)
}

// ttlText renders a PTTL reply.
func ttlText(ms int64) string {
	if ms < 0 {
		return "none"
	}
	return fmt.Sprintf("%dms", ms)
}

// fingerprint names an owner without revealing its token: the first 4
// bytes of the token's SHA-256, in hex.
func fingerprint(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:4])
}
