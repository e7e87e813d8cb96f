package sim

import "testing"

// TestFaultReplaceReplyExecutesThenAnswersTheGivenReply: the command runs,
// and the client reads the scripted reply instead of the real one.
func TestFaultReplaceReplyExecutesThenAnswersTheGivenReply(t *testing.T) {
	s := startSim(t, Config{})
	s.Inject(Fault{Kind: ReplaceReply, Command: "INCR", Reply: "$7\r\ninvalid\r\n"})
	w := dial(t, s.Addr())
	if got := w.do("INCR", "n"); got != "$7\r\ninvalid\r\n" {
		t.Fatalf("INCR with the fault = %q; want the scripted reply", got)
	}
	if got := w.do("INCR", "n"); got != ":2\r\n" {
		t.Fatalf("INCR after the fault = %q; want :2 (the first one ran)", got)
	}
	if log := s.FaultLog(); len(log) != 1 || log[0].Kind != ReplaceReply {
		t.Fatalf("FaultLog = %+v", log)
	}
}
