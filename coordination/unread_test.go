package coordination

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// unreadByServer is the largest number of bytes that reached one of
// node's accepted sockets and that the server has not read (the kernel's
// receive queue, from /proc/net/tcp): with the server stopped (SIGSTOP),
// bytes there prove that a command was written to the socket, so its
// outcome can only be unknown, never "not sent".
func unreadByServer(t *testing.T, node realNode) int {
	t.Helper()
	_, portText, err := net.SplitHostPort(node.addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.ParseUint(portText, 10, 16)
	most := 0
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		most = max(most, mostUnread(t, table, fmt.Sprintf(":%04X", port)))
	}
	return most
}

// mostUnread scans one /proc/net/tcp table for established sockets whose
// local address ends in portSuffix and returns the largest rx_queue.
func mostUnread(t *testing.T, table, portSuffix string) int {
	t.Helper()
	f, err := os.Open(table)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	most := 0
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		// sl local_address rem_address st tx_queue:rx_queue ...
		if len(fields) < 5 || !strings.HasSuffix(fields[1], portSuffix) || fields[3] != "01" {
			continue
		}
		_, rx, ok := strings.Cut(fields[4], ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(rx, 16, 64)
		if err == nil {
			most = max(most, int(n))
		}
	}
	return most
}
