package conn_test

import (
	"errors"
	"fmt"
	. "github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/realserver"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// Goal: the key naming. Every key of one semaphore or read/write lock
// carries the same hash tag (the name, or the prefix's own tag), so it
// hashes to one slot; a name that would give an empty tag, an empty name and
// a limit below 1 are refused before anything exists.
func TestPrimitiveKeysShareASlot_NamingAndRefusals(t *testing.T) {
	for _, tt := range []struct{ prefix, name, holders string }{
		{"", "jobs", "{jobs}:sem"},
		{"app:", "jobs", "app:{jobs}:sem"},
		{"{tenant}:", "jobs", "{tenant}:{jobs}:sem"},
		{"", "a}b", "{a}b}:sem"},
		{"", "{x}", "{{x}}:sem"},
		{"p{", "n", "p{{n}:sem"},
	} {
		sem := mustSemaphore(t, tt.prefix, tt.name, 8)
		l := mustRWLock(t, tt.prefix, tt.name)
		stem := strings.TrimSuffix(tt.holders, ":sem")
		if sem.HoldersKey != tt.holders || l.WriterKey != stem+":w" || l.ReadersKey != stem+":r" {
			t.Errorf("(%q, %q) = %+v, %+v; want stem %q", tt.prefix, tt.name, sem, l, stem)
		}
		slot := sim.Slot(sem.HoldersKey)
		for _, k := range []string{l.WriterKey, l.ReadersKey} {
			if sim.Slot(k) != slot {
				t.Errorf("(%q, %q): %s is in slot %d, %s in %d; want one slot", tt.prefix, tt.name, sem.HoldersKey, slot, k, sim.Slot(k))
			}
		}
	}
	for _, bad := range []struct {
		prefix, name string
		limit        int
		want         error
	}{
		{"", "", 1, ErrEmptyName}, {"app:", "", 1, ErrEmptyName}, {"", "}x", 1, ErrEmptyHashTag},
		{"a{}", "n", 1, ErrEmptyHashTag}, {"", "n", 0, ErrBadLimit}, {"", "n", -3, ErrBadLimit},
	} {
		if _, err := NewSemaphore(bad.prefix, bad.name, bad.limit); !errors.Is(err, bad.want) {
			t.Errorf("NewSemaphore(%q, %q, %d) = %v; want %v", bad.prefix, bad.name, bad.limit, err, bad.want)
		}
		if bad.want == ErrBadLimit {
			continue
		}
		if _, err := NewRWLock(bad.prefix, bad.name); !errors.Is(err, bad.want) {
			t.Errorf("NewRWLock(%q, %q) = %v; want %v", bad.prefix, bad.name, err, bad.want)
		}
	}
}

// exerciseOneSlot runs every semaphore and read/write-lock operation of
// name through p and fails on any error (a CROSSSLOT among them).
func exerciseOneSlot(t *testing.T, p *Pool, prefix, name string) (Semaphore, RWLock) {
	t.Helper()
	sem, l := mustSemaphore(t, prefix, name, 2), mustRWLock(t, prefix, name)
	steps := []struct {
		op    Op
		owned bool
	}{
		{sem.AcquireOp("a", 60000), true}, {sem.RenewOp("a", 60000), true}, {sem.LeaseOp("a"), true},
		{sem.HoldersOp(), false}, {l.ReadAcquireOp("r", 60000), true}, {l.ReadRenewOp("r", 60000), true},
		{l.ReadLeaseOp("r"), true}, {l.ReadersOp(), false}, {l.WriteAcquireOp("w", 60000, 5000), false},
		{l.AbandonWaitOp("w"), true}, {l.ReadReleaseOp("r"), true}, {l.WriteAcquireOp("w", 60000, 5000), true},
		{l.WriteRenewOp("w", 60000), true}, {l.WriterOp(), true}, {l.WriteReleaseOp("w"), true},
	}
	for _, st := range steps {
		res, err := p.Do(ctxT(t), st.op, nil)
		if err != nil || res.Owned != st.owned {
			t.Fatalf("%s %q: %s = %+v, %v; want owned %v", prefix, name, st.op.Name(), res, err, st.owned)
		}
	}
	return sem, l
}

// Goal: on a cluster every operation runs on the node of its name's slot
// with no CROSSSLOT, on every profile; the same script with keys of two
// slots is refused with CROSSSLOT (the check would see one).
func TestPrimitiveKeysShareASlot_EveryOperationOnASimCluster(t *testing.T) {
	profiles := []sim.Profile{sim.Redis70, sim.Redis84, sim.Valkey81, sim.Valkey90}
	c := startCluster(t, profiles...)
	client := newClient(t, c.Addrs(), "", simPassword)
	p := newPool(t, client)
	for i, profile := range profiles {
		name := ""
		for n := 0; name == ""; n++ {
			if candidate := fmt.Sprintf("job-%d", n); c.NodeFor("{"+candidate+"}") == i {
				name = candidate
			}
		}
		sem, _ := exerciseOneSlot(t, p, "app:", name)
		if got := c.Node(i).Exec("EXISTS", sem.HoldersKey); got != ":1\r\n" {
			t.Errorf("node %d (%s): EXISTS of the semaphore's key = %q; want it there", i, profile, got)
		}
	}
	raw, err := realserver.Dial(c.Addrs()[0], simPassword) // a plain connection: the server itself refuses two slots
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	reply, err := raw.Do("EVAL", ReadAcquireScript, "2", "jobs:w", "jobs:r", "a", "60000")
	if err != nil || !strings.HasPrefix(reply, "-CROSSSLOT") {
		t.Fatalf("the acquisition with untagged keys = %q, %v; want CROSSSLOT", reply, err)
	}
}

// Goal: the same on the real redis 7.0 cluster (RESPIRE_REAL_CLUSTER70):
// names spread over its masters, no CROSSSLOT, and both keys of each
// semaphore answer one multi-key EXISTS (which would fail across slots).
func TestPrimitiveKeysShareASlot_EveryOperationOnARealCluster(t *testing.T) {
	list := os.Getenv("RESPIRE_REAL_CLUSTER70")
	if list == "" {
		t.Skip("RESPIRE_REAL_CLUSTER70 not set: no real redis-server 7.0 cluster (scripts/with-servers.sh starts one)")
	}
	lockRealServer(t, list)
	password := os.Getenv("RESPIRE_REAL_CLUSTER70_PASSWORD")
	p := newPool(t, newClient(t, strings.Split(list, ","), "", password))
	client := newOutsider(t, strings.Split(list, ","), "", password)
	prefix := fmt.Sprintf("conn-prim:%d:", time.Now().UnixNano())
	nodes := map[string]bool{}
	for n := range 12 {
		sem, l := exerciseOneSlot(t, p, prefix, fmt.Sprintf("job-%d", n))
		keys := []string{sem.HoldersKey, l.WriterKey, l.ReadersKey}
		if err := client.Do(ctxT(t), client.B().Exists().Key(keys...).Build()).Error(); err != nil {
			t.Fatalf("EXISTS %q = %v; want one slot", keys, err)
		}
		res := mustDo(t, p, sem.HoldersOp())
		nodes[Pin(res.Session).Node()] = true
		client.Do(ctxT(t), client.B().Del().Key(keys...).Build())
	}
	if len(nodes) < 2 {
		t.Fatalf("the semaphores ran on %v; want several masters", nodes)
	}
}
