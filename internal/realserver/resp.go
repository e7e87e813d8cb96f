package realserver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// RespConn is a minimal RESP2 connection for tests: admin commands whose
// replies are scalars or bulks, and the MONITOR stream.
type RespConn struct {
	Conn   net.Conn
	Reader *bufio.Reader
}

// Dial connects to addr and authenticates with password ("" for none).
func Dial(addr, password string) (*RespConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	rc := &RespConn{Conn: c, Reader: bufio.NewReader(c)}
	if password != "" {
		if reply, err := rc.Do("AUTH", password); err != nil || reply != "+OK\r\n" {
			c.Close()
			return nil, fmt.Errorf("AUTH: %q %v", reply, err)
		}
	}
	return rc, nil
}

// Send writes one command (within 10s).
func (c *RespConn) Send(args ...string) error {
	_ = c.Conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Conn.Write([]byte(encode(args...)))
	return err
}

// Do sends a command and returns its reply bytes (scalars and bulks only).
func (c *RespConn) Do(args ...string) (string, error) {
	if err := c.Send(args...); err != nil {
		return "", err
	}
	line, err := c.Reader.ReadString('\n')
	if err != nil || line[0] != '$' {
		return line, err
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	if n < 0 {
		return line, nil
	}
	body := make([]byte, n+2)
	_, err = io.ReadFull(c.Reader, body)
	return line + string(body), err
}

// Close closes the connection.
func (c *RespConn) Close() error { return c.Conn.Close() }
