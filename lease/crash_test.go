package lease

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// permitHolderEnv makes the test binary a permit holder
// (TestPermitHolderHelper): "addr password ttl".
const permitHolderEnv = "RESPIRE_LEASE_PERMIT_HOLDER"

// TestPermitHolderHelper is not a test: run by
// TestCrashedHolderFreesAtLeaseEnd_SIGKILLedPermitHolder in a child
// process, it takes a permit of the semaphore "crash" (limit 1) with a
// keep-alive on the server in $RESPIRE_LEASE_PERMIT_HOLDER, prints HELD,
// and holds it until it is killed.
func TestPermitHolderHelper(t *testing.T) {
	env := os.Getenv(permitHolderEnv)
	if env == "" {
		t.Skip("helper process of TestCrashedHolderFreesAtLeaseEnd_SIGKILLedPermitHolder")
	}
	f := strings.Fields(env)
	ttl, err := time.ParseDuration(f[2])
	if err != nil {
		t.Fatal(err)
	}
	locks := newLocks(t, newClient(t, []string{f[0]}, "", f[1], false))
	if _, err := locks.Semaphore("crash", 1).Acquire(ctxT(t), ttl, WithKeepAlive()); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("HELD\n")
	select {} // renewing, until SIGKILL
}

// startPermitHolder runs TestPermitHolderHelper against addr and returns
// once it holds its permit (and has renewed it at least once: it held for
// more than half its lease).
func startPermitHolder(t *testing.T, addr, password string, ttl time.Duration) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPermitHolderHelper$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), permitHolderEnv+"="+addr+" "+password+" "+ttl.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	for lines.Scan() && lines.Text() != "HELD" {
	}
	if lines.Err() != nil || lines.Text() != "HELD" {
		t.Fatalf("the holder process did not take its permit: %v", lines.Err())
	}
	time.Sleep(ttl * 3 / 4) // real time: its keep-alive renewed the permit once
	return cmd
}

// kill SIGKILLs the holder and waits for it to be gone.
func kill(t *testing.T, cmd *exec.Cmd) time.Time {
	t.Helper()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	return time.Now()
}

// Goal: a permit holder killed with SIGKILL (no release, no goodbye) frees
// its permit at its lease end by the server's clock, never later: on a sim
// node whose clock the test moves, the permit is refused 1 ms before the
// end of the lease its last renewal set and granted at that end exactly;
// on the real server, it is granted within the lease (plus a poll's
// slack) of the kill.
func TestCrashedHolderFreesAtLeaseEnd_SIGKILLedPermitHolder(t *testing.T) {
	t.Run("sim-exact", func(t *testing.T) {
		clock := sim.NewManualClock(time.Unix(1_700_000_000, 0))
		srv := startSim(t, sim.Config{Profile: sim.Redis70, Clock: clock})
		const ttl = 2 * time.Second
		holder := startPermitHolder(t, srv.Addr(), simPassword, ttl)
		kill(t, holder)
		// The server's clock has not moved: every renewal set the end to
		// now + ttl.
		locks := newLocks(t, newClient(t, []string{srv.Addr()}, "", simPassword, false))
		sem := locks.Semaphore("crash", 1)
		clock.Advance(ttl - time.Millisecond)
		if att, err := sem.TryAcquire(ctxT(t), time.Minute); err != nil || att.Acquired() {
			t.Fatalf("1 ms before the dead holder's lease end: %v, %v; want refused", att.Acquired(), err)
		}
		clock.Advance(time.Millisecond)
		att, err := sem.TryAcquire(ctxT(t), time.Minute)
		if err != nil || !att.Acquired() {
			t.Fatalf("at the dead holder's lease end: %v, %v; want the permit", att.Acquired(), err)
		}
		_ = att.Close()
	})
	t.Run("real-redis-7.0", func(t *testing.T) {
		addr, password := realRedis70(t)
		lockRealServer(t, addr)
		admin := startRealServer(t, addr, password)
		admin.Exec("DEL", "{crash}:sem")
		const ttl = time.Second
		holder := startPermitHolder(t, addr, password, ttl)
		locks := newLocks(t, newClient(t, []string{addr}, "", password, false))
		sem := locks.Semaphore("crash", 1)
		if att, err := sem.TryAcquire(ctxT(t), time.Minute); err != nil || att.Acquired() {
			t.Fatalf("while the holder lives: %v, %v; want refused", att.Acquired(), err)
		}
		kill(t, holder)
		killedAt := serverMillis(t, admin)
		end := leaseEndOfTheOnlyPermit(t, admin)
		if end > killedAt+ttl.Milliseconds() {
			t.Fatalf("the dead holder's permit ends %d ms after the kill; want within its %v lease", end-killedAt, ttl)
		}
		for {
			before := serverMillis(t, admin)
			att, err := sem.TryAcquire(ctxT(t), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			after := serverMillis(t, admin)
			switch {
			case att.Acquired() && after < end:
				t.Fatalf("granted by server time %d, before the dead holder's lease end %d", after, end)
			case att.Acquired():
				_ = att.Close()
				t.Logf("the permit ended %d ms after the SIGKILL, and was granted then", end-killedAt)
				return
			case before >= end:
				t.Fatalf("refused at server time %d, after the dead holder's lease end %d", before, end)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// serverMillis reads the server's clock (TIME) in milliseconds.
func serverMillis(t *testing.T, srv *realServer) int64 {
	t.Helper()
	reply := srv.Exec("EVAL", "local t = redis.call('time') return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)", "0")
	var ms int64
	if _, err := fmtSscanInt(reply, &ms); err != nil {
		t.Fatalf("TIME: %q", reply)
	}
	return ms
}

// leaseEndOfTheOnlyPermit returns the score (lease end, server ms) of the
// one member of the "crash" semaphore.
func leaseEndOfTheOnlyPermit(t *testing.T, srv *realServer) int64 {
	t.Helper()
	reply := srv.Exec("EVAL", "local m = redis.call('zrangebyscore', KEYS[1], 0, '+inf', 'WITHSCORES') "+
		"if #m ~= 2 then return -1 end return tonumber(m[2])", "1", "{crash}:sem") // the stored limit's score is negative
	var ms int64
	if _, err := fmtSscanInt(reply, &ms); err != nil || ms < 0 {
		t.Fatalf("the dead holder's permit: %q; want one member", reply)
	}
	return ms
}
