package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/lease"
)

// commandTimeout bounds status's and release's round trips.
const commandTimeout = 10 * time.Second

// keyState is what GET and PTTL said about a key.
type keyState struct {
	present bool
	value   string // the owner token's bytes (or the counter's digits)
	pttl    int64  // milliseconds; -1 no expiry, -2 no key
}

// readKey sends GET and PTTL for key, pipelined on one connection. They
// are read-only; the key may change between the two (a PTTL of -2 after a
// GET that found the key counts as gone).
func readKey(ctx context.Context, client rueidis.Client, key string) (keyState, error) {
	replies := client.DoMulti(ctx, client.B().Get().Key(key).Build(), client.B().Pttl().Key(key).Build())
	value, err := replies[0].ToString()
	if rueidis.IsRedisNil(err) {
		return keyState{pttl: -2}, nil
	}
	if err != nil {
		return keyState{}, err
	}
	pttl, err := replies[1].AsInt64()
	if err != nil {
		return keyState{}, err
	}
	if pttl == -2 {
		return keyState{pttl: -2}, nil
	}
	return keyState{present: true, value: value, pttl: pttl}, nil
}

// cmdStatus is `lockctl status`. It exits 1 when a KEY has no owner (the
// counters do not count), so that `lockctl status -q KEY && ...` reads as
// "if KEY is held".
func cmdStatus(args []string, g *connFlags, e *env) error {
	fs := newFlagSet("lockctl status")
	g.register(fs)
	var counters, semaphores []string
	fs.Var(stringsFlag{&counters}, "fenced", "")
	fs.Var(stringsFlag{&semaphores}, "semaphore", "")
	showToken := fs.Bool("show-token", false, "")
	quiet := fs.Bool("q", false, "")
	keys, err := parseFlags(fs, args, true)
	if err != nil {
		return flagError("lockctl status", statusUsage, err, e)
	}
	switch {
	case len(keys) == 0 && len(counters) == 0 && len(semaphores) == 0:
		return usagef("status: missing KEY; see 'lockctl status --help'")
	case *showToken && len(semaphores) > 0:
		return usagef("status: --show-token and --semaphore do not go together (a semaphore's permits are not listed)")
	}
	if err := checkKeys(append(append(keys, counters...), semaphores...)); err != nil {
		return err
	}
	for _, name := range semaphores {
		if _, err := conn.NewSemaphore("", name, 1); err != nil {
			return usagef("status: --semaphore %s: %v", showKey(name), err)
		}
	}
	b, err := g.open(e.getenv)
	if err != nil {
		return err
	}
	defer b.close()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	free := false
	for _, key := range keys {
		line, held, err := keyLine(ctx, b, key, *showToken, *quiet)
		if err != nil {
			return failf(serverStatus(err), "status %s: %v", showKey(key), err)
		}
		free = free || !held
		if line != "" {
			fmt.Fprintln(e.stdout, line)
		}
	}
	for _, counter := range counters {
		st, err := readKey(ctx, b.client, counter)
		if err != nil {
			return failf(serverStatus(err), "status %s: %v", showKey(counter), err)
		}
		if !*quiet {
			fmt.Fprintln(e.stdout, counterLine(counter, st))
		}
	}
	for _, name := range semaphores {
		line, live, err := semaphoreLine(ctx, b, name)
		if err != nil {
			return failf(serverStatus(err), "status %s: %v", showKey(name), err)
		}
		free = free || !live
		if !*quiet {
			fmt.Fprintln(e.stdout, line)
		}
	}
	if free {
		return exitWith(exitNotHeld)
	}
	return nil
}

// keyLine describes KEY as status prints it (the line is "" when nothing
// is to be printed: -q, or -q --show-token of a KEY without a token), and
// held reports whether KEY is in use: its lock has an owner, or, when it
// has none, the semaphore KEY ('lockctl run --limit') has a live permit —
// a KEY is one lock or one semaphore. The semaphore is looked at only when
// its holders key exists (a GET answered WRONGTYPE), so a lock user needs
// no more permissions where no semaphore is.
func keyLine(ctx context.Context, b *backend, key string, showToken, quiet bool) (line string, held bool, err error) {
	st, err := readKey(ctx, b.client, key)
	if err != nil {
		return "", false, err
	}
	if !st.present {
		if line, live, err := semaphoreOf(ctx, b, key); err != nil || live {
			return quietly(line, quiet), live, err
		}
	}
	switch {
	case !quiet:
		return lockLine(key, st, showToken), st.present, nil
	case showToken && st.present:
		return tokenText(st.value), true, nil
	}
	return "", st.present, nil
}

// semaphoreOf describes the semaphore name when it has a live permit
// (live), sending nothing beyond a GET when it has no holders key.
func semaphoreOf(ctx context.Context, b *backend, name string) (line string, live bool, err error) {
	sem, err := conn.NewSemaphore("", name, 1)
	if err != nil {
		return "", false, nil // no semaphore can have this name
	}
	err = b.client.Do(ctx, b.client.B().Get().Key(sem.HoldersKey).Build()).Error()
	if !isWrongType(err) {
		return "", false, nil // no sorted set there (GET's own failures show in the lock's read)
	}
	return semaphoreLine(ctx, b, name)
}

// quietly is line, or "" with -q.
func quietly(line string, quiet bool) string {
	if quiet {
		return ""
	}
	return line
}

