package conn_test

import (
	"errors"
	. "github.com/respire-go/respire/conn"
	"testing"
	"time"
)

// Goal: writer preference on every server. Readers share the lock; a
// writer that finds readers sets its waiting marker, after which no new
// reader is admitted, nor another writer; the readers already in keep
// renewing and leave; the writer is then admitted, and no reader while it
// holds; after its release readers come back.
func TestRWLockWriterPreferring_NoReaderWhileAWriterHoldsOrWaits(t *testing.T) {
	for _, s := range primitiveServers(t) {
		t.Run(s.name, func(t *testing.T) {
			l := mustRWLock(t, s.prefix, "cache")
			for _, r := range []string{"r1", "r2"} {
				if res := mustDo(t, s.pool, l.ReadAcquireOp(r, 60000)); !res.Owned {
					t.Fatalf("reader %s refused on a free lock", r)
				}
			}
			if res := mustDo(t, s.pool, l.WriteAcquireOp("w", 60000, 5000)); res.Owned || !res.Waiting {
				t.Fatalf("write acquire with 2 readers = %+v; want waiting", res)
			}
			if res := mustDo(t, s.pool, l.WriterOp()); res.Token != WaitingMarker("w") || !IsWaitingMarker(res.Token) {
				t.Fatalf("writer key = %q; want the marker %q", res.Token, WaitingMarker("w"))
			}
			if res := mustDo(t, s.pool, l.ReadAcquireOp("r3", 60000)); res.Owned {
				t.Fatal("a new reader was admitted while a writer waits")
			}
			if res := mustDo(t, s.pool, l.WriteAcquireOp("w2", 60000, 5000)); res.Owned || res.Waiting {
				t.Fatalf("second writer = %+v; want refused (neither owned nor waiting)", res)
			}
			if res := mustDo(t, s.pool, l.ReadRenewOp("r1", 60000)); !res.Owned {
				t.Fatal("a reader holding before the writer came could not renew")
			}
			if res := mustDo(t, s.pool, l.WriteRenewOp("w", 60000)); res.Owned {
				t.Fatal("a waiting writer renewed as if it held the lock")
			}
			for _, r := range []string{"r1", "r2"} {
				mustDo(t, s.pool, l.ReadReleaseOp(r))
			}
			if res := mustDo(t, s.pool, l.ReadersOp()); res.Holders != 0 {
				t.Fatalf("readers after both left = %d; want 0", res.Holders)
			}
			if res := mustDo(t, s.pool, l.WriteAcquireOp("w", 60000, 5000)); !res.Owned || res.Waiting {
				t.Fatalf("write acquire once the readers drained = %+v; want owned", res)
			}
			if res := mustDo(t, s.pool, l.ReadAcquireOp("r3", 60000)); res.Owned {
				t.Fatal("a reader was admitted while the writer holds")
			}
			if res := mustDo(t, s.pool, l.WriteRenewOp("w", 60000)); !res.Owned {
				t.Fatal("the writer could not renew")
			}
			if res := mustDo(t, s.pool, l.WriteReleaseOp("w")); !res.Owned {
				t.Fatal("the writer could not release")
			}
			if res := mustDo(t, s.pool, l.ReadAcquireOp("r3", 60000)); !res.Owned {
				t.Fatal("no reader admitted after the writer left")
			}
		})
	}
}

// Goal: a dead reader holds the writer up only until its own lease ends
// by server time, not the longest one (each reader has its own score).
func TestRWLockWriterPreferring_WriterAdmittedWhenTheLastReaderLeaseEnds(t *testing.T) {
	for _, s := range clockedSims(t) {
		t.Run(s.name, func(t *testing.T) {
			l := mustRWLock(t, "", "c")
			mustDo(t, s.pool, l.ReadAcquireOp("short", 1000))
			mustDo(t, s.pool, l.ReadAcquireOp("long", 5000))
			mustDo(t, s.pool, l.ReadReleaseOp("long"))
			if res := mustDo(t, s.pool, l.WriteAcquireOp("w", 10000, 3000)); !res.Waiting {
				t.Fatalf("write acquire with a live reader = %+v; want waiting", res)
			}
			s.clock.Advance(999 * time.Millisecond)
			if res := mustDo(t, s.pool, l.WriteAcquireOp("w", 10000, 3000)); !res.Waiting {
				t.Fatalf("write acquire 1 ms before the reader's lease end = %+v; want waiting", res)
			}
			s.clock.Advance(time.Millisecond)
			if res := mustDo(t, s.pool, l.WriteAcquireOp("w", 10000, 3000)); !res.Owned {
				t.Fatalf("write acquire at the reader's lease end = %+v; want owned", res)
			}
		})
	}
}

