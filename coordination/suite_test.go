package coordination_test

import (
	"testing"

	"github.com/respire-go/respire/internal/leasesuite"
)

// The behaviour suite (internal/leasesuite) on rueidis: one test per case,
// Test<case name>, each listed under its rule in docs/rules.md; the goredis
// module runs the same cases on go-redis (goredis.TestGoRedisLeaseSuite_EveryCase).

func TestAcceptedAcquisitionIsNotReplayedAfterCancellation(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "AcceptedAcquisitionIsNotReplayedAfterCancellation")
}
func TestAcceptedAcquisitionIsNotReplayedAfterDisconnect(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "AcceptedAcquisitionIsNotReplayedAfterDisconnect")
}
func TestCancellationAfterASuccessfulReplyReleasesTheLease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "CancellationAfterASuccessfulReplyReleasesTheLease")
}
func TestConcurrentReleasesOfAFencedLockShareOneDelete(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ConcurrentReleasesOfAFencedLockShareOneDelete")
}
func TestCrossSlotPairIsRefusedInClusterModeAndHashTagsWork(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "CrossSlotPairIsRefusedInClusterModeAndHashTagsWork")
}
func TestErrorsReadWithOnePrefixAndMatchLeasesSentinels(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ErrorsReadWithOnePrefixAndMatchLeasesSentinels")
}
func TestFencedLockContextEndsOnReleaseAndOnExpiry(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FencedLockContextEndsOnReleaseAndOnExpiry")
}
func TestFencedLockKeepAliveRenewsUntilARenewalIsRefused(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FencedLockKeepAliveRenewsUntilARenewalIsRefused")
}
func TestFencedLockKeepAliveStartedLaterAndStopped(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FencedLockKeepAliveStartedLaterAndStopped")
}
func TestFencedLockKeepAliveSurvivesAConnectionReset(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FencedLockKeepAliveSurvivesAConnectionReset")
}
func TestFencedLockUncertainRenewalIsFencedOverRealSockets(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FencedLockUncertainRenewalIsFencedOverRealSockets")
}
func TestFencingTokensKeepFullInt64Precision(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FencingTokensKeepFullInt64Precision")
}
func TestFencingTokensStartAtOneAndContendersLeaveTheCounterAlone(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FencingTokensStartAtOneAndContendersLeaveTheCounterAlone")
}
func TestInvalidCounterIsAServerErrorWithoutLeaseAndUnchanged(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "InvalidCounterIsAServerErrorWithoutLeaseAndUnchanged")
}
func TestLeaseLocksRefuseWithReplicas(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LeaseLocksRefuseWithReplicas")
}
func TestLostLeaseGoesToTheNextOwnerAtTokenPlusOneAndTheStaleOwnerIsRefused(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LostLeaseGoesToTheNextOwnerAtTokenPlusOneAndTheStaleOwnerIsRefused")
}
func TestMalformedReplyIsAProtocolErrorAndReleasesTheLease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "MalformedReplyIsAProtocolErrorAndReleasesTheLease")
}
func TestPrefixesApplyToBothKeysForEveryOperation(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PrefixesApplyToBothKeysForEveryOperation")
}
func TestRealClusterHashTaggedPairsAcquireAndCrossSlotIsRefused(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "RealClusterHashTaggedPairsAcquireAndCrossSlotIsRefused")
}
func TestReplyAfterTheLeaseCouldHaveExpiredIsAcquiredTooLateAndCleanedUp(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ReplyAfterTheLeaseCouldHaveExpiredIsAcquiredTooLateAndCleanedUp")
}
func TestSubMillisecondDurationsRoundUp(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "SubMillisecondDurationsRoundUp")
}
func TestTwoClientsRacingGetExactlyOneWinner(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "TwoClientsRacingGetExactlyOneWinner")
}
func TestValidationFailsBeforeAnythingIsSent(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ValidationFailsBeforeAnythingIsSent")
}
func TestWaitingAcquirePollsWithAFreshTokenUntilReleased(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "WaitingAcquirePollsWithAFreshTokenUntilReleased")
}
