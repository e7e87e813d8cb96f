package conn_test

import (
	"context"
	. "github.com/respire-go/respire/conn"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/respire-go/respire/sim"
)

// primitiveACL is the least-privilege command list of the semaphore and
// read/write-lock operations (docs/compatibility.md): the scripts' commands,
// plus the release the writer's mutex commands need on each server.
var primitiveACL = []string{"evalsha", "eval", "time", "get", "set", "del", "pttl", "pexpire",
	"zadd", "zrem", "zremrangebyscore", "zcard", "zcount", "zscore"}

var primitiveACLExtra = map[sim.Profile][]string{sim.Redis84: {"delex"}, sim.Valkey90: {"delifeq"}}

// Goal: a user allowed exactly the documented commands runs every
// semaphore and read/write-lock operation, on every profile and on a real
// redis 7.0; on the simulator, without any one of them some operation is
// refused.
func TestLeastPrivilegeAcl_SemaphoreAndReadWriteLock(t *testing.T) {
	for _, p := range sim.Profiles {
		t.Run(string(p), func(t *testing.T) {
			allowed := append(slices.Clone(primitiveACL), primitiveACLExtra[p]...)
			srv := startSim(t, p)
			srv.SetUser("locker", "lockerpw", allowed...)
			exerciseOneSlot(t, newPool(t, newClient(t, []string{srv.Addr()}, "locker", "lockerpw")), "", "acl")
			for _, denied := range allowed {
				srv.SetUser("locker", "lockerpw", slices.DeleteFunc(slices.Clone(allowed), func(c string) bool { return c == denied })...)
				srv.Exec("FLUSHALL")
				srv.Exec("SCRIPT", "FLUSH")
				if deniedSomewhere(t, newPool(t, newClient(t, []string{srv.Addr()}, "locker", "lockerpw"))) == "" {
					t.Errorf("without +%s every operation still succeeded: it need not be listed", denied)
				}
			}
		})
	}
	addr := os.Getenv("RESPIRE_REAL_REDIS70")
	if addr == "" {
		return
	}
	t.Run("real-redis-7.0", func(t *testing.T) {
		lockRealServer(t, addr)
		admin := newOutsider(t, []string{addr}, "", os.Getenv("RESPIRE_REAL_REDIS70_PASSWORD"))
		rules := []string{"ACL", "SETUSER", "respire-prim", "reset", "on", ">pw", "~*"}
		for _, c := range primitiveACL {
			rules = append(rules, "+"+c)
		}
		if err := admin.Do(ctxT(t), admin.B().Arbitrary(rules...).Build()).Error(); err != nil {
			t.Fatalf("ACL SETUSER: %v", err)
		}
		t.Cleanup(func() { admin.Do(context.Background(), admin.B().Arbitrary("ACL", "DELUSER", "respire-prim").Build()) })
		prefix := "conn-prim-acl:"
		t.Cleanup(func() { deletePrefixed(t, admin, prefix) })
		exerciseOneSlot(t, newPool(t, newClient(t, []string{addr}, "respire-prim", "pw")), prefix, "acl")
	})
}

// deniedSomewhere runs the operations of exerciseOneSlot and returns the
// first error (a permission denial), or "" when all succeed.
func deniedSomewhere(t *testing.T, p *Pool) string {
	sem, l := mustSemaphore(t, "", "acl", 2), mustRWLock(t, "", "acl")
	for _, op := range []Op{sem.AcquireOp("a", 60000), sem.RenewOp("a", 60000), sem.LeaseOp("a"), sem.HoldersOp(),
		sem.ReleaseOp("a"), l.ReadAcquireOp("r", 60000), l.WriteAcquireOp("w", 60000, 5000), l.ReadReleaseOp("r"),
		l.WriteAcquireOp("w", 60000, 5000), l.WriteRenewOp("w", 60000), l.WriteReleaseOp("w")} {
		if _, err := p.Do(ctxT(t), op, nil); err != nil {
			if !strings.Contains(err.Error(), "permission") && !strings.Contains(err.Error(), "can't run") &&
				!strings.Contains(err.Error(), "NOPERM") {
				t.Errorf("%s failed with %v; want a permission denial", op.Name(), err)
			}
			return err.Error()
		}
	}
	return ""
}

// Goal: the compatibility page shows the scripts' current digests and the
// ACL line the test above proves.
func TestScriptsAreFixed_CompatibilityPageShowsThePrimitiveScripts(t *testing.T) {
	doc, err := os.ReadFile("../docs/compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	page := strings.Join(strings.Fields(string(doc)), " ")
	for _, sha := range []string{SemaphoreAcquireScriptSHA, HolderRenewScriptSHA, HolderReleaseScriptSHA,
		HolderLeaseScriptSHA, HolderCountScriptSHA, ReadAcquireScriptSHA, WriteAcquireScriptSHA} {
		if !strings.Contains(page, "`"+sha+"`") {
			t.Errorf("docs/compatibility.md does not show the digest %s", sha)
		}
	}
	line := "ACL SETUSER locker on >pw ~*"
	for _, c := range primitiveACL {
		line += " +" + c
	}
	if !strings.Contains(page, line) {
		t.Errorf("docs/compatibility.md does not show the ACL line %q", line)
	}
}
