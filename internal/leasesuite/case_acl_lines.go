package leasesuite

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/coordination"
	"github.com/respire-go/respire/election"
	"github.com/respire-go/respire/internal/acldoc"
	"github.com/respire-go/respire/lease"
)

// pushPermissions is what push adds to the managed locks' line
// (docs/compatibility.md, "Push").
var pushPermissions = []string{"client|tracking", "client|caching"}

// aclUse is the operations of one use of the page's ACL table, run as the
// restricted user (locks) beside an unrestricted one (admin).
type aclUse struct {
	label string // a part of the use's label on the page
	run   func(t *testing.T, ctx context.Context, locks, admin *lease.Locks, node string)
}

var aclUses = []aclUse{
	{"Locks.Holder", aclHolder},
	{"managed locks:", aclManaged},
	{"coordination", aclFenced},
	{"Locks.Semaphore", aclSemaphore},
	{"Locks.RWLock", aclRWLock},
	{"guarded writes", aclGuard},
	{sentinelUse, nil}, // on the real Sentinel set: caseLeastPrivilegeAcl_TheSentinelLineRunsItsOperations
}

// aclGuard makes one guarded write (an HSET in the lock key's slot).
func aclGuard(t *testing.T, ctx context.Context, locks, _ *lease.Locks, _ string) {
	lock, err := locks.Acquire(ctx, "{acl:guard}:lock", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(ctx) //nolint:errcheck // clean-up
	if err := lock.Guard(ctx, lease.Command("HSET", "{acl:guard}:state", "status", "sent")); err != nil {
		t.Fatalf("Lock.Guard = %v", err)
	}
}

// TestLeastPrivilegeAcl_EveryDocumentedLineRunsItsOperations: for every use
// of docs/compatibility.md's ACL table (Locks.Holder and election.Leader,
// managed locks and election.Campaign, fencing-token locks, semaphores,
// read/write locks) and for push, a user allowed exactly its server's row
// plus what the page says the use adds (with the managed locks' line where
// it says so) runs the use's operations, on every sim profile and on the
// real redis-server 7.0 (the Sentinel row's on the real Sentinel set:
// caseLeastPrivilegeAcl_TheSentinelLineRunsItsOperations). Every ACL line
// the page and the README show is one of the lines so tested.
func caseLeastPrivilegeAcl_EveryDocumentedLineRunsItsOperations(t *testing.T, tr Transport) {
	page, err := acldoc.Read("../docs/compatibility.md", "../README.md")
	if err != nil {
		t.Fatal(err)
	}
	managed, ok := page.Find("managed locks:")
	if !ok {
		t.Fatal("docs/compatibility.md has no managed locks' row")
	}
	if !slices.ContainsFunc(page.Lines, func(l string) bool { return strings.HasSuffix(l, "+"+strings.Join(pushPermissions, " +")) }) {
		t.Fatalf("docs/compatibility.md shows no line ending with push's %q", pushPermissions)
	}
	tested := map[string]bool{}
	for _, u := range page.Uses {
		if !slices.ContainsFunc(aclUses, func(a aclUse) bool { return strings.Contains(u.Label, a.label) }) {
			t.Fatalf("docs/compatibility.md documents the use %q, which this test does not run", u.Label)
		}
	}
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		row := page.Rows[string(tg.profile)]
		tested[acldoc.Line(row)] = true // the raw-token operations: caseLeastPrivilegeUserCanUseEveryRawOperation
		admin := tg.locks(t, lease.WithoutPush())
		for _, a := range aclUses {
			if a.run == nil {
				continue
			}
			u, _ := page.Find(a.label)
			lists := [][]string{u.Commands}
			if u.WithManaged {
				lists = [][]string{managed.Commands, u.Commands}
			}
			allowed := acldoc.Compose(row, lists...)
			tested[acldoc.Line(allowed)] = true
			t.Run(strings.Fields(a.label)[0], func(t *testing.T) {
				tg.srv.SetUser("locker", "lockerpw", allowed...)
				locks := newLocks(t, tr, clientOf([]string{tg.srv.Addr()}, "locker", "lockerpw", true), lease.WithoutPush())
				a.run(t, ctxT(t), locks, admin, tg.srv.Addr())
			})
		}
		allowed := acldoc.Compose(row, managed.Commands, pushPermissions)
		tested[acldoc.Line(allowed)] = true
		t.Run("push", func(t *testing.T) {
			tg.srv.SetUser("locker", "lockerpw", allowed...)
			locks := newLocks(t, tr, clientOf([]string{tg.srv.Addr()}, "locker", "lockerpw", true))
			aclPush(t, ctxT(t), locks, admin, tg.srv.Addr())
		})
	})
	sentinel, _ := sentinelLine(t, page)
	tested[acldoc.Line(sentinel)] = true // run by caseLeastPrivilegeAcl_TheSentinelLineRunsItsOperations
	for _, line := range page.Lines {
		if !tested[line] && !isPrimitiveWireLine(line) {
			t.Errorf("documented ACL line %q is none of the lines this test ran", line)
		}
	}
}

