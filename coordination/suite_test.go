package coordination_test

import (
	"testing"

	"github.com/respire-go/respire/internal/leasesuite"
)

// The behaviour suite (internal/leasesuite) on rueidis: one test per case,
// Test<case name>, each listed under its rule in docs/rules.md; the goredis
// module runs the same cases on go-redis (goredis.TestGoRedisLeaseSuite_EveryCase).

func TestAcceptedAcquisitionIsNotReplayedAfterCancellation(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "AcceptedAcquisitionIsNotReplayedAfterCancellation")
}
func TestAcceptedAcquisitionIsNotReplayedAfterDisconnect(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "AcceptedAcquisitionIsNotReplayedAfterDisconnect")
}
func TestCancellationAfterASuccessfulReplyReleasesTheLease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "CancellationAfterASuccessfulReplyReleasesTheLease")
}
func TestConcurrentReleasesOfAFencedLockShareOneDelete(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ConcurrentReleasesOfAFencedLockShareOneDelete")
}
func TestCrossSlotPairIsRefusedInClusterModeAndHashTagsWork(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "CrossSlotPairIsRefusedInClusterModeAndHashTagsWork")
}
func TestErrorsReadWithOnePrefixAndMatchLeasesSentinels(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ErrorsReadWithOnePrefixAndMatchLeasesSentinels")
}
func TestFencedLockContextEndsOnReleaseAndOnExpiry(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "FencedLockContextEndsOnReleaseAndOnExpiry")
}
func TestFencedLockKeepAliveRenewsUntilARenewalIsRefused(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "FencedLockKeepAliveRenewsUntilARenewalIsRefused")
}
func TestFencedLockKeepAliveStartedLaterAndStopped(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "FencedLockKeepAliveStartedLaterAndStopped")
}
func TestFencedLockKeepAliveSurvivesAConnectionReset(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "FencedLockKeepAliveSurvivesAConnectionReset")
}
func TestFencedLockUncertainRenewalIsFencedOverRealSockets(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "FencedLockUncertainRenewalIsFencedOverRealSockets")
}
func TestFencingTokensKeepFullInt64Precision(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "FencingTokensKeepFullInt64Precision")
}
func TestFencingTokensStartAtOneAndContendersLeaveTheCounterAlone(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "FencingTokensStartAtOneAndContendersLeaveTheCounterAlone")
}
func TestInvalidCounterIsAServerErrorWithoutLeaseAndUnchanged(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "InvalidCounterIsAServerErrorWithoutLeaseAndUnchanged")
}
func TestLeaseLocksRefuseWithReplicas(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "LeaseLocksRefuseWithReplicas")
}
func TestLostLeaseGoesToTheNextOwnerAtTokenPlusOneAndTheStaleOwnerIsRefused(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "LostLeaseGoesToTheNextOwnerAtTokenPlusOneAndTheStaleOwnerIsRefused")
}
func TestMalformedReplyIsAProtocolErrorAndReleasesTheLease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "MalformedReplyIsAProtocolErrorAndReleasesTheLease")
}
func TestPrefixesApplyToBothKeysForEveryOperation(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PrefixesApplyToBothKeysForEveryOperation")
}
func TestRealClusterHashTaggedPairsAcquireAndCrossSlotIsRefused(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "RealClusterHashTaggedPairsAcquireAndCrossSlotIsRefused")
}
func TestReplyAfterTheLeaseCouldHaveExpiredIsAcquiredTooLateAndCleanedUp(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ReplyAfterTheLeaseCouldHaveExpiredIsAcquiredTooLateAndCleanedUp")
}
func TestSubMillisecondDurationsRoundUp(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "SubMillisecondDurationsRoundUp")
}
func TestTwoClientsRacingGetExactlyOneWinner(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "TwoClientsRacingGetExactlyOneWinner")
}
func TestValidationFailsBeforeAnythingIsSent(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ValidationFailsBeforeAnythingIsSent")
}
func TestWaitingAcquirePollsWithAFreshTokenUntilReleased(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "WaitingAcquirePollsWithAFreshTokenUntilReleased")
}
