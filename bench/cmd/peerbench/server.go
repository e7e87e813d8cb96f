package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// server is the redis-server the run talks to: a private one this program
// started (stop ends it and removes its directory) or the -addr one (stop
// only closes the stats client).
type server struct {
	addr, password string
	private        bool
	stats          rueidis.Client // INFO queries; never used by an implementation
	stopOnce       sync.Once
	stopFn         func()
}

// stop is idempotent and safe to call from the signal handler.
func (s *server) stop() {
	s.stopOnce.Do(s.stopFn)
}

// info returns one field of INFO section (empty when absent).
func (s *server) info(section, field string) string {
	text, err := s.stats.Do(context.Background(), s.stats.B().Info().Section(section).Build()).ToString()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// infoInt is info parsed as an integer (0 when absent).
func (s *server) infoInt(section, field string) int64 {
	n, _ := strconv.ParseInt(s.info(section, field), 10, 64)
	return n
}

// openServer connects to -addr, or starts a private redis-server.
func openServer(cfg config) (*server, error) {
	if cfg.addr != "" {
		stats, err := dialStats(cfg.addr, cfg.password, nil, 5*time.Second)
		if err != nil {
			return nil, fmt.Errorf("-addr %s: %w", cfg.addr, err)
		}
		return &server{addr: cfg.addr, password: cfg.password, stats: stats, stopFn: stats.Close}, nil
	}
	return startPrivateServer()
}

// startPrivateServer starts Debian's redis-server on a free loopback port
// with a random password, persistence off, its config given on stdin (so
// the password is not on a command line). A port taken between choosing and
// binding it is retried with another.
func startPrivateServer() (*server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server not found in PATH: install it (Debian: apt-get install -y redis-server; " +
			"`make bench` does this when missing) or pass -addr and -password of a server you own")
	}
	dir, err := os.MkdirTemp("", "peerbench-")
	if err != nil {
		return nil, err
	}
	password := randomHex(16)
	var lastErr error
	for range 3 {
		port, err := freePort()
		if err != nil {
			lastErr = err
			continue
		}
		srv, err := launch(bin, dir, port, password)
		if err == nil {
			return srv, nil
		}
		lastErr = err
	}
	os.RemoveAll(dir)
	return nil, fmt.Errorf("starting redis-server: %w", lastErr)
}

// launch starts one redis-server process and waits until it answers.
func launch(bin, dir string, port int, password string) (*server, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	conf := strings.Join([]string{
		"bind 127.0.0.1",
		"port " + strconv.Itoa(port),
		"requirepass " + password,
		`save ""`,
		"appendonly no",
		"daemonize no",
		"protected-mode yes",
		"dir " + dir,
		"logfile " + filepath.Join(dir, "redis.log"),
	}, "\n") + "\n"
	cmd := exec.Command(bin, "-")
	cmd.Stdin = strings.NewReader(conf)
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait() //nolint:errcheck // the exit is what matters
		close(exited)
	}()
	kill := func() {
		cmd.Process.Kill() //nolint:errcheck // already gone is fine
		<-exited
	}
	stats, err := dialStats(addr, password, exited, 10*time.Second)
	if err != nil {
		kill()
		log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
		return nil, fmt.Errorf("%s: %w\n%s", addr, err, tail(string(log), 800))
	}
	fmt.Fprintf(os.Stderr, "peerbench: private %s at %s\n", versionOf(stats), addr)
	return &server{addr: addr, password: password, private: true, stats: stats, stopFn: func() {
		stats.Close()
		kill()
		os.RemoveAll(dir)
	}}, nil
}

// dialStats opens the stats client, retrying until the server answers, the
// process exits (exited closes) or the budget is spent.
func dialStats(addr, password string, exited <-chan struct{}, budget time.Duration) (rueidis.Client, error) {
	deadline := time.Now().Add(budget)
	for {
		client, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{addr}, Password: password, DisableCache: true,
		})
		if err == nil {
			if err = client.Do(context.Background(), client.B().Ping().Build()).Error(); err == nil {
				return client, nil
			}
			client.Close()
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("redis-server exited: %w", err)
		default:
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(50 * time.Millisecond) // polling for readiness, not an assertion
	}
}

// versionOf is "redis 7.0.15" (or valkey's) from INFO server.
func versionOf(c rueidis.Client) string {
	text, err := c.Do(context.Background(), c.B().Info().Section("server").Build()).ToString()
	if err != nil {
		return "unknown"
	}
	name, version := "redis", ""
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, "server_name:"); ok {
			name = v
		}
		if v, ok := strings.CutPrefix(line, "valkey_version:"); ok {
			name, version = "valkey", v
		}
		if v, ok := strings.CutPrefix(line, "redis_version:"); ok && version == "" {
			version = v
		}
	}
	return name + " " + version
}

// freePort is a loopback TCP port nobody listened on a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) //nolint:errcheck // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
