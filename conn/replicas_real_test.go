package conn_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/realserver"
	"github.com/respire-go/respire/internal/wire"
)

// TestSentinelAcquisitionsNeedReplicaAcks_AnAcquisitionNoReplicaAcknowledgedIsUnconfirmed:
// on the real Sentinel set, an engine's acquisitions (SET NX PX, a
// semaphore's permit) answered by the primary while its replica
// acknowledges them are confirmed; with the replica stopped (SIGSTOP: as a
// replica Sentinel promotes stops taking the old primary's writes) the
// primary still answers OK, the key is there, but the Result says
// Unconfirmed: a promoted replica would lack it. A refusal is never
// Unconfirmed (nothing to confirm).
func TestSentinelAcquisitionsNeedReplicaAcks_AnAcquisitionNoReplicaAcknowledgedIsUnconfirmed(t *testing.T) {
	list := os.Getenv("RESPIRE_REAL_SENTINEL70")
	if list == "" {
		t.Skip("RESPIRE_REAL_SENTINEL70 not set: no real Sentinel setup (the Makefile starts one)")
	}
	realserver.Lock(t, list)
	password := os.Getenv("RESPIRE_REAL_SENTINEL70_PASSWORD")
	client := wire.New(wire.Options{Addrs: strings.Split(list, ","), MasterName: os.Getenv("RESPIRE_REAL_SENTINEL70_MASTER"),
		Password: password, SentinelPassword: password})
	t.Cleanup(client.CloseSentinel)
	p := newPool(t, client)
	ctx := ctxT(t)
	prefix := "acq-acks:" + strconv.FormatInt(time.Now().UnixNano(), 10) + ":"
	var primary, replica string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		res, err := p.Acquire(ctx, prefix+"warm", "tok", 60000)
		if err != nil || !res.Owned {
			t.Fatalf("Acquire = %+v, %v", res, err)
		}
		primary, replica = res.Session.Node(), sentinelReplica(t, res.Session.Node())
		_, _ = p.Release(ctx, prefix+"warm", "tok")
		if res.Unconfirmed == nil {
			break // the replica is online and acknowledged it
		}
		if time.Now().After(deadline) {
			t.Fatalf("no acquisition confirmed in 30 s: is the replica %s online?", replica)
		}
	}
	sem := SemaphoreOfHolders("{"+prefix+"sem}:sem", 2)
	if res, err := p.Do(ctx, sem.AcquireOp("tok", 60000), nil); err != nil || !res.Owned || res.Unconfirmed != nil {
		t.Fatalf("a permit with the replica online = %+v, %v; want owned and confirmed", res, err)
	}
	resume := stopNode(t, replica, password)
	defer resume()
	res, err := p.Acquire(ctx, prefix+"k", "tok", 60000)
	if err != nil || !res.Owned || res.Unconfirmed == nil {
		t.Fatalf("SET NX answered by %s with its replica stopped = %+v, %v; want owned and Unconfirmed", primary, res, err)
	}
	if got := adminDo(t, primary, password, "GET", prefix+"k"); !strings.Contains(got, "tok") {
		t.Fatalf("the primary's key = %q: the SET did not run there", got)
	}
	if res, err := p.Do(ctx, sem.AcquireOp("tok2", 60000), nil); err != nil || !res.Owned || res.Unconfirmed == nil {
		t.Fatalf("a permit with the replica stopped = %+v, %v; want owned and Unconfirmed", res, err)
	}
	// A renewal sent through Engine.Do (not only a Session's) is no
	// confirmation either (rule SentinelRenewalsNeedReplicaAcks).
	if res, err := p.Do(ctx, ExtendOp(prefix+"k", "tok", 60000), nil); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("a renewal through Engine.Do with the replica stopped = %+v, %v; want ErrNotReplicated", res, err)
	}
	if res, err := p.Acquire(ctx, prefix+"k", "other", 60000); err != nil || res.Owned || res.Unconfirmed != nil {
		t.Fatalf("a refused SET NX = %+v, %v; want refused, not Unconfirmed", res, err)
	}
	resume()
	_, _ = p.Release(ctx, prefix+"k", "tok")
}

// sentinelReplica returns the data node of the Sentinel set other than
// primary (scripts/with-servers.sh's RESPIRE_REAL_SENTINEL70_DIR).
func sentinelReplica(t *testing.T, primary string) string {
	t.Helper()
	dir := os.Getenv("RESPIRE_REAL_SENTINEL70_DIR")
	for _, node := range []string{"primary", "replica"} {
		port, _ := os.ReadFile(filepath.Join(dir, node, "port"))
		if addr := "127.0.0.1:" + strings.TrimSpace(string(port)); addr != primary {
			return addr
		}
	}
	t.Fatalf("no data node other than %s in %s", primary, dir)
	return ""
}

// stopNode stops the data node at addr (SIGSTOP) and returns its resume
// (SIGCONT, idempotent), also run when the test ends.
func stopNode(t *testing.T, addr, password string) func() {
	t.Helper()
	pid := 0
	for _, line := range strings.Split(adminDo(t, addr, password, "INFO", "server"), "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if pid == 0 {
		t.Fatalf("no process_id in %s's INFO server", addr)
	}
	resume := func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
	t.Cleanup(resume)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP %s: %v", addr, err)
	}
	return resume
}

// adminDo runs one command on a raw connection to addr.
func adminDo(t *testing.T, addr, password string, args ...string) string {
	t.Helper()
	c, err := realserver.Dial(addr, password)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Conn.Close()
	reply, err := c.Do(args...)
	if err != nil {
		t.Fatalf("%v on %s: %v", args, addr, err)
	}
	return reply
}
