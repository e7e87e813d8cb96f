package lease

import (
	"bufio"
	"cmp"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/realserver"

	"github.com/respire-go/respire/sim"
)

// realServer drives a real redis-server for the wire tests: admin commands
// on a raw RESP2 connection and the command log read from MONITOR.
type realServer struct {
	addr, password string

	mu      sync.Mutex
	admin   *respConn
	monitor *respConn
	log     []sim.Entry
	all     []sim.Entry // never reset: checked for INFO/COMMAND at the end
	syncSeq int
	lost    error // why MONITOR stopped being read (the log is incomplete from then on)
}

// respConn is a minimal RESP2 connection (tests only).
type respConn struct {
	conn   net.Conn
	reader *bufio.Reader
}

func dialResp(addr, password string) (*respConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	rc := &respConn{conn: c, reader: bufio.NewReader(c)}
	if password != "" {
		if reply, err := rc.do("AUTH", password); err != nil || reply != "+OK\r\n" {
			c.Close()
			return nil, fmt.Errorf("AUTH: %q %v", reply, err)
		}
	}
	return rc, nil
}

func (c *respConn) send(args ...string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	_ = c.conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err := c.conn.Write([]byte(b.String()))
	return err
}

// do sends a command and returns its reply bytes (scalars and bulks only).
func (c *respConn) do(args ...string) (string, error) {
	if err := c.send(args...); err != nil {
		return "", err
	}
	line, err := c.reader.ReadString('\n')
	if err != nil || line[0] != '$' {
		return line, err
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	if n < 0 {
		return line, nil
	}
	body := make([]byte, n+2)
	_, err = ioReadFull(c.reader, body)
	return line + string(body), err
}

func ioReadFull(r *bufio.Reader, buf []byte) (int, error) {
	read := 0
	for read < len(buf) {
		n, err := r.Read(buf[read:])
		read += n
		if err != nil {
			return read, err
		}
	}
	return read, nil
}

func startRealServer(t *testing.T, addr, password string) *realServer {
	t.Helper()
	admin, err := dialResp(addr, password)
	if err != nil {
		t.Fatalf("real redis at %s: %v", addr, err)
	}
	monitor, err := dialResp(addr, password)
	if err != nil {
		t.Fatalf("real redis at %s: %v", addr, err)
	}
	if err := monitor.send("MONITOR"); err != nil {
		t.Fatal(err)
	}
	if line, err := monitor.reader.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("MONITOR: %q %v", line, err)
	}
	r := &realServer{addr: addr, password: password, admin: admin, monitor: monitor}
	for _, cmd := range [][]string{{"FLUSHALL"}, {"SCRIPT", "FLUSH"}, {"ACL", "DELUSER", "locker"}} {
		r.Exec(cmd...)
	}
	r.ResetLog()
	t.Cleanup(func() {
		r.syncMonitor()
		r.mu.Lock()
		lost := r.lost
		r.mu.Unlock()
		if lost != nil {
			t.Errorf("MONITOR stopped being read (the command log is incomplete): %v", lost)
		}
		assertNoDiscoveryCommands(t, r.all)
		admin.conn.Close()
		monitor.conn.Close()
	})
	return r
}

func (r *realServer) Addr() string { return r.addr }

// Exec runs an admin command and returns its RESP2 reply bytes.
func (r *realServer) Exec(args ...string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	reply, err := r.admin.do(args...)
	if err != nil {
		return "error: " + err.Error()
	}
	return reply
}

// SetUser creates an ACL user allowed only commands, on every key.
func (r *realServer) SetUser(name, password string, commands ...string) {
	args := []string{"ACL", "SETUSER", name, "reset", "on", ">" + password, "~*"}
	for _, c := range commands {
		args = append(args, "+"+c)
	}
	r.Exec(args...)
}

// Log returns the commands clients sent since the last ResetLog, read from
// MONITOR up to a marker (commands run inside scripts are left out).
func (r *realServer) Log() []sim.Entry {
	r.syncMonitor()
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sim.Entry(nil), r.log...)
}

// ResetLog forgets the commands seen so far.
func (r *realServer) ResetLog() {
	r.syncMonitor()
	r.mu.Lock()
	r.log = nil
	r.mu.Unlock()
}

func (r *realServer) syncMonitor() {
	r.mu.Lock()
	r.syncSeq++
	marker := fmt.Sprintf("respire-monitor-sync-%d", r.syncSeq)
	r.mu.Unlock()
	r.Exec("ECHO", marker)
	// A deadline per sync: the one send set when MONITOR was sent would
	// end every read 10 s after it (on a loaded machine, mid-test).
	_ = r.monitor.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		line, err := r.monitor.reader.ReadString('\n')
		if err != nil {
			r.mu.Lock()
			r.lost = cmp.Or(r.lost, err)
			r.mu.Unlock()
			return
		}
		args, source := parseMonitorLine(line)
		if len(args) == 2 && args[0] == "ECHO" && args[1] == marker {
			return
		}
		// Skip commands run inside scripts and the test's own admin commands.
		if len(args) == 0 || source == "lua" || source == r.admin.conn.LocalAddr().String() {
			continue
		}
		r.mu.Lock()
		entry := sim.Entry{Seq: int64(len(r.all) + 1), Args: args}
		r.log = append(r.log, entry)
		r.all = append(r.all, entry)
		r.mu.Unlock()
	}
}

// parseMonitorLine parses `+1700000000.123 [0 127.0.0.1:5000] "SET" "k"`
// into the args and the source ("127.0.0.1:5000", or "lua" inside scripts).
func parseMonitorLine(line string) (args []string, source string) {
	open, close := strings.IndexByte(line, '['), strings.IndexByte(line, ']')
	if open < 0 || close < open {
		return nil, ""
	}
	if fields := strings.Fields(line[open+1 : close]); len(fields) == 2 {
		source = fields[1]
	}
	rest := line[close+1:]
	for {
		start := strings.IndexByte(rest, '"')
		if start < 0 {
			return args, source
		}
		arg, n := unquoteRepr(rest[start+1:])
		args = append(args, arg)
		rest = rest[start+1+n:]
	}
}

// unquoteRepr decodes redis' sdscatrepr quoting up to the closing quote and
// returns the text and the bytes consumed (closing quote included).
func unquoteRepr(s string) (string, int) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return b.String(), i + 1
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'x':
				v, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
				b.WriteByte(byte(v))
				i += 2
			default:
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), len(s)
}

// lockRealServer serialises use of the shared real server across test
// binaries (see realserver.Lock).
func lockRealServer(t *testing.T, addr string) { realserver.Lock(t, addr) }
