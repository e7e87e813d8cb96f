package actor

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestPushDetectsLoss_HolderTableMatchesAMap drives the push hub's holders'
// table (push_table.go) and a map with the same random sets and removes,
// over few keys (long probe runs, every removal shifting slots back) and
// many (growing and shrinking), and checks after each that both hold the
// same holders: a holder the table lost would no longer learn of its loss.
func TestPushDetectsLoss_HolderTableMatchesAMap(t *testing.T) {
	for _, keys := range []int{20, 3000} {
		seed := uint64(keys)
		rng := rand.New(rand.NewPCG(seed, 1))
		var table holderTable
		want := map[string]*Lock{}
		for i := range 40000 {
			key := "k" + strconv.Itoa(rng.IntN(keys))
			if rng.IntN(3) == 0 {
				table.remove(key)
				delete(want, key)
			} else {
				l := &Lock{wireKey: key}
				table.set(l)
				want[key] = l
			}
			if i%97 == 0 || keys == 20 {
				checkHolderTable(t, &table, want, keys)
			}
		}
		for key := range want {
			table.remove(key)
		}
		if table.n != 0 || len(table.slots) > holderTableMin {
			t.Fatalf("%d keys: emptied table has %d keys in %d slots; want 0 in at most %d", keys, table.n, len(table.slots), holderTableMin)
		}
	}
}

func checkHolderTable(t *testing.T, table *holderTable, want map[string]*Lock, keys int) {
	t.Helper()
	if table.n != len(want) {
		t.Fatalf("%d keys in the table; want %d", table.n, len(want))
	}
	for i := range keys {
		key := "k" + strconv.Itoa(i)
		if got := table.get(key); got != want[key] {
			t.Fatalf("get(%q) = %p; want %p", key, got, want[key])
		}
	}
	seen := 0
	table.each(func(key string) {
		seen++
		if want[key] == nil {
			t.Fatalf("each gave %q, which is not held", key)
		}
	})
	if seen != len(want) {
		t.Fatalf("each gave %d keys; want %d", seen, len(want))
	}
	if len(table.slots) > 0 && 8*table.n > 7*len(table.slots) {
		t.Fatalf("%d keys in %d slots: fuller than 7/8", table.n, len(table.slots))
	}
}
