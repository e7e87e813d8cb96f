package leasesuite

import (
	"github.com/respire-go/respire/lease"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// leastPrivilege is the ACL command list each server needs for the raw-token
// API (docs/compatibility.md shows the same lines).
var leastPrivilege = map[sim.Profile][]string{
	sim.Redis70:  {"set", "get", "evalsha", "eval", "del", "pexpire"},
	sim.Redis84:  {"set", "get", "delex"},
	sim.Valkey81: {"set", "get", "evalsha", "eval", "del"},
	sim.Valkey90: {"set", "get", "delifeq"},
}

// rawOp is one raw-token call and the lock commands it sends with full
// permissions on a fresh server.
type rawOp struct {
	name string
	want []string
	run  func(*lease.Locks) (bool, error)
}

func rawOps(t *testing.T, profile sim.Profile) []rawOp {
	ctx := ctxT(t)
	seq := wireSequences[profile]
	return []rawOp{
		{"TryTake", []string{"SET"}, func(l *lease.Locks) (bool, error) { return l.TryTake(ctx, "k", tok("me"), time.Minute) }},
		{"ResetExpiry", seq.extendFirst, func(l *lease.Locks) (bool, error) { return l.ResetExpiry(ctx, "k", tok("me"), time.Minute) }},
		{"OwnerToken", []string{"GET"}, func(l *lease.Locks) (bool, error) { _, found, err := l.OwnerToken(ctx, "k"); return found, err }},
		{"Release", seq.releaseFirst, func(l *lease.Locks) (bool, error) { return l.Release(ctx, "k", tok("me")) }},
	}
}

func caseLeastPrivilegeUserCanUseEveryRawOperation(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		srv := tg.srv
		srv.SetUser("locker", "lockerpw", leastPrivilege[tg.profile]...)
		locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "locker", "lockerpw", true))
		for _, op := range rawOps(t, tg.profile) {
			srv.ResetLog()
			ok, err := op.run(locks)
			if !ok || err != nil {
				t.Fatalf("%s = %v, %v; want true, nil", op.name, ok, err)
			}
			if got := lockCommands(srv.Log()); !slices.Equal(got, tg.visible(op.want)) {
				t.Fatalf("%s sent %v; want %v", op.name, got, op.want)
			}
		}
	})
}

func caseMissingPermissionReturnsTheErrorWithoutTryingAnotherImplementation(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		for _, denied := range leastPrivilege[tg.profile] {
			t.Run("without-"+denied, func(t *testing.T) {
				srv := tg.srv
				allowed := slices.DeleteFunc(slices.Clone(leastPrivilege[tg.profile]), func(c string) bool { return c == denied })
				srv.SetUser("locker", "lockerpw", allowed...)
				srv.Exec("SCRIPT", "FLUSH")
				locks := newLocks(t, tr, clientOf([]string{srv.Addr()}, "locker", "lockerpw", true))
				failures := 0
				for _, op := range rawOps(t, tg.profile) {
					srv.Exec("SET", "k", "me", "PX", "60000") // the lock exists for every step
					srv.ResetLog()
					ok, err := op.run(locks)
					got := lockCommands(srv.Log())
					if err == nil {
						if !slices.Equal(got, tg.visible(op.want)) {
							t.Fatalf("%s sent %v; want %v", op.name, got, op.want)
						}
						continue
					}
					failures++
					assertDeniedStop(t, tg, op, ok, err, got, denied)
				}
				if failures == 0 {
					t.Fatalf("no operation failed without %q", denied)
				}
			})
		}
	})
}

// assertDeniedStop checks a failed operation: a server error, NOPERM and
// nothing sent after the denied command when it is one of the operation's
// own commands, and otherwise (a command inside a script) a script error on
// EVALSHA/EVAL with nothing sent after it.
func assertDeniedStop(t *testing.T, tg *target, op rawOp, ok bool, err error, got []string, denied string) {
	t.Helper()
	reply, isReply := tg.tr.ServerError(err)
	if ok || !isReply {
		t.Fatalf("%s = %v, %v; want false and a server error", op.name, ok, err)
	}
	if idx := slices.IndexFunc(op.want, func(c string) bool { return strings.EqualFold(c, denied) }); idx >= 0 {
		want := op.want[:idx+1]
		if tg.real {
			want = tg.visible(op.want[:idx]) // MONITOR does not show commands refused by ACL
		}
		if !slices.Equal(got, want) || !strings.HasPrefix(reply, "NOPERM") {
			t.Fatalf("%s without %s: sent %v, err %q; want %v and NOPERM", op.name, denied, got, reply, want)
		}
		return
	}
	visible := tg.visible(op.want)
	if len(got) == 0 || !slices.Equal(got, visible[:min(len(got), len(visible))]) {
		t.Fatalf("%s sent %v; want a prefix of %v", op.name, got, visible)
	}
	if last := got[len(got)-1]; last != "EVAL" && last != "EVALSHA" {
		t.Fatalf("%s failed on %s (%v) though only %q (used by scripts) is denied", op.name, last, err, denied)
	}
}

func init() {
	register(
		Case{"LeastPrivilegeUserCanUseEveryRawOperation", caseLeastPrivilegeUserCanUseEveryRawOperation},
		Case{"MissingPermissionReturnsTheErrorWithoutTryingAnotherImplementation", caseMissingPermissionReturnsTheErrorWithoutTryingAnotherImplementation},
	)
}
