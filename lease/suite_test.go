package lease_test

import (
	"testing"

	"github.com/respire-go/respire/internal/leasesuite"
)

// The behaviour suite (internal/leasesuite) on rueidis: one test per case,
// Test<case name>, each listed under its rule in docs/rules.md; the goredis
// module runs the same cases on go-redis (goredis.TestGoRedisLeaseSuite_EveryCase).

func TestALockIsAcquiredRenewedAndReleasedOnOneConnection(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ALockIsAcquiredRenewedAndReleasedOnOneConnection")
}
func TestAbandonedAcquisitionIsCleanedUp_AnUncertainSetsSocketIsFencedFirst(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "AbandonedAcquisitionIsCleanedUp_AnUncertainSetsSocketIsFencedFirst")
}
func TestAcquireValidatesBeforeSending(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "AcquireValidatesBeforeSending")
}
func TestAcquiredTooLate_AReplyAfterTheLeaseCouldHaveExpiredHandsOutNoLockAndCleansUp(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "AcquiredTooLate_AReplyAfterTheLeaseCouldHaveExpiredHandsOutNoLockAndCleansUp")
}
func TestAcquisitionContextDoesNotControlTheOwnedKeepAlive(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "AcquisitionContextDoesNotControlTheOwnedKeepAlive")
}
func TestAcquisitionFollowsAMovedSlot(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "AcquisitionFollowsAMovedSlot")
}
func TestAcquisitionMetrics_ContentionIsCountedTimedAndTraced(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "AcquisitionMetrics_ContentionIsCountedTimedAndTraced")
}
func TestBoundedByContext_ReleaseReturnsWhenItsContextEnds(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "BoundedByContext_ReleaseReturnsWhenItsContextEnds")
}
func TestBoundedClose_CloseContextReturnsTheContextsCauseWhenItEndsFirst(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "BoundedClose_CloseContextReturnsTheContextsCauseWhenItEndsFirst")
}
func TestBoundedClose_CloseContextWithAnEndedContextStillLetsTheLeaseEnd(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "BoundedClose_CloseContextWithAnEndedContextStillLetsTheLeaseEnd")
}
func TestBoundedClose_CloseOfAKeepAliveLockWithARenewalStalledReturnsWithinTheBound(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "BoundedClose_CloseOfAKeepAliveLockWithARenewalStalledReturnsWithinTheBound")
}
func TestBoundedClose_CloseReturnsWithinTheRemainingLeasePlusFenceTimeoutOnAPausedServer(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "BoundedClose_CloseReturnsWithinTheRemainingLeasePlusFenceTimeoutOnAPausedServer")
}
func TestCancelAfterTheSetWasSentNeverReturnsTheHandleAndDeletesTheOrphan(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "CancelAfterTheSetWasSentNeverReturnsTheHandleAndDeletesTheOrphan")
}
func TestCancelInterruptsThePollingSleep(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "CancelInterruptsThePollingSleep")
}
func TestClientClosed_ARenewalRetriedByKeyIsNotSentAfterTheDetection(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ClientClosed_ARenewalRetriedByKeyIsNotSentAfterTheDetection")
}
func TestClientClosed_DetectedEvenInAProcessYoungerThanTheIdleCheck(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ClientClosed_DetectedEvenInAProcessYoungerThanTheIdleCheck")
}
func TestClientClosed_KeepAlivesEndWithErrClientClosedAndNoRenewalReachesTheServerAfter(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ClientClosed_KeepAlivesEndWithErrClientClosedAndNoRenewalReachesTheServerAfter")
}
func TestCloseStopsTheKeepAliveFirstThenReleases(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "CloseStopsTheKeepAliveFirstThenReleases")
}
func TestCloseSwallowsConnectionErrors(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "CloseSwallowsConnectionErrors")
}
func TestConcurrentReleasesShareOneDelete(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ConcurrentReleasesShareOneDelete")
}
func TestContendedAttemptSendsOneSetAndAcquireSaysNotAcquired(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ContendedAttemptSendsOneSetAndAcquireSaysNotAcquired")
}
func TestContextEndsByTheEarliestExpiryInFlight_AShorteningResetWithASlowReply(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ContextEndsByTheEarliestExpiryInFlight_AShorteningResetWithASlowReply")
}
func TestDeadlineLossSaysWhy_ARealReplicaOfMidRun(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "DeadlineLossSaysWhy_ARealReplicaOfMidRun")
}
func TestDeadlineLossSaysWhy_EveryRenewalAnsweredReadOnly(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "DeadlineLossSaysWhy_EveryRenewalAnsweredReadOnly")
}
func TestDriftMargin_TheKeepAliveContextEndsBeforeTheServersLease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "DriftMargin_TheKeepAliveContextEndsBeforeTheServersLease")
}
func TestEstimatesCountFromBeforeTheSend(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "EstimatesCountFromBeforeTheSend")
}
func TestExtensionWireSequencePerServer(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ExtensionWireSequencePerServer")
}
func TestFallbackMetrics_EachFallbackIsCountedPerCapabilityAndServer(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "FallbackMetrics_EachFallbackIsCountedPerCapabilityAndServer")
}
func TestFenceBeforeReturn_ARenewalNotYetHandedOffIsNeverSent(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "FenceBeforeReturn_ARenewalNotYetHandedOffIsNeverSent")
}
func TestFenceBeforeReturn_CloseOfALostHandleWaitsForItsFence(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "FenceBeforeReturn_CloseOfALostHandleWaitsForItsFence")
}
func TestFenceBeforeReturn_TheFenceHitsTheSessionThatCarriedTheCommandAfterARedirect(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "FenceBeforeReturn_TheFenceHitsTheSessionThatCarriedTheCommandAfterARedirect")
}
func TestFenceMetrics_AnUncertainRenewalIsFencedCountedAndTraced(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "FenceMetrics_AnUncertainRenewalIsFencedCountedAndTraced")
}
func TestJoinerWhoseContextEndsStopsWaitingWhileTheSharedReleaseGoesOn(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "JoinerWhoseContextEndsStopsWaitingWhileTheSharedReleaseGoesOn")
}
func TestKeepAliveCausesAreDistinct(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "KeepAliveCausesAreDistinct")
}
func TestKeepAliveFollowsAMovedSlot(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "KeepAliveFollowsAMovedSlot")
}
func TestKeepAliveIsCancelledAtTheLeaseDeadlineThenTheSessionIsFenced(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "KeepAliveIsCancelledAtTheLeaseDeadlineThenTheSessionIsFenced")
}
func TestKeepAliveOnALockNoLongerHeldIsRefused(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "KeepAliveOnALockNoLongerHeldIsRefused")
}
func TestKeepAliveOnANewSessionWithoutKillPermissionFailsWithThePermissionError(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "KeepAliveOnANewSessionWithoutKillPermissionFailsWithThePermissionError")
}
func TestKeepAliveReleasesItsContext_EndedLocksAreCollectable(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "KeepAliveReleasesItsContext_EndedLocksAreCollectable")
}
func TestKeepAliveRenewalLostWithItsConnectionIsFencedAndTheLockRecovers(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "KeepAliveRenewalLostWithItsConnectionIsFencedAndTheLockRecovers")
}
func TestKeepAliveRenewsAtHalfTheLeaseWithTheLatestDuration(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "KeepAliveRenewsAtHalfTheLeaseWithTheLatestDuration")
}
func TestKeepAliveRenewsOnAFreshSessionAfterTheIdleOneWasKilled(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "KeepAliveRenewsOnAFreshSessionAfterTheIdleOneWasKilled")
}
func TestKeepAliveStopWaitsForTheRenewalInFlightAndDoesNotRelease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "KeepAliveStopWaitsForTheRenewalInFlightAndDoesNotRelease")
}
func TestKeepAliveStopsWhenItsContextEnds(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "KeepAliveStopsWhenItsContextEnds")
}
func TestKeyPrefixAppliesToEveryKeyIncludingLuaKeys(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "KeyPrefixAppliesToEveryKeyIncludingLuaKeys")
}
func TestKnownClosedSessionIsSkipped_AfterARestartOnTheSamePort(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "KnownClosedSessionIsSkipped_AfterARestartOnTheSamePort")
}
func TestKnownClosedSessionIsSkipped_AfterTheServerClosedEveryConnection(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "KnownClosedSessionIsSkipped_AfterTheServerClosedEveryConnection")
}
func TestLeaseContextErrIsExact_APausedProcessSeesTheEndOnItsFirstCheck(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "LeaseContextErrIsExact_APausedProcessSeesTheEndOnItsFirstCheck")
}
func TestLeaseContextErrIsExact_AfterAPausePastTheLease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "LeaseContextErrIsExact_AfterAPausePastTheLease")
}
func TestLeaseDurationBounds_DurationsNearTheMaximumAreRefusedBeforeSending(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "LeaseDurationBounds_DurationsNearTheMaximumAreRefusedBeforeSending")
}
func TestLeastPrivilegeUserCanUseEveryRawOperation(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "LeastPrivilegeUserCanUseEveryRawOperation")
}
func TestLockContext_CreatedAfterTheLeaseEndedIsAlreadyCancelledWithItsCause(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "LockContext_CreatedAfterTheLeaseEndedIsAlreadyCancelledWithItsCause")
}
func TestLockContext_EndsWithErrExpiredAtTheEstimateWithoutKeepAlive(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "LockContext_EndsWithErrExpiredAtTheEstimateWithoutKeepAlive")
}
func TestLockContext_EndsWithErrReleasedOnRelease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "LockContext_EndsWithErrReleasedOnRelease")
}
func TestLockContext_EndsWithLossDeadlineInFlightWhenARenewalIsStalledAtTheDeadline(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "LockContext_EndsWithLossDeadlineInFlightWhenARenewalIsStalledAtTheDeadline")
}
func TestLockContext_EndsWithLossDeadlineWhenNoRenewalIsConfirmedByTheDeadline(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "LockContext_EndsWithLossDeadlineWhenNoRenewalIsConfirmedByTheDeadline")
}
func TestLockContext_EndsWithLossRefusedWhenAnotherOwnerTookTheKey(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "LockContext_EndsWithLossRefusedWhenAnotherOwnerTookTheKey")
}
func TestLockContext_EndsWithLossRenewalUnknownWhenARenewalsOutcomeIsUnknown(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "LockContext_EndsWithLossRenewalUnknownWhenARenewalsOutcomeIsUnknown")
}
func TestLockContext_KeepAliveStopDoesNotEndItAndTheLeaseThenExpiresAtItsEstimate(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "LockContext_KeepAliveStopDoesNotEndItAndTheLeaseThenExpiresAtItsEstimate")
}
func TestLockContext_ReturnsTheSameContextEveryTime(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "LockContext_ReturnsTheSameContextEveryTime")
}
func TestLossMetrics_ARefusedRenewalCountsALossWithItsCause(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "LossMetrics_ARefusedRenewalCountsALossWithItsCause")
}
func TestManagedLifecycleOnRealRedis70(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ManagedLifecycleOnRealRedis70")
}
func TestManagedLocksOnMixedVersionClusterRenewAndReleaseOnTheirNode(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ManagedLocksOnMixedVersionClusterRenewAndReleaseOnTheirNode")
}
func TestManagedRenewalWithoutClientPermissionNamesTheMissingPermission(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ManagedRenewalWithoutClientPermissionNamesTheMissingPermission")
}
func TestMissingPermissionReturnsTheErrorWithoutTryingAnotherImplementation(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "MissingPermissionReturnsTheErrorWithoutTryingAnotherImplementation")
}
func TestNotHeldPastTheEstimate_ALockWhoseEstimateRanOutIsNotHeld(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "NotHeldPastTheEstimate_ALockWhoseEstimateRanOutIsNotHeld")
}
func TestOwnedKeepAlive_DoesNotKeepTheAcquisitionContextAlive(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "OwnedKeepAlive_DoesNotKeepTheAcquisitionContextAlive")
}
func TestOwnerTokenReadsExactBytes(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "OwnerTokenReadsExactBytes")
}
func TestPausedHolderHelper(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PausedHolderHelper")
}
func TestPollJitter_PollingSleepsOfALocksAreDrawnUniformly(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PollJitter_PollingSleepsOfALocksAreDrawnUniformly")
}
func TestPushChangeDuringReadIsSeen_AStaleHolderReadWakesTheWaiter(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushChangeDuringReadIsSeen_AStaleHolderReadWakesTheWaiter")
}
func TestPushChangeDuringReadIsSeen_AnAbandonedReadIsMadeAgainForTheOthers(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushChangeDuringReadIsSeen_AnAbandonedReadIsMadeAgainForTheOthers")
}
func TestPushDetectsLoss_CloseDropsTheQueuedHolderReads(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushDetectsLoss_CloseDropsTheQueuedHolderReads")
}
func TestPushDetectsLoss_DetectionLatency(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushDetectsLoss_DetectionLatency")
}
func TestPushDetectsLoss_HolderNeedsNoEntryWhenIdle(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushDetectsLoss_HolderNeedsNoEntryWhenIdle")
}
func TestPushDetectsLoss_HolderReadsAreBatchedPerWatcher(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushDetectsLoss_HolderReadsAreBatchedPerWatcher")
}
func TestPushDetectsLoss_HolderReadsAreBoundedByWorkers(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushDetectsLoss_HolderReadsAreBoundedByWorkers")
}
func TestPushDetectsLoss_NeverRefutesALaterHolder(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushDetectsLoss_NeverRefutesALaterHolder")
}
func TestPushDetectsLoss_ThirdPartyWrite(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushDetectsLoss_ThirdPartyWrite")
}
func TestPushDetectsLoss_TwoHoldersOfOneKeyAreJudgedApart(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushDetectsLoss_TwoHoldersOfOneKeyAreJudgedApart")
}
func TestPushFallsBackToPolling_TrackingDenied(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushFallsBackToPolling_TrackingDenied")
}
func TestPushFollowsTheSlot_ClusterWatchersPerNode(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushFollowsTheSlot_ClusterWatchersPerNode")
}
func TestPushFollowsTheSlot_RealClusterWatchersPerNode(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushFollowsTheSlot_RealClusterWatchersPerNode")
}
func TestPushIgnoresOwnRenewals_NoWakeNoLoss(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushIgnoresOwnRenewals_NoWakeNoLoss")
}
func TestPushSafetyNet_AParkedWaiterPollsAboutOnceASecond(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushSafetyNet_AParkedWaiterPollsAboutOnceASecond")
}
func TestPushSurvivesWatcherReconnect_AReleaseStopsThePendingRetry(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushSurvivesWatcherReconnect_AReleaseStopsThePendingRetry")
}
func TestPushSurvivesWatcherReconnect_AWaitersFailedReadIsTriedAgainSoon(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushSurvivesWatcherReconnect_AWaitersFailedReadIsTriedAgainSoon")
}
func TestPushSurvivesWatcherReconnect_CloseStopsThePendingRetry(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushSurvivesWatcherReconnect_CloseStopsThePendingRetry")
}
func TestPushSurvivesWatcherReconnect_RereadsEveryKey(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushSurvivesWatcherReconnect_RereadsEveryKey")
}
func TestPushSurvivesWatcherReconnect_RetriesABusyNode(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushSurvivesWatcherReconnect_RetriesABusyNode")
}
func TestPushWakesOneWaiterPerRelease_AFailedRearmWakesTheNextWaiter(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushWakesOneWaiterPerRelease_AFailedRearmWakesTheNextWaiter")
}
func TestPushWakesOneWaiterPerRelease_CloseCancelsTheRearm(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushWakesOneWaiterPerRelease_CloseCancelsTheRearm")
}
func TestPushWakesOneWaiterPerRelease_NoStampede(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushWakesOneWaiterPerRelease_NoStampede")
}
func TestPushWakesWaiters_HandOffLatency(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushWakesWaiters_HandOffLatency")
}
func TestPushWakesWaiters_LeastPrivilegeUserWithTracking(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushWakesWaiters_LeastPrivilegeUserWithTracking")
}
func TestPushWakesWaiters_OnRelease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushWakesWaiters_OnRelease")
}
func TestPushWatcherDropWakes_ABusyRealServerRereadsEveryKey(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushWatcherDropWakes_ABusyRealServerRereadsEveryKey")
}
func TestPushWatcherDropWakes_ADidNotRunReplyToCachingRereadsEveryKey(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "PushWatcherDropWakes_ADidNotRunReplyToCachingRereadsEveryKey")
}
func TestRawAPIOnMixedVersionClusterPicksCommandsPerNode(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "RawAPIOnMixedVersionClusterPicksCommandsPerNode")
}
func TestRawTokenAPIRoutesEveryKeyToItsPrimaryOnARealCluster(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "RawTokenAPIRoutesEveryKeyToItsPrimaryOnARealCluster")
}
func TestReleaseCancelledBeforeTheSendLeavesTheLockHeldAndRetryable(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ReleaseCancelledBeforeTheSendLeavesTheLockHeldAndRetryable")
}
func TestReleaseServerErrorKeepsTheLockHeldAndRetryable(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ReleaseServerErrorKeepsTheLockHeldAndRetryable")
}
func TestReleaseStillInFlightAtTheLeaseDeadlineLosesTheLock(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ReleaseStillInFlightAtTheLeaseDeadlineLosesTheLock")
}
func TestReleaseThatMayHaveReachedTheServerLosesTheLockCancelsKeepAliveAndFences(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ReleaseThatMayHaveReachedTheServerLosesTheLockCancelsKeepAliveAndFences")
}
func TestReleaseThenReleaseAgainIsAlreadyReleasedAndSendsNothing(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ReleaseThenReleaseAgainIsAlreadyReleasedAndSendsNothing")
}
func TestReleaseWireSequencePerServer(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ReleaseWireSequencePerServer")
}
func TestReleaseWithoutClientPermissionIsUnfencedAndWarnsOncePerLocks(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ReleaseWithoutClientPermissionIsUnfencedAndWarnsOncePerLocks")
}
func TestRenewingMissingExpiredOrReplacedLockChangesNothing(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "RenewingMissingExpiredOrReplacedLockChangesNothing")
}
func TestResetExpiryAppliesTTLFromNow(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ResetExpiryAppliesTTLFromNow")
}
func TestResetExpiryAppliesTheDurationFromNow(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ResetExpiryAppliesTheDurationFromNow")
}
func TestResetExpiryFalseLosesTheLockAndLaterResetsSendNothing(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ResetExpiryFalseLosesTheLockAndLaterResetsSendNothing")
}
func TestResetTimedOutAfterTheSendIsFencedAndLost(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "ResetTimedOutAfterTheSendIsFencedAndLost")
}
func TestSentinelFailover_SessionsFollowTheNewPrimary(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "SentinelFailover_SessionsFollowTheNewPrimary")
}
func TestStarterCancelledBeforeTheSendHandsTheReleaseToAJoiner(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "StarterCancelledBeforeTheSendHandsTheReleaseToAJoiner")
}
func TestSurvivesConnectionReset_AResetDoesNotLoseAHealthyLock(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "SurvivesConnectionReset_AResetDoesNotLoseAHealthyLock")
}
func TestSurvivesConnectionReset_AnotherLocksFenceDoesNotLoseLocksOnItsSession(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "SurvivesConnectionReset_AnotherLocksFenceDoesNotLoseLocksOnItsSession")
}
func TestTryAcquireThenCloseSendsExactlySetAndOneDelete(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "TryAcquireThenCloseSendsExactlySetAndOneDelete")
}
func TestTwoAcquisitionsGetDifferentTokens(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "TwoAcquisitionsGetDifferentTokens")
}
func TestUncertainLocalClose_AReleaseWhoseSocketIsClosedLocallyIsUncertain(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "UncertainLocalClose_AReleaseWhoseSocketIsClosedLocallyIsUncertain")
}
func TestUncertainLocalClose_AnotherLocksFenceCutsOffAnAcquisition(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "UncertainLocalClose_AnotherLocksFenceCutsOffAnAcquisition")
}
func TestUncertainLocalClose_LocksCloseDuringAReleaseOnAPausedServer(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "UncertainLocalClose_LocksCloseDuringAReleaseOnAPausedServer")
}
func TestUncertainReleaseWithoutClientPermissionIsLostWithoutAFence(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "UncertainReleaseWithoutClientPermissionIsLostWithoutAFence")
}
func TestUncertainResetCancelsKeepAliveThenFencesAfterTheRenewal(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "UncertainResetCancelsKeepAliveThenFencesAfterTheRenewal")
}
func TestUnfencedRenewal_AnInterruptedRenewalEndsTheLockWithoutAFence(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "UnfencedRenewal_AnInterruptedRenewalEndsTheLockWithoutAFence")
}
func TestUnfencedRenewal_ByDefaultAKeepAliveNeedsClientPermission(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "UnfencedRenewal_ByDefaultAKeepAliveNeedsClientPermission")
}
func TestUnfencedRenewal_KeepAliveRenewsForAUserWithoutClientPermission(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "UnfencedRenewal_KeepAliveRenewsForAUserWithoutClientPermission")
}
func TestUnreturnedHandleEnds_ARefusedReleaseLeavesNoRenewalAndTheHandleEndsAtItsDeadline(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "UnreturnedHandleEnds_ARefusedReleaseLeavesNoRenewalAndTheHandleEndsAtItsDeadline")
}
func TestUnreturnedHandleEnds_AnAbandonedKeepAliveAcquisitionArmsNoRenewal(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "UnreturnedHandleEnds_AnAbandonedKeepAliveAcquisitionArmsNoRenewal")
}
func TestVerifyStillHeldAsksThePrimaryAndChangesNoState(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "VerifyStillHeldAsksThePrimaryAndChangesNoState")
}
func TestWaitRidesOutTransportErrors_AContendedTryWhoseReplyWasLostWaitsOn(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "WaitRidesOutTransportErrors_AContendedTryWhoseReplyWasLostWaitsOn")
}
func TestWaitRidesOutTransportErrors_ADefiniteRefusalEndsTheWaitAtOnce(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "WaitRidesOutTransportErrors_ADefiniteRefusalEndsTheWaitAtOnce")
}
func TestWaitRidesOutTransportErrors_ADidNotRunReplyIsTriedAgain(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "WaitRidesOutTransportErrors_ADidNotRunReplyIsTriedAgain")
}
func TestWaitRidesOutTransportErrors_ARestartOnTheSamePortDoesNotEndTheWait(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "WaitRidesOutTransportErrors_ARestartOnTheSamePortDoesNotEndTheWait")
}
func TestWaitRidesOutTransportErrors_ASetThatNeverArrivedIsSettledAndTriedAgain(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "WaitRidesOutTransportErrors_ASetThatNeverArrivedIsSettledAndTriedAgain")
}
func TestWaitRidesOutTransportErrors_ASetWhoseReplyWasLostIsSettledAndAcquired(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "WaitRidesOutTransportErrors_ASetWhoseReplyWasLostIsSettledAndAcquired")
}
func TestWaitRidesOutTransportErrors_ASettlingSlowerThanTheLeaseIsNotHandedOut(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "WaitRidesOutTransportErrors_ASettlingSlowerThanTheLeaseIsNotHandedOut")
}
func TestWaitRidesOutTransportErrors_TheBudgetEndsWithTheLastError(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "WaitRidesOutTransportErrors_TheBudgetEndsWithTheLastError")
}
func TestWaitRidesOutTransportErrors_TheLeaseCountsFromTheFirstSend(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "WaitRidesOutTransportErrors_TheLeaseCountsFromTheFirstSend")
}
func TestWaitUntilDone_AcquiresAsSoonAsTheHolderReleases(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "WaitUntilDone_AcquiresAsSoonAsTheHolderReleases")
}
func TestWaitUntilDone_KeepsPollingUntilTheContextEndsAndReturnsItsCause(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "WaitUntilDone_KeepsPollingUntilTheContextEndsAndReturnsItsCause")
}
func TestWaitingAcquisitionCutsTheLastSleepToTheBudgetAndTriesOnceMore(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "WaitingAcquisitionCutsTheLastSleepToTheBudgetAndTriesOnceMore")
}
func TestWaitingAcquisitionPollsEveryRetryEveryUntilFree(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "WaitingAcquisitionPollsEveryRetryEveryUntilFree")
}
func TestWithoutPush_SendsNoTracking(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "WithoutPush_SendsNoTracking")
}
func TestWrongTypeIsRefusedAtOnce_WaitingAcquisitionsOfEveryKind(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "WrongTypeIsRefusedAtOnce_WaitingAcquisitionsOfEveryKind")
}
func TestSemaphoreLimitIsStored_NoKeyBesideTheHoldersLiftsTheLimit(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "SemaphoreLimitIsStored_NoKeyBesideTheHoldersLiftsTheLimit")
}
func TestDidNotRunReplies_AnOOMRenewalIsRetriedUntilTheDeadline(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "DidNotRunReplies_AnOOMRenewalIsRetriedUntilTheDeadline")
}
func TestLeastPrivilegeAcl_EveryDocumentedLineRunsItsOperations(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "LeastPrivilegeAcl_EveryDocumentedLineRunsItsOperations")
}
func TestFairGrantsInTicketOrder_WaitersAcquireInTheOrderTheyQueued(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "FairGrantsInTicketOrder_WaitersAcquireInTheOrderTheyQueued")
}
func TestFairDeadWaiterCostsItsWaiterLease_AGrantToADeadWaiterLapsesAtItsWaiterLease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "FairDeadWaiterCostsItsWaiterLease_AGrantToADeadWaiterLapsesAtItsWaiterLease")
}
func TestFairNonFairNeverTakesAReservation_AndOvertakingIsCounted(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "FairNonFairNeverTakesAReservation_AndOvertakingIsCounted")
}
func TestFairGrantsInTicketOrder_SemaphorePermitsAndRWLockHolds(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "FairGrantsInTicketOrder_SemaphorePermitsAndRWLockHolds")
}
func TestFairWaiterLeavesWhenItsWaitEnds(t *testing.T) {
	leasesuite.Run(t, leasesuite.Rueidis, "FairWaiterLeavesWhenItsWaitEnds")
}
