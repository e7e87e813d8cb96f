package main

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWatchPrintsAcquisitionsReleasesAndExpiries: watch prints the key's
// initial state, then one timestamped line per acquisition (with the new
// owner's fingerprint, never its token), release (gone before its PTTL)
// and expiry (gone at its PTTL); SIGINT ends it with 0.
func TestWatchPrintsAcquisitionsReleasesAndExpiries(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, tg *target) {
		key := uniqueKey(t, "watch")
		cmd := exec.Command(binary, append(tg.conn(), "watch", "--interval", "20ms", key)...)
		cmd.Env = tg.env()
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		lines := readLines(stdout)

		expect(t, lines, "free", key, "")
		tg.do(t, tg.client.B().Set().Key(key).Value("owner-a").Px(time.Minute).Build())
		expect(t, lines, "acquired", key, "owner="+fingerprint("owner-a"))
		tg.do(t, tg.client.B().Del().Key(key).Build())
		expect(t, lines, "released", key, "owner="+fingerprint("owner-a"))
		tg.do(t, tg.client.B().Set().Key(key).Value("owner-b").Px(300*time.Millisecond).Build())
		expect(t, lines, "acquired", key, "owner="+fingerprint("owner-b"))
		expect(t, lines, "expired", key, "owner="+fingerprint("owner-b"))

		_ = cmd.Process.Signal(syscall.SIGINT)
		for range lines { // drain until EOF
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("watch ended with %v; stderr %q", err, stderr.String())
		}
	})
}

// readLines delivers r's lines on a channel, closed at EOF.
func readLines(r io.Reader) <-chan string {
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		s := bufio.NewScanner(r)
		for s.Scan() {
			ch <- s.Text()
		}
	}()
	return ch
}

// expect reads the next line (waiting up to patience) and checks that it is a
// timestamped event line for key that contains detail, and no token.
func expect(t *testing.T, lines <-chan string, event, key, detail string) {
	t.Helper()
	select {
	case line, ok := <-lines:
		fields := strings.Fields(line)
		if !ok || len(fields) < 3 || fields[1] != event || fields[2] != key || !strings.Contains(line, detail) {
			t.Fatalf("watch printed %q; want %s %s %s", line, event, key, detail)
		}
		if _, err := time.Parse(timeLayout, fields[0]); err != nil {
			t.Fatalf("watch line %q does not start with a timestamp: %v", line, err)
		}
		if strings.Contains(line, "owner-") {
			t.Fatalf("watch revealed a token: %q", line)
		}
	case <-time.After(patience):
		t.Fatalf("watch printed no %q line within %v", event, patience)
	}
}