// semaphoreLine describes the semaphore name as 'lockctl run --limit' uses
// it: its live permits, by the server's clock (lease.Semaphore.Holders),
// and the limit stored with them; live reports whether one is.
func semaphoreLine(ctx context.Context, b *backend, name string) (line string, live bool, err error) {
	locks, err := lease.New(b.lockClient())
	if err != nil {
		return "", false, err
	}
	defer locks.Close()
	n, err := locks.Semaphore(name, 1).Holders(ctx)
	if err != nil {
		return "", false, err
	}
	if n == 0 {
		return showKey(name) + ": semaphore, no live permit", false, nil
	}
	limit, err := storedLimit(ctx, b.client, name)
	if err != nil {
		return "", false, err
	}
	line = fmt.Sprintf("%s: semaphore, %d live permit%s", showKey(name), n, plural(n))
	if limit != "" {
		line += " (limit " + limit + ")"
	}
	return line, true, nil
}

// storedLimit reads the limit stored with the semaphore name: the negated
// score of conn.SemaphoreLimitMember in its holders key (ZSCORE), "" when
// none is stored.
func storedLimit(ctx context.Context, client rueidis.Client, name string) (string, error) {
	keys, err := conn.NewSemaphore("", name, 1)
	if err != nil {
		return "", err
	}
	score, err := client.Do(ctx, client.B().Zscore().Key(keys.HoldersKey).Member(conn.SemaphoreLimitMember).Build()).AsFloat64()
	switch {
	case rueidis.IsRedisNil(err):
		return "", nil
	case err != nil:
		return "", err
	case score >= 0 || score < -conn.MaxSemaphoreLimit:
		return "", nil
	}
	return strconv.FormatInt(int64(-score), 10), nil
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// lockLine describes a lock key: its owner's fingerprint (as watch shows
// it), its PTTL, the owner label its holder set (lease.WithOwner, never a
// byte of the token), and the token only with showToken.
func lockLine(key string, st keyState, showToken bool) string {
	if !st.present {
		return showKey(key) + ": no owner"
	}
	line := showKey(key) + ": owner present (owner=" + fingerprint(st.value) + "), "
	if st.pttl < 0 {
		line += "PTTL -1 (no expiry: not a lease)"
	} else {
		line += fmt.Sprintf("PTTL %d ms", st.pttl)
	}
	if label, ok := lease.TokenFromBytes([]byte(st.value)).OwnerLabel(); ok {
		line += ", label " + strconv.Quote(label)
	}
	if showToken {
		line += ", token " + tokenText(st.value)
	}
	return line
}

// tokenText is the one way lockctl writes an owner token: lease.Token.Hex
// of the key's exact bytes, which release --token reads back
// (lease.TokenFromHex). It is not the value as redis-cli GET shows it: a
// managed token's 32 hex characters are themselves hex-encoded.
func tokenText(value string) string { return lease.TokenFromBytes([]byte(value)).Hex() }

// counterLine describes a fencing counter key.
func counterLine(key string, st keyState) string {
	switch {
	case !st.present:
		return showKey(key) + ": fencing counter not set"
	case isCounter(st.value):
		return showKey(key) + ": fencing counter " + st.value
	}
	return fmt.Sprintf("%s: not a fencing counter (value is not an integer)", showKey(key))
}

// isCounter reports whether v is a non-negative decimal integer.
func isCounter(v string) bool {
	_, err := strconv.ParseUint(v, 10, 63)
	return err == nil
}

// checkKeys refuses empty keys.
func checkKeys(keys []string) error {
	for _, k := range keys {
		if k == "" {
			return usagef("empty key")
		}
	}
	return nil
}

// showKey prints a key as is, or quoted when it holds spaces or control
// characters.
func showKey(key string) string {
	if strings.ContainsFunc(key, func(r rune) bool { return r <= ' ' || r == 0x7f }) || !strconv.CanBackquote(key) {
		return strconv.Quote(key)
	}
	return key
}

// cmdRelease is `lockctl release`.
func cmdRelease(args []string, g *connFlags, e *env) error {
	fs := newFlagSet("lockctl release")
	g.register(fs)
	tokenHex := fs.String("token", "", "")
	keys, err := parseFlags(fs, args, true)
	if err != nil {
		return flagError("lockctl release", releaseUsage, err, e)
	}
	switch {
	case len(keys) != 1:
		return usagef("release: want exactly one KEY (got %d); see 'lockctl release --help'", len(keys))
	case keys[0] == "":
		return usagef("release: empty key")
	case *tokenHex == "":
		return usagef("release: missing --token HEX")
	}
	token, err := lease.TokenFromHex(strings.TrimSpace(*tokenHex))
	if err != nil || token.IsZero() {
		return usagef("release: --token is not a token as 'lockctl status --show-token' prints it (hexadecimal)")
	}
	b, err := g.open(e.getenv)
	if err != nil {
		return err
	}
	defer b.close()
	locks, err := lease.New(b.lockClient())
	if err != nil {
		return usagef("release: %v", err)
	}
	defer locks.Close()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	released, err := locks.Release(ctx, keys[0], token)
	switch {
	case err != nil:
		return failf(serverStatus(err), "release %s: %s", showKey(keys[0]), reason(err))
	case !released:
		fmt.Fprintln(e.stdout, "not owned")
		stored, err := b.client.Do(ctx, b.client.B().Get().Key(keys[0]).Build()).ToString()
		if err == nil && strings.EqualFold(stored, strings.TrimSpace(*tokenHex)) {
			fmt.Fprintln(e.stderr, "lockctl: release: --token is the key's stored value, not its token; "+
				"pass what 'lockctl status --show-token' prints (nothing was deleted)")
		}
		return exitWith(exitNotHeld)
	}
	fmt.Fprintln(e.stdout, "released")
	return nil
}
