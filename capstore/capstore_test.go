package capstore

import (
	"sync"
	"testing"
)

func TestFreshStoreKnowsNothing(t *testing.T) {
	var s Store
	if got := s.Load(); got != 0 {
		t.Fatalf("Load() = %v; want none", got)
	}
	if s.Load().Has(DelexUnsupported) {
		t.Fatal("fresh store reports DELEX unsupported")
	}
}

func TestBitsAreOnlyEverAdded(t *testing.T) {
	var s Store
	s.Add(DelexUnsupported)
	s.Add(0)
	s.Add(DelifeqUnsupported)
	want := DelexUnsupported | DelifeqUnsupported
	if got := s.Load(); got != want {
		t.Fatalf("Load() = %v; want %v", got, want)
	}
	if !s.Load().Has(want) || s.Load().Has(ConditionalSetUnsupported) {
		t.Fatalf("Has mismatch on %v", s.Load())
	}
}

func TestConcurrentAddsAreAtomic(t *testing.T) {
	var s Store
	var wg sync.WaitGroup
	bits := []Set{ConditionalSetUnsupported, DelexUnsupported, DelifeqUnsupported, ReleaseScriptLoaded, ExtendScriptLoaded}
	for _, b := range bits {
		for range 50 {
			wg.Add(1)
			go func() { defer wg.Done(); s.Add(b) }()
		}
	}
	wg.Wait()
	if got, want := s.Load(), Set(0x1f); got != want {
		t.Fatalf("Load() = %v; want %v", got, want)
	}
}

func TestSetString(t *testing.T) {
	if got := (DelexUnsupported | ExtendScriptLoaded).String(); got != "delex-unsupported|extend-script-loaded" {
		t.Fatalf("String() = %q", got)
	}
	if got := Set(0).String(); got != "none" {
		t.Fatalf("String() = %q", got)
	}
}