// Goal: a writer that dies while waiting blocks readers only until its
// marker's own lease ends; a writer that gives up deletes its marker at
// once (AbandonWaitOp); a retry refreshes the marker's lease.
func TestRWLockWaitingMarkerExpires_ReadersReturnWhenTheWriterDies(t *testing.T) {
	for _, s := range clockedSims(t) {
		t.Run(s.name, func(t *testing.T) {
			l := mustRWLock(t, "", "m")
			mustDo(t, s.pool, l.ReadAcquireOp("r", 60000))
			if res := mustDo(t, s.pool, l.WriteAcquireOp("w", 60000, 500)); !res.Waiting {
				t.Fatalf("write acquire = %+v; want waiting", res)
			}
			s.clock.Advance(400 * time.Millisecond)
			if res := mustDo(t, s.pool, l.WriteAcquireOp("w", 60000, 500)); !res.Waiting {
				t.Fatalf("retry = %+v; want waiting (marker refreshed)", res)
			}
			s.clock.Advance(400 * time.Millisecond) // 800 ms after the first try: alive only if refreshed
			if res := mustDo(t, s.pool, l.ReadAcquireOp("r2", 60000)); res.Owned {
				t.Fatal("a reader was admitted while the refreshed marker lives")
			}
			s.clock.Advance(101 * time.Millisecond) // the writer died: its marker's lease is over
			if res := mustDo(t, s.pool, l.ReadAcquireOp("r2", 60000)); !res.Owned {
				t.Fatal("readers still refused after the dead writer's marker expired")
			}
			if res := mustDo(t, s.pool, l.WriteAcquireOp("w3", 60000, 500)); !res.Waiting {
				t.Fatalf("write acquire = %+v; want waiting", res)
			}
			if res := mustDo(t, s.pool, l.AbandonWaitOp("w3")); !res.Owned {
				t.Fatal("AbandonWaitOp did not delete the marker")
			}
			if res := mustDo(t, s.pool, l.ReadAcquireOp("r3", 60000)); !res.Owned {
				t.Fatal("readers refused after the writer gave up")
			}
		})
	}
}

// Goal: a write token a waiting marker could be mistaken for is refused
// before anything is sent; the script refuses it too.
func TestRWLockWriterPreferring_ReservedWriteTokenIsNotSubmitted(t *testing.T) {
	srv := startSim(t, "redis-7.0")
	p := newPool(t, newClient(t, []string{srv.Addr()}, "", simPassword))
	l := mustRWLock(t, "", "t")
	srv.ResetLog()
	_, err := p.Do(ctxT(t), l.WriteAcquireOp("waiting:x", 1000, 1000), nil)
	if !errors.Is(err, ErrReservedToken) || !errors.Is(err, ErrNotSubmitted) {
		t.Fatalf("WriteAcquireOp(\"waiting:x\") = %v; want not submitted, ErrReservedToken", err)
	}
	if log := srv.Log(); len(log) != 0 {
		t.Fatalf("sent %q; want nothing", log[0].Args)
	}
	if got := srv.Exec("EVAL", WriteAcquireScript, "2", l.WriterKey, l.ReadersKey, "waiting:x", "1000", "1000"); got != "-ERR write lock owner token must not begin with waiting:\r\n" {
		t.Fatalf("the script with a reserved token = %q; want its refusal", got)
	}
}
