package chaos

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/wire"
	"github.com/respire-go/respire/lease"
)

// wireExec is one read/write lock acquisition script as a process's client
// saw it: when its pipeline was handed to the connection (no earlier than
// it ran on the server) and when its reply was read (no later), with the
// reply as RESP text (":2\r\n"). On a real server, whose executions are
// not recorded, these bound when the script ran, whatever the scheduler
// did between.
type wireExec struct {
	sent, answered time.Time
	args           []string
	reply          string
}

// wireLog collects the wireExecs of a schedule's processes. It is safe for
// concurrent use.
type wireLog struct {
	mu    sync.Mutex
	execs []wireExec
}

// all returns the recorded executions, by reply time.
func (w *wireLog) all() []wireExec {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]wireExec(nil), w.execs...)
}

// recorded reports whether cmd is one the checks read: a read or write
// acquisition script.
func recorded(args []string) bool {
	if len(args) < 2 {
		return false
	}
	switch strings.ToUpper(args[0]) {
	case "EVALSHA":
		return args[1] == conn.WriteAcquireScriptSHA || args[1] == conn.ReadAcquireScriptSHA
	case "EVAL":
		return args[1] == conn.WriteAcquireScript || args[1] == conn.ReadAcquireScript
	}
	return false
}

// wireLocksLogged is the Wire transport with every acquisition script of
// the read/write lock logged into log (for a real server).
func wireLocksLogged(log *wireLog) func(addr, password string, dial Dial, opts ...lease.Option) (*lease.Locks, func(), error) {
	return func(addr, password string, dial Dial, opts ...lease.Option) (*lease.Locks, func(), error) {
		client := wire.New(wire.Options{Addrs: []string{addr}, Password: password,
			Dial: func(ctx context.Context, dst string) (net.Conn, error) { return dial(ctx, dst) }})
		locks, err := lease.New(loggingClient{Client: client, log: log}, opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("lease.New: %w", err)
		}
		return locks, client.Close, nil
	}
}

// loggingClient is a conn.Client whose connections log into log.
type loggingClient struct {
	conn.Client
	log *wireLog
}

func (c loggingClient) Dial(ctx context.Context, node string) (conn.Conn, error) {
	cn, err := c.Client.Dial(ctx, node)
	if err != nil {
		return nil, err
	}
	return loggingConn{Conn: cn, log: c.log}, nil
}

// loggingConn is a conn.Conn that logs the acquisition scripts of its
// pipelines.
type loggingConn struct {
	conn.Conn
	log *wireLog
}

func (c loggingConn) Do(ctx context.Context, cmds []conn.Command, replies []conn.Reply) error {
	sent := time.Now()
	err := c.Conn.Do(ctx, cmds, replies)
	answered := time.Now()
	for i, cmd := range cmds {
		if !recorded(cmd.Args) || replies[i].Kind == 0 {
			continue
		}
		e := wireExec{sent: sent, answered: answered, args: append([]string(nil), cmd.Args...), reply: respText(replies[i])}
		c.log.mu.Lock()
		c.log.execs = append(c.log.execs, e)
		c.log.mu.Unlock()
	}
	return err
}

// respText renders the replies the checks compare: integers as ":n\r\n",
// anything else by its kind.
func respText(r conn.Reply) string {
	if r.Kind == conn.ReplyInt {
		return ":" + strconv.FormatInt(r.Int, 10) + "\r\n"
	}
	return "-" + r.Text + "\r\n"
}
