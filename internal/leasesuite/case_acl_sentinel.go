package leasesuite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/acldoc"
	"github.com/respire-go/respire/lease"
)

// sentinelUse is the label part of the Sentinel row of docs/compatibility.md's
// ACL table.
const sentinelUse = "a Sentinel client"

// sentinelLine returns the commands of the page's Sentinel line on Redis
// 7.0 (the row, the managed locks' line, the Sentinel row's) and the
// Sentinel row's own.
func sentinelLine(t *testing.T, page acldoc.Page) (line, own []string) {
	t.Helper()
	managed, ok := page.Find("managed locks:")
	sentinel, ok2 := page.Find(sentinelUse)
	if !ok || !ok2 || !sentinel.WithManaged {
		t.Fatalf("docs/compatibility.md has no managed locks' row, or no Sentinel row %q with the managed locks' line", sentinelUse)
	}
	return acldoc.Compose(page.Rows["redis-7.0"], managed.Commands, sentinel.Commands), sentinel.Commands
}

// TestLeastPrivilegeAcl_TheSentinelLineRunsItsOperations: on the real
// Sentinel set (Redis 7.0), a user with exactly the page's Sentinel line
// (the server's row, the managed locks' line and the Sentinel row's
// +role +wait +info), set on every data node, makes a Sentinel client of
// the transport, takes a managed lock with keep-alive (with a wait: after
// a failover the resyncing replica acknowledges nothing for seconds, rule
// SentinelAcquisitionsNeedReplicaAcks), resets its expiry (a renewal the replica acknowledged: true)
// and releases it. Each of the Sentinel row's commands is needed: with the
// line without it, the client cannot be made (rueidis and valkey-go check
// the primary with ROLE), or the acquisition or the reset is not
// confirmed.
func caseLeastPrivilegeAcl_TheSentinelLineRunsItsOperations(t *testing.T, tr Transport) {
	page, err := acldoc.Read("../docs/compatibility.md", "../README.md")
	if err != nil {
		t.Fatal(err)
	}
	line, own := sentinelLine(t, page)
	if !slices.Contains(page.Lines, acldoc.Line(line)) {
		t.Fatalf("docs/compatibility.md does not show the Sentinel line %q", acldoc.Line(line))
	}
	sentinels, master, password := realSentinel(t)
	primary := primaryOf(t, newSentinelClient(t, sentinels, master, password))
	replica := otherDataNode(t, primary)
	awaitReplicaHealthy(t, sentinels, master, password, primary, replica) // the acquisition and the reset wait for it
	user := fmt.Sprintf("locker-%d", time.Now().UnixNano())
	setUser := func(commands []string) {
		args := []string{"ACL", "SETUSER", user, "reset", "on", ">lockerpw", "~*"}
		for _, c := range commands {
			args = append(args, "+"+c)
		}
		for _, node := range []string{primary, replica} { // every node Sentinel may promote
			if got := adminExec(node, password, args...); got != "+OK\r\n" {
				t.Fatalf("ACL SETUSER on %s = %q", node, got)
			}
		}
	}
	t.Cleanup(func() {
		for _, node := range []string{primary, replica} {
			adminExec(node, password, "ACL", "DELUSER", user)
		}
	})
	setUser(line)
	if err := sentinelACLOperations(t, tr, sentinels, master, user, password, sentinelAcquireWait); err != nil {
		t.Fatalf("%s: with the documented Sentinel line %q: %v", tr.Name, acldoc.Line(line), err)
	}
	for _, c := range own {
		without := slices.DeleteFunc(slices.Clone(line), func(l string) bool { return l == c })
		setUser(without)
		err := sentinelACLOperations(t, tr, sentinels, master, user, password, 0) // each try would be refused alike
		if err == nil {
			t.Errorf("%s: the Sentinel line without +%s runs every operation: the page asks for a command not needed", tr.Name, c)
			continue
		}
		t.Logf("%s: without +%s: %v", tr.Name, c, err)
		wantRefusalNamed(t, tr, c, err)
	}
}

// wantRefusalNamed checks the error of the operations run without +c once
// the client connected to the primary (rueidis, valkey-go and the root
// client check it with ROLE, so without +role they cannot): it matches conn.ErrNotReplicated, as every unconfirmed write does,
// but says the server refused c (NOPERM), not that too few replicas
// acknowledged the write.
func wantRefusalNamed(t *testing.T, tr Transport, c string, err error) {
	t.Helper()
	var refused *conn.ReplicaCheckRefusedError
	var wire *conn.Error
	if !errors.As(err, &refused) {
		if !errors.Is(err, errNoClient) && !(errors.As(err, &wire) && (wire.Op == "open" || wire.Op == "dial")) {
			t.Errorf("%s: without +%s the error is not a *conn.ReplicaCheckRefusedError: %v", tr.Name, c, err)
		}
		return
	}
	command := map[string]string{"role": "ROLE", "wait": "WAIT", "info": "INFO replication"}[c]
	if msg := err.Error(); !errors.Is(err, conn.ErrNotReplicated) || refused.Command != command ||
		!strings.Contains(msg, "NOPERM") || strings.Contains(msg, conn.ErrNotReplicated.Error()) {
		t.Errorf("%s: without +%s: %v; want conn.ErrNotReplicated, saying the server refused %s with NOPERM", tr.Name, c, err, command)
	}
}

// errNoClient is the error of sentinelACLOperations when the Sentinel
// client could not be made.
var errNoClient = errors.New("the Sentinel client")

// sentinelACLOperations runs the Sentinel use's operations as user on a
// fresh Sentinel client of tr: a managed lock's acquisition (waiting up
// to wait), a ResetExpiry confirmed by the replica, the release.
func sentinelACLOperations(t *testing.T, tr Transport, sentinels []string, master, user, password string, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	locks, err := tr.SentinelAs(t, sentinels, master, user, "lockerpw", password, lease.WithoutPush())
	if err != nil {
		return fmt.Errorf("%w: %w", errNoClient, err)
	}
	defer locks.Close()
	key := fmt.Sprintf("acl:sentinel:%d", time.Now().UnixNano())
	lock, err := locks.Acquire(ctx, key, 10*time.Second, lease.WithKeepAlive(), lease.WithWait(wait))
	if err != nil || lock == nil {
		return fmt.Errorf("acquire = %v, %w", lock != nil, err)
	}
	defer func() { _ = lock.Close() }()
	if ok, err := lock.ResetExpiry(ctx, 20*time.Second); !ok || err != nil {
		return fmt.Errorf("reset of the expiry = %v, %w", ok, err)
	}
	if out, err := lock.Release(ctx); out != lease.Released || err != nil {
		return fmt.Errorf("release = %v, %w", out, err)
	}
	return nil
}

func init() {
	register(Case{"LeastPrivilegeAcl_TheSentinelLineRunsItsOperations", caseLeastPrivilegeAcl_TheSentinelLineRunsItsOperations})
}
