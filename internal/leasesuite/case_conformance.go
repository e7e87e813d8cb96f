package leasesuite

import (
	"github.com/respire-go/respire/lease"
	"slices"
	"testing"
	"time"

	"github.com/respire-go/respire/sim"
)

// Expected lock commands of the first and a later operation on one session.
var wireSequences = map[sim.Profile]struct {
	releaseFirst, releaseLater []string
	extendFirst, extendLater   []string
}{
	sim.Redis84:  {[]string{"DELEX"}, []string{"DELEX"}, []string{"SET"}, []string{"SET"}},
	sim.Valkey90: {[]string{"DELEX", "DELIFEQ"}, []string{"DELIFEQ"}, []string{"SET"}, []string{"SET"}},
	sim.Valkey81: {[]string{"DELEX", "DELIFEQ", "EVALSHA", "EVAL"}, []string{"EVALSHA"}, []string{"SET"}, []string{"SET"}},
	sim.Redis70:  {[]string{"DELEX", "DELIFEQ", "EVALSHA", "EVAL"}, []string{"EVALSHA"}, []string{"SET", "EVALSHA", "EVAL"}, []string{"EVALSHA"}},
}

func caseReleaseWireSequencePerServer(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		srv, locks, ctx := tg.srv, tg.locks(t), ctxT(t)
		want := wireSequences[tg.profile]
		// Open the session first, so that its handshake's error replies (CLIENT
		// SETINFO on Redis 7.0) are not counted with the release's.
		if _, _, err := locks.OwnerToken(ctx, "warm-up"); err != nil {
			t.Fatal(err)
		}
		for round, seq := range [][]string{want.releaseFirst, want.releaseLater, want.releaseLater} {
			key := "lock"
			if ok, err := locks.TryTake(ctx, key, tok("owner"), time.Minute); !ok || err != nil {
				t.Fatalf("TryTake = %v, %v; want true", ok, err)
			}
			srv.ResetLog()
			errorsBefore := tg.unknownCommandErrors(t)
			ok, err := locks.Release(ctx, key, tok("owner"))
			if !ok || err != nil {
				t.Fatalf("round %d: Release = %v, %v; want true, nil", round, ok, err)
			}
			if got := lockCommands(srv.Log()); !slices.Equal(got, tg.visible(seq)) {
				t.Fatalf("round %d: release sent %v; want %v", round, got, tg.visible(seq))
			}
			if unknown := len(seq) - len(tg.visible(seq)); tg.real {
				if got := tg.unknownCommandErrors(t) - errorsBefore; got != unknown {
					t.Fatalf("round %d: real server counted %d ERR replies; want %d unknown-command replies", round, got, unknown)
				}
			}
			if got := srv.Exec("EXISTS", key); got != ":0\r\n" {
				t.Fatalf("round %d: EXISTS after release = %q; want :0", round, got)
			}
		}
	})
}

func caseExtensionWireSequencePerServer(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		srv, locks, ctx := tg.srv, tg.locks(t), ctxT(t)
		want := wireSequences[tg.profile]
		if ok, err := locks.TryTake(ctx, "lock", tok("owner"), time.Second); !ok || err != nil {
			t.Fatalf("TryTake = %v, %v; want true", ok, err)
		}
		for round, seq := range [][]string{want.extendFirst, want.extendLater, want.extendLater} {
			srv.ResetLog()
			ok, err := locks.ResetExpiry(ctx, "lock", tok("owner"), time.Minute)
			if !ok || err != nil {
				t.Fatalf("round %d: ResetExpiry = %v, %v; want true, nil", round, ok, err)
			}
			if got := lockCommands(srv.Log()); !slices.Equal(got, tg.visible(seq)) {
				t.Fatalf("round %d: extension sent %v; want %v", round, got, seq)
			}
			assertPTTLAbove(t, srv, "lock", 50*time.Second)
		}
	})
}

// assertPTTLAbove checks the key's remaining TTL on the server.
func assertPTTLAbove(t *testing.T, srv wireServer, key string, min time.Duration) {
	t.Helper()
	reply := srv.Exec("PTTL", key)
	var ms int64
	if _, err := fmtSscanInt(reply, &ms); err != nil || time.Duration(ms)*time.Millisecond < min {
		t.Fatalf("PTTL %s = %q; want above %v", key, reply, min)
	}
}

func caseOwnerTokenReadsExactBytes(t *testing.T, tr Transport) {
	forEachServer(t, tr, func(t *testing.T, tg *target) {
		locks, ctx := tg.locks(t), ctxT(t)
		binary := lease.TokenFromBytes([]byte{0, 0xff, '\r', '\n', 'x'})
		if _, found, err := locks.OwnerToken(ctx, "k"); found || err != nil {
			t.Fatalf("OwnerToken(missing) = found %v, %v; want false, nil", found, err)
		}
		if ok, err := locks.TryTake(ctx, "k", binary, time.Minute); !ok || err != nil {
			t.Fatalf("TryTake = %v, %v", ok, err)
		}
		got, found, err := locks.OwnerToken(ctx, "k")
		if !found || err != nil || got != binary {
			t.Fatalf("OwnerToken = %v, %v, %v; want %v", got, found, err, binary)
		}
		if ok, err := locks.TryTake(ctx, "k", tok("other"), time.Minute); ok || err != nil {
			t.Fatalf("second TryTake = %v, %v; want false, nil", ok, err)
		}
		if ok, err := locks.Release(ctx, "k", binary); !ok || err != nil {
			t.Fatalf("Release(binary) = %v, %v; want true", ok, err)
		}
	})
}

func init() {
	register(
		Case{"ReleaseWireSequencePerServer", caseReleaseWireSequencePerServer},
		Case{"ExtensionWireSequencePerServer", caseExtensionWireSequencePerServer},
		Case{"OwnerTokenReadsExactBytes", caseOwnerTokenReadsExactBytes},
	)
}
