// Package realserver holds what tests share about the private real
// redis-servers that scripts/with-servers.sh starts for `make test`.
package realserver

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Lock serialises use of the real server at addr across test binaries (go
// test runs packages in parallel, and some tests FLUSHALL or create ACL
// users): it takes an exclusive flock on a file named after the address and
// holds it until the test ends. It blocks until the lock is free.
func Lock(t testing.TB, addr string) {
	t.Helper()
	name := filepath.Join(os.TempDir(), "respire-real-"+strings.NewReplacer(":", "_", "/", "_").Replace(addr)+".lock")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("lock file: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("flock: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	})
}
