package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/respire-go/respire/internal/respseeds"
)

// FuzzReadFrame: the root module's client reads whatever a server (or a
// corrupt network) sends without panicking, and without allocating for a
// length or count no payload follows; every real server reply decodes
// whole. Seeds: real server replies.
func FuzzReadFrame(f *testing.F) {
	for _, w := range respseeds.All() {
		f.Add([]byte(w))
	}
	f.Add([]byte("*16777216\r\n"))
	f.Add([]byte("$536870000\r\nab"))
	f.Add([]byte("%3\r\n|1\r\n+a\r\n+b\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReaderSize(bytes.NewReader(data), 4096)
		for range 64 {
			if _, err := readFrame(r); err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, errProtocol) {
					t.Fatalf("readFrame(%q) = %v; want EOF or a protocol error", data, err)
				}
				return
			}
		}
	})
}

// TestEveryRealServerReplyDecodes: each real server reply of the fuzz
// corpus decodes, whole, to the end of its bytes.
func TestEveryRealServerReplyDecodes(t *testing.T) {
	for _, w := range respseeds.All() {
		r := bufio.NewReader(bytes.NewReader([]byte(w)))
		for {
			if _, err := readFrame(r); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Errorf("readFrame(%q): %v", w, err)
				}
				break
			}
		}
	}
}

// TestLongBulkDecodes: a bulk string longer than the reader's buffer (read
// as its bytes arrive) decodes whole, and one cut short is an unexpected EOF.
func TestLongBulkDecodes(t *testing.T) {
	long := strings.Repeat("v", 100_000)
	r := bufio.NewReaderSize(strings.NewReader("$100000\r\n"+long+"\r\n"), 4096)
	if f, err := readFrame(r); err != nil || f.reply.Text != long {
		t.Fatalf("readFrame of a 100000-byte bulk: %d bytes, %v", len(f.reply.Text), err)
	}
	r = bufio.NewReaderSize(strings.NewReader("$100000\r\n"+long[:5000]), 4096)
	if _, err := readFrame(r); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("readFrame of a bulk cut short: %v; want io.ErrUnexpectedEOF", err)
	}
}
