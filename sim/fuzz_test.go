package sim

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/respire-go/respire/internal/respseeds"
)

// FuzzReadCommand: the simulated server reads whatever a peer sends —
// requests, inline commands, replies sent the wrong way, garbage — without
// panicking and without allocating for a length or count no payload
// follows, failing only with EOF or a protocol error; and a request of
// bulk strings reads back as exactly its arguments. Seeds: the commands
// respire-go sends and real server replies.
func FuzzReadCommand(f *testing.F) {
	for _, c := range respseeds.Commands {
		f.Add([]byte(c), "SET", "k")
	}
	for _, w := range respseeds.All() {
		f.Add([]byte(w), "GET", "")
	}
	f.Add([]byte("*1048576\r\n"), "\r\n", "$-1")
	f.Add([]byte("*1\r\n$536870000\r\nab"), "", " ")
	f.Fuzz(func(t *testing.T, data []byte, a, b string) {
		r := bufio.NewReaderSize(bytes.NewReader(data), 4096)
		for range 64 {
			if _, err := readCommand(r); err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, errProtocol) {
					t.Fatalf("readCommand(%q) = %v; want EOF or a protocol error", data, err)
				}
				break
			}
		}
		req := respseeds.Encode(a, b)
		got, err := readCommand(bufio.NewReader(bytes.NewReader([]byte(req))))
		if err != nil || !slices.EqualFunc(got, [][]byte{[]byte(a), []byte(b)}, bytes.Equal) {
			t.Fatalf("readCommand(%q) = %q, %v; want [%q %q]", req, got, err, a, b)
		}
	})
}
