package lease

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

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
	run  func(*Locks) (bool, error)
}

func rawOps(t *testing.T, profile sim.Profile) []rawOp {
	ctx := ctxT(t)
	seq := wireSequences[profile]
	return []rawOp{
		{"TryTake", []string{"SET"}, func(l *Locks) (bool, error) { return l.TryTake(ctx, "k", tok("me"), time.Minute) }},
		{"ResetExpiry", seq.extendFirst, func(l *Locks) (bool, error) { return l.ResetExpiry(ctx, "k", tok("me"), time.Minute) }},
		{"OwnerToken", []string{"GET"}, func(l *Locks) (bool, error) { _, found, err := l.OwnerToken(ctx, "k"); return found, err }},
		{"Release", seq.releaseFirst, func(l *Locks) (bool, error) { return l.Release(ctx, "k", tok("me")) }},
	}
}

func TestLeastPrivilegeUserCanUseEveryRawOperation(t *testing.T) {
	for _, profile := range sim.Profiles {
		t.Run(string(profile), func(t *testing.T) {
			srv := startSim(t, sim.Config{Profile: profile})
			srv.SetUser("locker", "lockerpw", leastPrivilege[profile]...)
			locks := newLocks(t, newClient(t, []string{srv.Addr()}, "locker", "lockerpw", true))
			for _, op := range rawOps(t, profile) {
				srv.ResetLog()
				ok, err := op.run(locks)
				if !ok || err != nil {
					t.Fatalf("%s = %v, %v; want true, nil", op.name, ok, err)
				}
				if got := lockCommands(srv.Log()); !slices.Equal(got, op.want) {
					t.Fatalf("%s sent %v; want %v", op.name, got, op.want)
				}
			}
		})
	}
}

func TestMissingPermissionReturnsTheErrorWithoutTryingAnotherImplementation(t *testing.T) {
	for _, profile := range sim.Profiles {
		for _, denied := range leastPrivilege[profile] {
			t.Run(string(profile)+"/without-"+denied, func(t *testing.T) {
				srv := startSim(t, sim.Config{Profile: profile})
				allowed := slices.DeleteFunc(slices.Clone(leastPrivilege[profile]), func(c string) bool { return c == denied })
				srv.SetUser("locker", "lockerpw", allowed...)
				locks := newLocks(t, newClient(t, []string{srv.Addr()}, "locker", "lockerpw", true))
				failures := 0
				for _, op := range rawOps(t, profile) {
					srv.Exec("SET", "k", "me", "PX", "60000") // the lock exists for every step
					srv.ResetLog()
					ok, err := op.run(locks)
					got := lockCommands(srv.Log())
					if err == nil {
						if !slices.Equal(got, op.want) {
							t.Fatalf("%s sent %v; want %v", op.name, got, op.want)
						}
						continue
					}
					failures++
					assertDeniedStop(t, op, ok, err, got, denied)
				}
				if failures == 0 {
					t.Fatalf("no operation failed without %q", denied)
				}
			})
		}
	}
}

// assertDeniedStop checks a failed operation: a server error, nothing sent
// after the failing command, and NOPERM when the denied command was sent
// directly.
func assertDeniedStop(t *testing.T, op rawOp, ok bool, err error, got []string, denied string) {
	t.Helper()
	var redisErr *rueidis.RedisError
	if ok || !errors.As(err, &redisErr) {
		t.Fatalf("%s = %v, %v; want false and a server error", op.name, ok, err)
	}
	if len(got) == 0 || !slices.Equal(got, op.want[:min(len(got), len(op.want))]) {
		t.Fatalf("%s sent %v; want a prefix of %v", op.name, got, op.want)
	}
	last := got[len(got)-1]
	if strings.EqualFold(last, denied) {
		if !strings.HasPrefix(redisErr.Error(), "NOPERM") {
			t.Fatalf("%s: denied %s gave %q; want NOPERM", op.name, last, redisErr.Error())
		}
		return
	}
	if last != "EVAL" && last != "EVALSHA" {
		t.Fatalf("%s failed on %s (%v) though only %q is denied", op.name, last, err, denied)
	}
}
