package sim_test

import (
	"testing"

	"github.com/respire-go/respire/sim/dst"
)

// TestAbandonedAcquisitionIsCleanedUp_AFairWritersPlaceInItsQueueGoesWithIt:
// a fair writer gives up while its try is on a socket that is then closed
// (outcome unknown). Its place in the queue does not show in the writer
// key, so a clean-up that first read the key found nothing of its token
// and sent only the compare-and-delete of its waiting marker: the token
// stayed queued, and the next try set the marker for it again (invariant
// 8, a token whose release was answered still in the key). The clean-up of
// a fair hold is its queue's release, sent without the read. Seed
// 139097930217841 of a 100,000-schedule campaign (-guarded) broke it.
func TestAbandonedAcquisitionIsCleanedUp_AFairWritersPlaceInItsQueueGoesWithIt(t *testing.T) {
	r := dst.Run(dst.Swarm(139097930217841))
	if r.Failed() {
		t.Fatalf("\n%s", r.Report())
	}
	if r.Stats.FairQueued == 0 {
		t.Fatalf("the schedule queued no fair waiter: %+v", r.Stats)
	}
}