// isPrimitiveWireLine recognises the wire-format section's line of the
// semaphore's and read/write lock's scripts, which conn's
// TestLeastPrivilegeAcl_SemaphoreAndReadWriteLock runs command by command.
func isPrimitiveWireLine(line string) bool {
	return strings.HasPrefix(line, "ACL SETUSER locker on >pw ~* +evalsha +eval +time ")
}

func aclHolder(t *testing.T, ctx context.Context, locks, admin *lease.Locks, _ string) {
	held, err := admin.Acquire(ctx, "acl:held", time.Minute, lease.WithOwner("admin"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx) //nolint:errcheck // clean-up
	if h, found, err := locks.Holder(ctx, "acl:held"); err != nil || !found || h.Label != "admin" {
		t.Fatalf("Locks.Holder = %+v, %v, %v; want the admin's label", h, found, err)
	}
	leader, err := election.New(admin, "acl:election", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Campaign(ctx, "leader-1"); err != nil {
		t.Fatal(err)
	}
	defer leader.Resign(ctx) //nolint:errcheck // clean-up
	observer, err := election.New(locks, "acl:election", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := observer.Leader(ctx); err != nil || got != "leader-1" {
		t.Fatalf("election.Leader = %q, %v; want leader-1", got, err)
	}
}

func aclManaged(t *testing.T, ctx context.Context, locks, _ *lease.Locks, _ string) {
	lock, err := locks.Acquire(ctx, "acl:managed", time.Minute, lease.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := lock.ResetExpiry(ctx, 2*time.Minute); !ok || err != nil {
		t.Fatalf("ResetExpiry = %v, %v", ok, err)
	}
	if out, err := lock.Release(ctx); out != lease.Released || err != nil {
		t.Fatalf("Release = %v, %v", out, err)
	}
	if err := locks.Do(ctx, "acl:managed", time.Minute, func(context.Context) error { return nil }); err != nil {
		t.Fatalf("Do = %v", err)
	}
	e, err := election.New(locks, "acl:campaign", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Campaign(ctx, "me"); err != nil {
		t.Fatalf("Campaign = %v", err)
	}
	if err := e.Resign(ctx); err != nil {
		t.Fatalf("Resign = %v", err)
	}
}

func aclFenced(t *testing.T, ctx context.Context, locks, _ *lease.Locks, _ string) {
	c, err := coordination.New(locks)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := c.Acquire(ctx, "{acl}:lease", "{acl}:fence", time.Minute, lease.WithKeepAlive())
	if err != nil {
		t.Fatalf("fenced Acquire = %v", err)
	}
	if ok, err := lock.ResetExpiry(ctx, 2*time.Minute); !ok || err != nil {
		t.Fatalf("ResetExpiry = %v, %v", ok, err)
	}
	if out, err := lock.Release(ctx); out != lease.Released || err != nil {
		t.Fatalf("Release = %v, %v", out, err)
	}
}

func aclSemaphore(t *testing.T, ctx context.Context, locks, _ *lease.Locks, _ string) {
	sem := locks.Semaphore("acl", 2)
	permit, err := sem.Acquire(ctx, time.Minute, lease.WithKeepAlive())
	if err != nil {
		t.Fatalf("Semaphore.Acquire = %v", err)
	}
	if ok, err := permit.ResetExpiry(ctx, 2*time.Minute); !ok || err != nil {
		t.Fatalf("ResetExpiry = %v, %v", ok, err)
	}
	if n, err := sem.Holders(ctx); n != 1 || err != nil {
		t.Fatalf("Holders = %d, %v", n, err)
	}
	if out, err := permit.Release(ctx); out != lease.Released || err != nil {
		t.Fatalf("Release = %v, %v", out, err)
	}
}

func aclRWLock(t *testing.T, ctx context.Context, locks, _ *lease.Locks, _ string) {
	rw := locks.RWLock("acl")
	reader, err := rw.RLock(ctx, time.Minute, lease.WithKeepAlive())
	if err != nil {
		t.Fatalf("RLock = %v", err)
	}
	if ok, err := reader.ResetExpiry(ctx, 2*time.Minute); !ok || err != nil {
		t.Fatalf("the reader's ResetExpiry = %v, %v", ok, err)
	}
	if n, err := rw.Readers(ctx); n != 1 || err != nil {
		t.Fatalf("Readers = %d, %v", n, err)
	}
	if att, err := rw.TryLock(ctx, time.Minute); att.Acquired() || err != nil { // sets its marker, then deletes it
		t.Fatalf("TryLock beside a reader = %v, %v; want not acquired", att.Acquired(), err)
	}
	if out, err := reader.Release(ctx); out != lease.Released || err != nil {
		t.Fatalf("the reader's Release = %v, %v", out, err)
	}
	// The given-up try's marker is deleted in the background: wait for it.
	writer, err := rw.Lock(ctx, time.Minute, lease.WithKeepAlive(), lease.WithWait(5*time.Second))
	if err != nil {
		t.Fatalf("Lock = %v", err)
	}
	if ok, err := writer.ResetExpiry(ctx, 2*time.Minute); !ok || err != nil {
		t.Fatalf("the writer's ResetExpiry = %v, %v", ok, err)
	}
	if out, err := writer.Release(ctx); out != lease.Released || err != nil {
		t.Fatalf("the writer's Release = %v, %v", out, err)
	}
}

// aclPush: a waiting acquisition that polls only once a minute is woken by
// the holder's release (push), and the node never refused tracking.
func aclPush(t *testing.T, ctx context.Context, locks, admin *lease.Locks, node string) {
	held, err := admin.Acquire(ctx, "acl:push", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan acquired, 1)
	go func() {
		lock, err := locks.Acquire(ctx, "acl:push", time.Minute, lease.WithWaitUntilDone(), lease.WithRetryEvery(time.Minute))
		got <- acquired{lock: lock, err: err}
	}()
	eventually(t, "the waiter parked", func() bool { return parkedWaiters(locks, "acl:push") == 1 })
	if _, err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiting Acquire = %v", r.err)
	}
	if out, err := r.lock.Release(ctx); out != lease.Released || err != nil {
		t.Fatalf("Release = %v, %v", out, err)
	}
	if trackingRefused(t, locks, node) {
		t.Fatal("the node refused tracking to a user with push's permissions")
	}
}

func init() {
	register(Case{"LeastPrivilegeAcl_EveryDocumentedLineRunsItsOperations", caseLeastPrivilegeAcl_EveryDocumentedLineRunsItsOperations})
}
