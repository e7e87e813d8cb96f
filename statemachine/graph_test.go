package statemachine

import (
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/states.md")

const docsPath = "../docs/states.md"

func TestGraphLookupAgreesWithLooplabOnEveryPair(t *testing.T) {
	f := NewFSM(Acquiring)
	for s := State(0); s < NumStates; s++ {
		for e := Event(0); e < NumEvents; e++ {
			f.SetState(s.String())
			err := FireFSM(f, e)
			to, ok := Next(s, e)
			if ok != (err == nil) {
				t.Fatalf("%s -%s->: lookup ok=%v, looplab err=%v", s, e, ok, err)
			}
			if ok && f.Current() != to.String() {
				t.Errorf("%s -%s->: lookup %s, looplab %s", s, e, to, f.Current())
			}
		}
	}
}

func TestGraphEveryStateReachableAndNamed(t *testing.T) {
	seen := map[State]bool{Acquiring: true}
	for changed := true; changed; {
		changed = false
		for _, ed := range Graph() {
			for _, from := range ed.From {
				if seen[from] && !seen[ed.To] {
					seen[ed.To], changed = true, true
				}
			}
		}
	}
	for s := State(0); s < NumStates; s++ {
		if !seen[s] {
			t.Errorf("state %s unreachable from Acquiring", s)
		}
		if StateDoc(s) == "" {
			t.Errorf("state %s has no doc sentence", s)
		}
	}
	used := map[Event]bool{}
	for _, ed := range Graph() {
		used[ed.Event] = true
		if ed.Doc == "" {
			t.Errorf("edge %v -%s-> has no doc sentence", ed.From, ed.Event)
		}
	}
	for e := Event(0); e < NumEvents; e++ {
		if !used[e] {
			t.Errorf("event %s labels no edge", e)
		}
	}
}

func TestTerminalStatesHaveNoExit(t *testing.T) {
	for _, ed := range Graph() {
		for _, from := range ed.From {
			if from.Terminal() && ed.To != from {
				t.Errorf("terminal %s leaves to %s on %s", from, ed.To, ed.Event)
			}
		}
	}
}

// TestDocsStatesMdMatchesGraph fails when docs/states.md drifts from the code. Regenerate
// with `go generate ./statemachine` or `go test ./statemachine -run Docs -update`.
func TestDocsStatesMdMatchesGraph(t *testing.T) {
	want, err := Markdown(".")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(docsPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatalf("read %s: %v (run go generate ./statemachine)", docsPath, err)
	}
	if string(got) != want {
		t.Fatalf("%s is stale; run `go generate ./statemachine` and commit it", docsPath)
	}
}
