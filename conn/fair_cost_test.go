package conn_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/respire-go/respire/conn"
)

// Goal: a fair mutex's hand-off reads the queue's front only — the
// release that grants the head, the head's claim (GET and SET alone) and
// the releaser's next try, queued at the back, never count the queue nor
// look for a member past its front, however long the queue — measured by
// the server's own command counts on a real Redis 7.0 (rule
// FairHandOffReadsTheQueuesFront). A short queue is one listpack there,
// where a count or a miss walks every member.
func TestFairHandOffReadsTheQueuesFront_SixtyFourWaiters(t *testing.T) {
	var real []primServer
	for _, s := range primitiveServers(t) {
		if strings.HasPrefix(s.name, "real-") {
			real = append(real, s)
		}
	}
	if len(real) == 0 {
		t.Skip("needs RESPIRE_REAL_REDIS70: the simulator does not count the commands its scripts run")
	}
	const waiters, handOffs = 64, 20
	s := real[0]
	key := fmt.Sprintf("%sfront:%d", s.prefix, time.Now().UnixNano())
	r, err := FairMutex(key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.exec("DEL", key, r.Queue().QueueKey, r.Queue().LeasesKey) })
	fairTry(t, s, r, "holder0", 60000)
	queue := make([]string, 0, waiters+handOffs)
	for i := range waiters {
		tok := fmt.Sprintf("waiter%d", i)
		if res := fairTry(t, s, r, tok, 60000); res.Holders != int64(i+1) {
			t.Fatalf("try of %s = %+v; want queued at %d", tok, res, i+1)
		}
		queue = append(queue, tok)
	}
	before := commandCalls(t, s)
	holder := "holder0"
	for i := range handOffs {
		mustDo(t, s.pool, r.ReleaseOp(holder))
		head := queue[0]
		queue = queue[1:]
		if res := fairTry(t, s, r, head, 60000); !res.Owned {
			t.Fatalf("hand-off %d: the head's claim = %+v; want held", i, res)
		}
		next := fmt.Sprintf("again%d", i)
		if res := fairTry(t, s, r, next, 60000); res.Holders != waiters {
			t.Fatalf("hand-off %d: the releaser's next try = %+v; want queued at %d", i, res, waiters)
		}
		queue = append(queue, next)
		holder = head
	}
	after := commandCalls(t, s)
	perHandOff := func(cmd string) float64 { return float64(after[cmd]-before[cmd]) / handOffs }
	if n := perHandOff("zcount"); n != 0 {
		t.Errorf("ZCOUNT per hand-off = %v; want none (a count walks the whole queue)", n)
	}
	if n := perHandOff("evalsha") + perHandOff("eval"); n != 3 {
		t.Errorf("scripts per hand-off = %v; want 3 (release, claim, the next try)", n)
	}
	inner := 0.0
	for cmd := range after {
		switch name, _, _ := strings.Cut(cmd, "|"); name {
		case "evalsha", "eval", "info", "script", "auth", "hello", "client", "cluster", "ping", "keys", "config":
		default:
			inner += perHandOff(cmd)
		}
	}
	if inner > 25 {
		t.Errorf("commands the scripts ran per hand-off = %v; want at most 25 (%v)", inner, after)
	}
}

// Goal: a fair semaphore's and a fair read/write lock's hand-offs read
// the queue's front only, as a mutex's do (rule
// FairHandOffReadsTheQueuesFront): with 64 waiters queued behind a full
// semaphore (limit 2) or a writer, a release that grants the head, the
// head's claim and the releaser's next try, queued at the back, never
// count the queue, on a real Redis 7.0 (the scripts before the rule: 10
// ZCOUNT and 65.7 commands per semaphore hand-off, 8 and 64.9 per read/write
// lock's).
func TestFairHandOffReadsTheQueuesFront_SemaphoreAndRWLock(t *testing.T) {
	s, ok := realPrimServer(t)
	if !ok {
		t.Skip("needs RESPIRE_REAL_REDIS70: the simulator does not count the commands its scripts run")
	}
	stamp := time.Now().UnixNano()
	sem := mustSemaphore(t, s.prefix, fmt.Sprintf("front-sem:%d", stamp), 2)
	rw := mustRWLock(t, s.prefix, fmt.Sprintf("front-rw:%d", stamp))
	for _, c := range []struct {
		name    string
		r       FairResource
		holders []string
		keys    []string
		most    float64 // commands the three scripts may run per hand-off
	}{
		{"semaphore", sem.Fair(), []string{"holder0", "holder1"}, []string{sem.HoldersKey}, 33},
		{"rwlock-writers", rw.Fair(true), []string{"holder0"}, []string{rw.WriterKey, rw.ReadersKey}, 25},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(func() { s.exec(append([]string{"DEL", c.r.Queue().QueueKey, c.r.Queue().LeasesKey}, c.keys...)...) })
			handOffCost(t, s, c.r, c.holders, c.most)
		})
	}
}

