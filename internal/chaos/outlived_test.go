package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/sim"
)

// TestEstimateCountsFromTheSend_TheChaosCheckerFlagsABeliefBeyondTheServersLease:
// lease-outlived holds a handle's belief against the last write of its
// token that ran (an acquiring SET, a renewal answered as applied) plus
// its PX, with the drift margin; refused writes do not count, and an
// unanswered renewal taken as confirmed is caught.
func TestEstimateCountsFromTheSend_TheChaosCheckerFlagsABeliefBeyondTheServersLease(t *testing.T) {
	margin := float64(driftMargin(200*time.Millisecond)) / float64(time.Millisecond) // 4 ms
	acquired := exec(10, 5, "+OK\r\n", "SET", "k", "tok", "NX", "PX", "200")         // lease to +210ms
	renewed := sim.Execution{Seq: 11, ClientID: 5, At: at(80), Reply: ":1\r\n",
		Args: []string{"EVALSHA", conn.ExtendScriptSHA, "1", "k", "tok", "200"}} // lease to +280ms
	ifeq := sim.Execution{Seq: 12, ClientID: 5, At: at(150), Reply: "+OK\r\n",
		Args: []string{"SET", "k", "tok", "IFEQ", "tok", "PX", "200"}} // lease to +350ms
	refused := sim.Execution{Seq: 13, ClientID: 5, At: at(300), Reply: ":0\r\n",
		Args: []string{"EVAL", conn.ExtendScript, "1", "k", "tok", "200"}} // the key had expired: no lease
	for _, tc := range []struct {
		name      string
		history   []sim.Execution
		until     float64
		violation bool
	}{
		{"within the acquisition's lease", []sim.Execution{acquired}, 210, false},
		{"within the margin", []sim.Execution{acquired}, 210 + margin - 0.5, false},
		{"beyond the acquisition's lease", []sim.Execution{acquired}, 210 + margin + 0.5, true},
		{"renewed by the script", []sim.Execution{acquired, renewed}, 280, false},
		{"renewed by SET IFEQ", []sim.Execution{acquired, renewed, ifeq}, 350, false},
		{"a refused renewal renews nothing", []sim.Execution{acquired, renewed, ifeq, refused}, 480, true},
		{"no write of the token ran", nil, 100, true},
	} {
		obs := observation{start: t0, keys: []string{"k"}, holdings: []*holding{held("k", "tok", 10, tc.until)},
			history: tc.history}
		got := checkOutlived(obs)
		if (len(got) > 0) != tc.violation {
			t.Errorf("%s: violations %v; want violation %v", tc.name, got, tc.violation)
		}
		if len(got) > 0 && (got[0].Rule != RuleOutlived || !strings.Contains(got[0].Evidence, "tok")) {
			t.Errorf("%s: %v; want a %s violation naming the handle", tc.name, got[0], RuleOutlived)
		}
	}
	// A release call ends the belief before the lease ends: no violation.
	h := held("k", "tok", 10, 400)
	h.endCall = at(200)
	if got := checkOutlived(observation{start: t0, holdings: []*holding{h}, history: []sim.Execution{acquired}}); len(got) != 0 {
		t.Errorf("a belief cut by its release call: %v; want none", got)
	}
}
