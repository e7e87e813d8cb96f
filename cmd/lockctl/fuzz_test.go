package main

import (
	"net"
	"strings"
	"testing"
	"time"
)

// FuzzFlags: whatever a user types, lockctl's flag parsing — the connection
// flags (-h, -p, -n, --addr, --url, --tls, --sim, …), a duration flag and
// interleaved positional arguments — never panics; a duration it accepts
// lies in [0, lease.MaxTTL], an address list it accepts holds host:port
// pairs, and connection flags that pass check build a client option.
// Arguments are separated by NUL in the fuzzed string.
func FuzzFlags(f *testing.F) {
	for _, seed := range []string{
		"--ttl\x0030s\x00lock:a",
		"-h\x00127.0.0.1\x00-p\x006379\x00status\x00k",
		"--addr\x00127.0.0.1:7000,127.0.0.1:7001\x00--cluster",
		"--url\x00redis://:secret@127.0.0.1:6379/2\x00--ttl\x001.5",
		"--url\x00rediss://default:pw@[::1]:6380/0\x00--cacert\x00/nonexistent",
		"--sim\x00redis-7.0\x00--ttl\x00-1s",
		"-p\x0070000\x00--ttl\x0099999999999h",
		"--ttl\x00NaN\x00--\x00--ttl",
		"-n\x00-2\x00--addr\x00,",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, "\x00")
		fs := newFlagSet("acquire")
		g := newConnFlags()
		g.register(fs)
		ttl := newDuration(fs, "ttl", 0, "lease duration")
		if _, err := parseFlags(fs, args, true); err != nil {
			return
		}
		if *ttl < 0 || *ttl > maxDuration {
			t.Fatalf("--ttl accepted %v from %q", *ttl, args)
		}
		if err := g.check(); err != nil {
			return
		}
		if g.addr != "" {
			if addrs, err := parseAddrs(g.addr); err == nil {
				for _, a := range addrs {
					if _, _, err := net.SplitHostPort(a); err != nil {
						t.Fatalf("--addr %q gave %q: %v", g.addr, a, err)
					}
				}
			}
		}
		if g.sim == "" {
			_, _ = g.clientOption(func(string) string { return "" })
		}
	})
}

// FuzzDuration: a duration flag's value is accepted only within [0,
// lease.MaxTTL], whatever the text (numbers of seconds, Go durations, signs,
// overflow, NaN).
func FuzzDuration(f *testing.F) {
	for _, s := range []string{"30s", "1.5", "0", "-1s", "+5m", "NaN", "Inf", "1e308", "99999999999h", "3h2m1.5s", "µs", ".s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDuration(s)
		if err == nil && (d < 0 || d > maxDuration) {
			t.Fatalf("parseDuration(%q) = %v", s, d)
		}
		if err != nil && d != 0 {
			t.Fatalf("parseDuration(%q) = %v with error %v", s, d, err)
		}
		_ = time.Duration(d).String()
	})
}