// realPrimServer is the real Redis 7.0 of primitiveServers, if any.
func realPrimServer(t *testing.T) (primServer, bool) {
	for _, s := range primitiveServers(t) {
		if strings.HasPrefix(s.name, "real-") {
			return s, true
		}
	}
	return primServer{}, false
}

// handOffCost queues 64 fair waiters behind holders (each taken by a fair
// try), then hands the lock on 20 times — the oldest holder's release, the
// head's claim, the releaser's next try at the back — and checks the
// server's command counts per hand-off: no ZCOUNT, three scripts, and at
// most most commands run by them.
func handOffCost(t *testing.T, s primServer, r FairResource, holders []string, most float64) {
	t.Helper()
	const waiters, handOffs = 64, 20
	for _, h := range holders {
		if res := fairTry(t, s, r, h, 60000); !res.Owned {
			t.Fatalf("try of %s = %+v; want held", h, res)
		}
	}
	queue := make([]string, 0, waiters+handOffs)
	for i := range waiters {
		tok := fmt.Sprintf("waiter%d", i)
		if res := fairTry(t, s, r, tok, 60000); res.Holders != int64(i+1) {
			t.Fatalf("try of %s = %+v; want queued at %d", tok, res, i+1)
		}
		queue = append(queue, tok)
	}
	before := commandCalls(t, s)
	for i := range handOffs {
		mustDo(t, s.pool, r.ReleaseOp(holders[0]))
		head := queue[0]
		queue = queue[1:]
		if res := fairTry(t, s, r, head, 60000); !res.Owned {
			t.Fatalf("hand-off %d: the head's claim = %+v; want held", i, res)
		}
		next := fmt.Sprintf("again%d", i)
		if res := fairTry(t, s, r, next, 60000); res.Holders != waiters {
			t.Fatalf("hand-off %d: the releaser's next try = %+v; want queued at %d", i, res, waiters)
		}
		queue = append(queue, next)
		holders = append(holders[1:], head)
	}
	after := commandCalls(t, s)
	perHandOff := func(cmd string) float64 { return float64(after[cmd]-before[cmd]) / handOffs }
	if n := perHandOff("zcount"); n != 0 {
		t.Errorf("ZCOUNT per hand-off = %v; want none (a count walks the whole queue)", n)
	}
	if n := perHandOff("evalsha") + perHandOff("eval"); n != 3 {
		t.Errorf("scripts per hand-off = %v; want 3 (release, claim, the next try)", n)
	}
	inner := 0.0
	for cmd := range after {
		switch name, _, _ := strings.Cut(cmd, "|"); name {
		case "evalsha", "eval", "info", "script", "auth", "hello", "client", "cluster", "ping", "keys", "config":
		default:
			inner += perHandOff(cmd)
		}
	}
	t.Logf("per hand-off: %v commands run by the scripts, %v ZCOUNT", inner, perHandOff("zcount"))
	if inner > most {
		t.Errorf("commands the scripts ran per hand-off = %v; want at most %v", inner, most)
	}
}

// commandCalls reads INFO commandstats' calls per command that did not
// fail (an EVALSHA refused NOSCRIPT is sent again as EVAL).
func commandCalls(t *testing.T, s primServer) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	info, err := s.admin.Do(ctxT(t), s.admin.B().Arbitrary("INFO", "commandstats").Build()).ToString()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		_, failed, _ := strings.Cut(rest, "failed_calls=")
		failed, _, _ = strings.Cut(failed, ",")
		n, err1 := strconv.ParseInt(calls, 10, 64)
		f, err2 := strconv.ParseInt(failed, 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("INFO commandstats line %q", line)
		}
		out[strings.TrimPrefix(name, "cmdstat_")] = n - f
	}
	return out
}
