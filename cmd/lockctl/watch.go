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
	b, err := g.open(e.getenv)
	if err != nil {
		return err
	}
	defer b.close()
	state := make([]watched, len(keys))
	for i, k := range keys {
		state[i].key = k
	}
	ticker := time.NewTicker(*interval)
	defer ticker.Stop()
	for {
		for i := range state {
			state[i].poll(ctx, b.client, e)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// poll reads the key once and prints what changed since the last poll.
func (w *watched) poll(ctx context.Context, client rueidis.Client, e *env) {
	sent := time.Now()
	cmdCtx, cancel := context.WithTimeout(ctx, commandTimeout)
	st, err := readKey(cmdCtx, client, w.key)
	cancel()
	now := time.Now()
	if err != nil {
		if ctx.Err() == nil && !w.failing {
			fmt.Fprintf(e.stderr, "lockctl: watch %s: %s (retrying)\n", showKey(w.key), oneLine(err.Error()))
		}
		w.failing = true
		return
	}
	w.failing = false
	if !w.known {
		w.known = true
		if st.present {
			w.printf(e.stdout, now, "held", st.value, ttlText(st.pttl))
		} else {
			w.printf(e.stdout, now, "free", "", "")
		}
	} else if st.value != w.owner || !st.present {
		w.transition(e.stdout, now, st)
	}
	w.owner = ""
	if st.present {
		w.owner = st.value
	}
	w.expires = time.Time{}
	if st.present && st.pttl >= 0 {
		w.expires = sent.Add(time.Duration(st.pttl) * time.Millisecond)
	}
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
