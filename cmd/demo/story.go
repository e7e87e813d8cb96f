package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/wire"
	"github.com/respire-go/respire/lease"
	"github.com/respire-go/respire/sim"
)

// storyProfile is the server the story runs on: the most deployed version.
const storyProfile = sim.Redis70

// storyStage is the story's server and the clients and Locks the scenes opened
// on it (each worker of a scene has its own, as a process would).
type storyStage struct {
	srv         *sim.Server
	password    string
	clients     []*naiveClient // the naive scene's raw connections
	lockClients []*wire.Client // the Locks' clients
	locks       []*lease.Locks
}

// openStoryStage starts the story's server; the caller must call close.
func openStoryStage(ctx context.Context) (*storyStage, error) {
	password := rand.Text()
	srv, err := sim.Start(ctx, sim.Config{Profile: storyProfile, Password: password})
	if err != nil {
		return nil, err
	}
	return &storyStage{srv: srv, password: password}, nil
}

// naiveClient is one raw connection, as a naive lock uses one: commands go
// out as typed, nothing checks who holds what.
type naiveClient struct {
	client *wire.Client
	conn   conn.Conn
}

// do sends one command and returns its reply (a server error reply as an
// error).
func (c *naiveClient) do(ctx context.Context, args ...string) (conn.Reply, error) {
	replies := make([]conn.Reply, 1)
	if err := c.conn.Do(ctx, []conn.Command{{Args: args, Key: 1}}, replies); err != nil {
		return conn.Reply{}, err
	}
	if replies[0].Kind == conn.ReplyError {
		return replies[0], errors.New(replies[0].Text)
	}
	return replies[0], nil
}

// close closes the connection and its client.
func (c *naiveClient) close() {
	c.conn.Close()
	c.client.Close()
}

// client returns a new raw connection to the server, closed by close.
func (s *storyStage) client() (*naiveClient, error) {
	client := wire.New(wire.Options{Addrs: []string{s.srv.Addr()}, Password: s.password})
	c, err := client.Dial(context.Background(), s.srv.Addr())
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	nc := &naiveClient{client: client, conn: c}
	s.clients = append(s.clients, nc)
	return nc, nil
}

// newLocks returns a Locks on a client of its own, closed by close.
func (s *storyStage) newLocks() (*lease.Locks, error) {
	client := wire.New(wire.Options{Addrs: []string{s.srv.Addr()}, Password: s.password})
	s.lockClients = append(s.lockClients, client)
	locks, err := lease.New(client)
	if err != nil {
		return nil, err
	}
	s.locks = append(s.locks, locks)
	return locks, nil
}

// close closes every Locks, then every client, then the server.
func (s *storyStage) close() {
	for _, locks := range s.locks {
		locks.Close()
	}
	for _, client := range s.clients {
		client.close()
	}
	for _, client := range s.lockClients {
		client.Close()
	}
	s.srv.Close()
}

// runStory tells the story in one screen: each scene runs on the story's
// server, then prints a few lines with the figure it measured. It blocks
// until done and closes everything it opened.
func runStory(ctx context.Context, w io.Writer) error {
	p := &printer{w: w}
	p.line("respire-go: safe lease locks for Redis and Valkey, here on a simulated Redis 7.0 in this process.")
	s, err := openStoryStage(ctx)
	if err != nil {
		return err
	}
	defer s.close()
	naive, err := s.pausedNaive(ctx)
	if err != nil {
		return fmt.Errorf("paused holder, naive lock: %w", err)
	}
	safe, err := s.pausedSafe(ctx)
	if err != nil {
		return fmt.Errorf("paused holder, respire-go: %w", err)
	}
	printPaused(p, naive, safe)
	loss, err := s.lossSeen(ctx)
	if err != nil {
		return fmt.Errorf("loss seen at once: %w", err)
	}
	printLoss(p, loss)
	capped, err := s.semaphoreCaps(ctx)
	if err != nil {
		return fmt.Errorf("semaphore: %w", err)
	}
	printSemaphore(p, capped)
	takeover, err := s.electionTakeover(ctx)
	if err != nil {
		return fmt.Errorf("election: %w", err)
	}
	printElection(p, takeover)
	p.line("")
	p.line("Every figure was measured just now. Each server version's commands: make demo ARGS=-wire")
	return p.err
}

// sideBySide prints rows of two columns, the left one padded to width.
func sideBySide(p *printer, width int, rows [][2]string) {
	for _, r := range rows {
		if r[1] == "" {
			p.line("   %s", r[0])
			continue
		}
		p.line("   %-*s  %s", width, r[0], r[1])
	}
}

// dur renders a configured duration for reading: "300 ms", "4 s".
func dur(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return ms(d)
}

// ms renders a measured d in milliseconds, with one decimal below 10 ms,
// and in seconds from 1 s on.
func ms(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%d ms", d.Round(time.Millisecond)/time.Millisecond)
}

// waitDone waits for ctx to end, or fails when within passes (or the
// demo's ctx ends) first.
func waitDone(demo, ctx context.Context, within time.Duration, what string) error {
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil
	case <-t.C:
		return fmt.Errorf("%s did not happen within %v", what, within)
	case <-demo.Done():
		return fmt.Errorf("waiting for %s: %w", what, context.Cause(demo))
	}
}

// errNotOK is a naive lock command's unexpected answer.
var errNotOK = errors.New("unexpected reply")
