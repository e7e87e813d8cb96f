package leasesuite

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/sim"
)

// Monitored drives a real redis-server for the wire tests: admin commands on
// a raw RESP2 connection, and the command log read from MONITOR (in the
// shape of a sim node's log, sim.Entry). Its methods are safe for
// concurrent use.
type Monitored struct {
	addr, password string

	mu      sync.Mutex
	admin   *realserver.RespConn
	monitor *realserver.RespConn
	log     []sim.Entry
	all     []sim.Entry // never reset: handed to the check at the end
	syncSeq int
	lost    error // why MONITOR stopped being read (the log is incomplete from then on)
}

// StartMonitored connects to the server at addr, starts MONITOR, and clears
// the server (FLUSHALL, SCRIPT FLUSH, ACL DELUSER locker). When the test
// ends, check (when not nil) is given every command the clients sent, then
// the connections close.
func StartMonitored(t testing.TB, addr, password string, check func(testing.TB, []sim.Entry)) *Monitored {
	t.Helper()
	admin, err := realserver.Dial(addr, password)
	if err != nil {
		t.Fatalf("real redis at %s: %v", addr, err)
	}
	monitor, err := realserver.Dial(addr, password)
	if err != nil {
		t.Fatalf("real redis at %s: %v", addr, err)
	}
	if err := monitor.Send("MONITOR"); err != nil {
		t.Fatal(err)
	}
	if line, err := monitor.Reader.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("MONITOR: %q %v", line, err)
	}
	r := &Monitored{addr: addr, password: password, admin: admin, monitor: monitor}
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
		if check != nil {
			check(t, r.all)
		}
		admin.Close()
		monitor.Close()
	})
	return r
}

// Addr returns the server's address.
func (r *Monitored) Addr() string { return r.addr }

// Exec runs an admin command and returns its RESP2 reply bytes.
func (r *Monitored) Exec(args ...string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	reply, err := r.admin.Do(args...)
	if err != nil {
		return "error: " + err.Error()
	}
	return reply
}

// SetUser creates an ACL user allowed only commands, on every key.
func (r *Monitored) SetUser(name, password string, commands ...string) {
	args := []string{"ACL", "SETUSER", name, "reset", "on", ">" + password, "~*"}
	for _, c := range commands {
		args = append(args, "+"+c)
	}
	r.Exec(args...)
}

// Log returns the commands clients sent since the last ResetLog, read from
// MONITOR up to a marker (commands run inside scripts are left out).
func (r *Monitored) Log() []sim.Entry {
	r.syncMonitor()
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sim.Entry(nil), r.log...)
}

// ResetLog forgets the commands seen so far.
func (r *Monitored) ResetLog() {
	r.syncMonitor()
	r.mu.Lock()
	r.log = nil
	r.mu.Unlock()
}

func (r *Monitored) syncMonitor() {
	r.mu.Lock()
	r.syncSeq++
	marker := fmt.Sprintf("respire-monitor-sync-%d", r.syncSeq)
	r.mu.Unlock()
	r.Exec("ECHO", marker)
	// A deadline per sync: the one Send set when MONITOR was sent would
	// end every read 10 s after it (on a loaded machine, mid-test).
	_ = r.monitor.Conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		line, err := r.monitor.Reader.ReadString('\n')
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
		if len(args) == 0 || source == "lua" || source == r.admin.Conn.LocalAddr().String() {
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
