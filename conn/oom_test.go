package conn_test

import (
	"errors"
	. "github.com/respire-go/respire/conn"
	"strings"
	"testing"

	"github.com/respire-go/respire/internal/realserver"
)

// Goal: an OOM reply (maxmemory reached under noeviction) proves the
// command did not run — a command that may grow memory is refused before
// it runs, and a script only at its first write, so before any effect — and
// a later attempt may succeed: it is a definite error matching
// ErrDidNotRun, with code OOM, for the plain commands (SET NX, SET IFEQ)
// and the scripts (a permit's and a reader's renewal, the fenced
// acquisition) alike, on a private real redis-server 7.0; and nothing
// changed.
func TestDidNotRunReplies_AnOOMReplyMatchesErrDidNotRun(t *testing.T) {
	srv := realserver.StartPrivate(t)
	srv.MustExec(t, "CONFIG", "SET", "maxmemory-policy", "noeviction")
	p := newPool(t, newClient(t, []string{srv.Addr}, "", srv.Password))
	sem, rw := mustSemaphore(t, "", "s", 2), mustRWLock(t, "", "rw")
	mustDo(t, p, AcquireOp("held", "me", 60000))
	mustDo(t, p, sem.AcquireOp("p", 60000))
	mustDo(t, p, rw.ReadAcquireOp("r", 60000))
	srv.MustExec(t, "CONFIG", "SET", "maxmemory", "1")
	for _, op := range []Op{AcquireOp("k", "me", 60000), ExtendOp("held", "me", 60000), sem.RenewOp("p", 60000),
		rw.ReadRenewOp("r", 60000), FencedAcquireOp("{f}:lease", "{f}:fence", "me", 60000)} {
		_, err := p.Do(ctxT(t), op, nil)
		var e *Error
		if !errors.As(err, &e) || e.Class != Definite || e.Code != "OOM" || !errors.Is(err, ErrDidNotRun) ||
			!strings.Contains(err.Error(), "maxmemory") {
			t.Fatalf("%s out of memory = %v; want a definite OOM matching ErrDidNotRun", op.Name(), err)
		}
	}
	srv.MustExec(t, "CONFIG", "SET", "maxmemory", "0")
	if got := srv.MustExec(t, "EXISTS", "k", "{f}:lease", "{f}:fence"); got != ":0\r\n" {
		t.Fatalf("keys written by the refused commands: EXISTS = %q; want none", got)
	}
	if !IsDidNotRunReply("OOM command not allowed when used memory > 'maxmemory'.") ||
		!IsDidNotRunReply("OOM command not allowed when used memory > 'maxmemory'. script: 26a9961e65cf906bd61cb4874dfa2b36a0105f89, on @user_script:1.") {
		t.Fatal("IsDidNotRunReply does not recognise the OOM replies")
	}
}
