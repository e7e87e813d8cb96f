package lease_test

import (
	"testing"

	"github.com/respire-go/respire/internal/leasesuite"
)

// The behaviour suite (internal/leasesuite) on the root module's own client
// (internal/wire, leasesuite.Wire): one test per case, Test<case name>, each
// listed under its rule in docs/rules.md; each adapter module runs the same
// cases on its client (rueidislease.TestRueidisLeaseSuite_EveryCase,
// goredis.TestGoRedisLeaseSuite_EveryCase).

func TestALockIsAcquiredRenewedAndReleasedOnOneConnection(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ALockIsAcquiredRenewedAndReleasedOnOneConnection")
}
func TestAbandonedAcquisitionIsCleanedUp_AnUncertainSetsSocketIsFencedFirst(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "AbandonedAcquisitionIsCleanedUp_AnUncertainSetsSocketIsFencedFirst")
}
func TestAcquireValidatesBeforeSending(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "AcquireValidatesBeforeSending")
}
func TestAcquiredTooLate_AReplyAfterTheLeaseCouldHaveExpiredHandsOutNoLockAndCleansUp(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "AcquiredTooLate_AReplyAfterTheLeaseCouldHaveExpiredHandsOutNoLockAndCleansUp")
}
func TestAcquisitionContextDoesNotControlTheOwnedKeepAlive(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "AcquisitionContextDoesNotControlTheOwnedKeepAlive")
}
func TestAcquisitionFollowsAMovedSlot(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "AcquisitionFollowsAMovedSlot")
}
func TestAcquisitionMetrics_ContentionIsCountedTimedAndTraced(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "AcquisitionMetrics_ContentionIsCountedTimedAndTraced")
}
func TestBoundedByContext_ReleaseReturnsWhenItsContextEnds(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "BoundedByContext_ReleaseReturnsWhenItsContextEnds")
}
func TestBoundedClose_CloseContextReturnsTheContextsCauseWhenItEndsFirst(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "BoundedClose_CloseContextReturnsTheContextsCauseWhenItEndsFirst")
}
func TestBoundedClose_CloseContextWithAnEndedContextStillLetsTheLeaseEnd(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "BoundedClose_CloseContextWithAnEndedContextStillLetsTheLeaseEnd")
}
func TestBoundedClose_CloseOfAKeepAliveLockWithARenewalStalledReturnsWithinTheBound(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "BoundedClose_CloseOfAKeepAliveLockWithARenewalStalledReturnsWithinTheBound")
}
func TestBoundedClose_CloseReturnsWithinTheRemainingLeasePlusFenceTimeoutOnAPausedServer(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "BoundedClose_CloseReturnsWithinTheRemainingLeasePlusFenceTimeoutOnAPausedServer")
}
func TestCancelAfterTheSetWasSentNeverReturnsTheHandleAndDeletesTheOrphan(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "CancelAfterTheSetWasSentNeverReturnsTheHandleAndDeletesTheOrphan")
}
func TestCancelInterruptsThePollingSleep(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "CancelInterruptsThePollingSleep")
}
func TestClientClosed_ARenewalRetriedByKeyIsNotSentAfterTheDetection(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ClientClosed_ARenewalRetriedByKeyIsNotSentAfterTheDetection")
}
func TestClientClosed_DetectedEvenInAProcessYoungerThanTheIdleCheck(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ClientClosed_DetectedEvenInAProcessYoungerThanTheIdleCheck")
}
func TestClientClosed_KeepAlivesEndWithErrClientClosedAndNoRenewalReachesTheServerAfter(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ClientClosed_KeepAlivesEndWithErrClientClosedAndNoRenewalReachesTheServerAfter")
}
func TestCloseStopsTheKeepAliveFirstThenReleases(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "CloseStopsTheKeepAliveFirstThenReleases")
}
func TestCloseSwallowsConnectionErrors(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "CloseSwallowsConnectionErrors")
}
func TestConcurrentReleasesShareOneDelete(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ConcurrentReleasesShareOneDelete")
}
func TestContendedAttemptSendsOneSetAndAcquireSaysNotAcquired(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ContendedAttemptSendsOneSetAndAcquireSaysNotAcquired")
}
func TestContextEndsByTheEarliestExpiryInFlight_AShorteningResetWithASlowReply(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ContextEndsByTheEarliestExpiryInFlight_AShorteningResetWithASlowReply")
}
func TestDeadlineLossSaysWhy_ARealReplicaOfMidRun(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "DeadlineLossSaysWhy_ARealReplicaOfMidRun")
}
func TestDeadlineLossSaysWhy_EveryRenewalAnsweredReadOnly(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "DeadlineLossSaysWhy_EveryRenewalAnsweredReadOnly")
}
func TestDoRunsUnderTheLock_NoLiveHandleAfterARefusedRelease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "DoRunsUnderTheLock_NoLiveHandleAfterARefusedRelease")
}
func TestDoRunsUnderTheLock_NoLiveHandleAfterAReleaseNotSent(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "DoRunsUnderTheLock_NoLiveHandleAfterAReleaseNotSent")
}
func TestDriftMargin_TheKeepAliveContextEndsBeforeTheServersLease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "DriftMargin_TheKeepAliveContextEndsBeforeTheServersLease")
}
func TestEstimatesCountFromBeforeTheSend(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "EstimatesCountFromBeforeTheSend")
}
func TestExtensionWireSequencePerServer(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ExtensionWireSequencePerServer")
}
func TestFailedProbeIsNotSent_OnAPausedServer(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FailedProbeIsNotSent_OnAPausedServer")
}
func TestFailedProbeIsNotSent_TheLockStaysHeldAndARetrySucceeds(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FailedProbeIsNotSent_TheLockStaysHeldAndARetrySucceeds")
}
func TestFallbackMetrics_EachFallbackIsCountedPerCapabilityAndServer(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FallbackMetrics_EachFallbackIsCountedPerCapabilityAndServer")
}
func TestFenceBeforeReturn_AnUncertainReleaseReturnsOnlyOnceItsSocketIsKilled(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FenceBeforeReturn_AnUncertainReleaseReturnsOnlyOnceItsSocketIsKilled")
}
func TestClientClosed_EveryCallFailsAtOnceNamingTheClientAndSendsNothing(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ClientClosed_EveryCallFailsAtOnceNamingTheClientAndSendsNothing")
}
func TestFenceBeforeReturn_ARenewalNotYetHandedOffIsNeverSent(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FenceBeforeReturn_ARenewalNotYetHandedOffIsNeverSent")
}
func TestFenceBeforeReturn_CloseOfALostHandleWaitsForItsFence(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FenceBeforeReturn_CloseOfALostHandleWaitsForItsFence")
}
func TestFenceBeforeReturn_TheFenceHitsTheSessionThatCarriedTheCommandAfterARedirect(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FenceBeforeReturn_TheFenceHitsTheSessionThatCarriedTheCommandAfterARedirect")
}
func TestFenceMetrics_AnUncertainRenewalIsFencedCountedAndTraced(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FenceMetrics_AnUncertainRenewalIsFencedCountedAndTraced")
}
func TestHeldGauge_ASetConfirmedBySettlingCountsOnce(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "HeldGauge_ASetConfirmedBySettlingCountsOnce")
}
func TestJoinerWhoseContextEndsStopsWaitingWhileTheSharedReleaseGoesOn(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "JoinerWhoseContextEndsStopsWaitingWhileTheSharedReleaseGoesOn")
}
func TestKeepAliveCausesAreDistinct(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "KeepAliveCausesAreDistinct")
}
func TestKeepAliveFollowsAMovedSlot(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "KeepAliveFollowsAMovedSlot")
}
func TestKeepAliveIsCancelledAtTheLeaseDeadlineThenTheSessionIsFenced(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "KeepAliveIsCancelledAtTheLeaseDeadlineThenTheSessionIsFenced")
}
func TestKeepAliveOnALockNoLongerHeldIsRefused(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "KeepAliveOnALockNoLongerHeldIsRefused")
}
func TestKeepAliveOnANewSessionWithoutKillPermissionFailsWithThePermissionError(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "KeepAliveOnANewSessionWithoutKillPermissionFailsWithThePermissionError")
}
func TestKeepAliveReleasesItsContext_EndedLocksAreCollectable(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "KeepAliveReleasesItsContext_EndedLocksAreCollectable")
}
func TestKeepAliveRenewalLostWithItsConnectionIsFencedAndTheLockRecovers(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "KeepAliveRenewalLostWithItsConnectionIsFencedAndTheLockRecovers")
}
func TestKeepAliveRenewsAtHalfTheLeaseWithTheLatestDuration(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "KeepAliveRenewsAtHalfTheLeaseWithTheLatestDuration")
}
func TestKeepAliveRenewsOnAFreshSessionAfterTheIdleOneWasKilled(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "KeepAliveRenewsOnAFreshSessionAfterTheIdleOneWasKilled")
}
func TestKeepAliveStopWaitsForTheRenewalInFlightAndDoesNotRelease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "KeepAliveStopWaitsForTheRenewalInFlightAndDoesNotRelease")
}
func TestKeepAliveStopsWhenItsContextEnds(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "KeepAliveStopsWhenItsContextEnds")
}
func TestKeyPrefixAppliesToEveryKeyIncludingLuaKeys(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "KeyPrefixAppliesToEveryKeyIncludingLuaKeys")
}
func TestKnownClosedSessionIsSkipped_AfterARestartOnTheSamePort(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "KnownClosedSessionIsSkipped_AfterARestartOnTheSamePort")
}
func TestKnownClosedSessionIsSkipped_AfterTheServerClosedEveryConnection(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "KnownClosedSessionIsSkipped_AfterTheServerClosedEveryConnection")
}
func TestLeaseContextErrIsExact_APausedKeepAliveHolderSeesTheEndOnItsFirstCheck(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LeaseContextErrIsExact_APausedKeepAliveHolderSeesTheEndOnItsFirstCheck")
}
func TestLeaseContextErrIsExact_APausedProcessSeesTheEndOnItsFirstCheck(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LeaseContextErrIsExact_APausedProcessSeesTheEndOnItsFirstCheck")
}
func TestLeaseContextErrIsExact_AfterAPausePastTheLease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LeaseContextErrIsExact_AfterAPausePastTheLease")
}
func TestLeaseContextErrIsExact_KeepAliveAfterAPausePastTheLease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LeaseContextErrIsExact_KeepAliveAfterAPausePastTheLease")
}
func TestLeaseDurationBounds_DurationsNearTheMaximumAreRefusedBeforeSending(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LeaseDurationBounds_DurationsNearTheMaximumAreRefusedBeforeSending")
}
func TestLeastPrivilegeUserCanUseEveryRawOperation(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LeastPrivilegeUserCanUseEveryRawOperation")
}
func TestLockContext_CreatedAfterTheLeaseEndedIsAlreadyCancelledWithItsCause(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LockContext_CreatedAfterTheLeaseEndedIsAlreadyCancelledWithItsCause")
}
func TestLockContext_EndsWithErrExpiredAtTheEstimateWithoutKeepAlive(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LockContext_EndsWithErrExpiredAtTheEstimateWithoutKeepAlive")
}
func TestLockContext_EndsWithErrReleasedOnRelease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LockContext_EndsWithErrReleasedOnRelease")
}
func TestLockContext_EndsWithLossDeadlineInFlightWhenARenewalIsStalledAtTheDeadline(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LockContext_EndsWithLossDeadlineInFlightWhenARenewalIsStalledAtTheDeadline")
}
func TestLockContext_EndsWithLossDeadlineWhenNoRenewalIsConfirmedByTheDeadline(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LockContext_EndsWithLossDeadlineWhenNoRenewalIsConfirmedByTheDeadline")
}
func TestLockContext_EndsWithLossRefusedWhenAnotherOwnerTookTheKey(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LockContext_EndsWithLossRefusedWhenAnotherOwnerTookTheKey")
}
func TestLockContext_EndsWithLossRenewalUnknownWhenARenewalsOutcomeIsUnknown(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LockContext_EndsWithLossRenewalUnknownWhenARenewalsOutcomeIsUnknown")
}
func TestLockContext_KeepAliveStopDoesNotEndItAndTheLeaseThenExpiresAtItsEstimate(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LockContext_KeepAliveStopDoesNotEndItAndTheLeaseThenExpiresAtItsEstimate")
}
func TestLockContext_ReturnsTheSameContextEveryTime(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LockContext_ReturnsTheSameContextEveryTime")
}
func TestLossMetrics_ARefusedRenewalCountsALossWithItsCause(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LossMetrics_ARefusedRenewalCountsALossWithItsCause")
}
func TestManagedLifecycleOnRealRedis70(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ManagedLifecycleOnRealRedis70")
}
func TestManagedLocksOnMixedVersionClusterRenewAndReleaseOnTheirNode(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ManagedLocksOnMixedVersionClusterRenewAndReleaseOnTheirNode")
}
func TestManagedRenewalWithoutClientPermissionNamesTheMissingPermission(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ManagedRenewalWithoutClientPermissionNamesTheMissingPermission")
}
func TestMissingPermissionReturnsTheErrorWithoutTryingAnotherImplementation(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "MissingPermissionReturnsTheErrorWithoutTryingAnotherImplementation")
}
func TestNotHeldPastTheEstimate_ALockWhoseEstimateRanOutIsNotHeld(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "NotHeldPastTheEstimate_ALockWhoseEstimateRanOutIsNotHeld")
}
func TestOwnedKeepAlive_DoesNotKeepTheAcquisitionContextAlive(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "OwnedKeepAlive_DoesNotKeepTheAcquisitionContextAlive")
}
func TestOwnerTokenReadsExactBytes(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "OwnerTokenReadsExactBytes")
}
func TestPausedHolderHelper(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PausedHolderHelper")
}
func TestPollJitter_PollingSleepsOfALocksAreDrawnUniformly(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PollJitter_PollingSleepsOfALocksAreDrawnUniformly")
}
func TestPushChangeDuringReadIsSeen_AStaleHolderReadWakesTheWaiter(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushChangeDuringReadIsSeen_AStaleHolderReadWakesTheWaiter")
}
func TestPushChangeDuringReadIsSeen_AnAbandonedReadIsMadeAgainForTheOthers(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushChangeDuringReadIsSeen_AnAbandonedReadIsMadeAgainForTheOthers")
}
func TestPushDetectsLoss_CloseDropsTheQueuedHolderReads(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushDetectsLoss_CloseDropsTheQueuedHolderReads")
}
func TestPushDetectsLoss_DetectionLatency(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushDetectsLoss_DetectionLatency")
}
func TestPushDetectsLoss_HolderNeedsNoEntryWhenIdle(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushDetectsLoss_HolderNeedsNoEntryWhenIdle")
}
func TestPushDetectsLoss_HolderReadsAreBatchedPerWatcher(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushDetectsLoss_HolderReadsAreBatchedPerWatcher")
}
func TestPushDetectsLoss_HolderReadsAreBoundedByWorkers(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushDetectsLoss_HolderReadsAreBoundedByWorkers")
}
func TestPushDetectsLoss_NeverRefutesALaterHolder(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushDetectsLoss_NeverRefutesALaterHolder")
}
func TestPushDetectsLoss_ThirdPartyWrite(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushDetectsLoss_ThirdPartyWrite")
}
func TestPushDetectsLoss_TwoHoldersOfOneKeyAreJudgedApart(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushDetectsLoss_TwoHoldersOfOneKeyAreJudgedApart")
}
func TestPushFallsBackToPolling_TrackingDenied(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushFallsBackToPolling_TrackingDenied")
}
func TestPushFollowsTheSlot_ClusterWatchersPerNode(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushFollowsTheSlot_ClusterWatchersPerNode")
}
func TestPushFollowsTheSlot_RealClusterWatchersPerNode(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushFollowsTheSlot_RealClusterWatchersPerNode")
}
func TestPushIgnoresOwnRenewals_NoWakeNoLoss(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushIgnoresOwnRenewals_NoWakeNoLoss")
}
func TestPushSafetyNet_AParkedWaiterPollsAboutOnceASecond(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushSafetyNet_AParkedWaiterPollsAboutOnceASecond")
}
func TestPushSurvivesWatcherReconnect_AReleaseStopsThePendingRetry(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushSurvivesWatcherReconnect_AReleaseStopsThePendingRetry")
}
func TestPushSurvivesWatcherReconnect_AWaitersFailedReadIsTriedAgainSoon(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushSurvivesWatcherReconnect_AWaitersFailedReadIsTriedAgainSoon")
}
func TestPushSurvivesWatcherReconnect_CloseStopsThePendingRetry(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushSurvivesWatcherReconnect_CloseStopsThePendingRetry")
}
func TestPushSurvivesWatcherReconnect_RereadsEveryKey(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushSurvivesWatcherReconnect_RereadsEveryKey")
}
func TestPushSurvivesWatcherReconnect_RetriesABusyNode(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushSurvivesWatcherReconnect_RetriesABusyNode")
}
func TestPushHandsOverWithinOneLocks_ParkedWaitersGetTheKeyWithTheRelease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushHandsOverWithinOneLocks_ParkedWaitersGetTheKeyWithTheRelease")
}
func TestPushHandsOverWithinOneLocks_AWaiterThatGaveUpDuringTheHandOverLeavesNoKey(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushHandsOverWithinOneLocks_AWaiterThatGaveUpDuringTheHandOverLeavesNoKey")
}
func TestPushHandsOverWithinOneLocks_AWaiterReturnsAtItsCtxEndWhileTheHandOverIsAnswered(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushHandsOverWithinOneLocks_AWaiterReturnsAtItsCtxEndWhileTheHandOverIsAnswered")
}
func TestPushWakesOneWaiterPerRelease_AHandOffCycleCostsAboutOneSetNX(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushWakesOneWaiterPerRelease_AHandOffCycleCostsAboutOneSetNX")
}
func TestPushWakesOneWaiterPerRelease_AFailedRearmWakesTheNextWaiter(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushWakesOneWaiterPerRelease_AFailedRearmWakesTheNextWaiter")
}
func TestPushWakesOneWaiterPerRelease_CloseCancelsTheRearm(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushWakesOneWaiterPerRelease_CloseCancelsTheRearm")
}
func TestPushWakesOneWaiterPerRelease_NoStampede(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushWakesOneWaiterPerRelease_NoStampede")
}
func TestPushWakesWaiters_HandOffLatency(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushWakesWaiters_HandOffLatency")
}
func TestPushWakesWaiters_LeastPrivilegeUserWithTracking(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushWakesWaiters_LeastPrivilegeUserWithTracking")
}
func TestPushWakesWaiters_OnRelease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushWakesWaiters_OnRelease")
}
func TestPushWatcherDropWakes_ABusyRealServerRereadsEveryKey(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushWatcherDropWakes_ABusyRealServerRereadsEveryKey")
}
func TestPushWatcherDropWakes_ADidNotRunReplyToCachingRereadsEveryKey(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PushWatcherDropWakes_ADidNotRunReplyToCachingRereadsEveryKey")
}
func TestRawAPIOnMixedVersionClusterPicksCommandsPerNode(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "RawAPIOnMixedVersionClusterPicksCommandsPerNode")
}
func TestRawTokenAPIRoutesEveryKeyToItsPrimaryOnARealCluster(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "RawTokenAPIRoutesEveryKeyToItsPrimaryOnARealCluster")
}
func TestReleaseCancelledBeforeTheSendLeavesTheLockHeldAndRetryable(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ReleaseCancelledBeforeTheSendLeavesTheLockHeldAndRetryable")
}
func TestReleaseServerErrorKeepsTheLockHeldAndRetryable(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ReleaseServerErrorKeepsTheLockHeldAndRetryable")
}
func TestReleaseStillInFlightAtTheLeaseDeadlineLosesTheLock(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ReleaseStillInFlightAtTheLeaseDeadlineLosesTheLock")
}
func TestReleaseThatMayHaveReachedTheServerLosesTheLockCancelsKeepAliveAndFences(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ReleaseThatMayHaveReachedTheServerLosesTheLockCancelsKeepAliveAndFences")
}
func TestReleaseThenReleaseAgainIsAlreadyReleasedAndSendsNothing(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ReleaseThenReleaseAgainIsAlreadyReleasedAndSendsNothing")
}
func TestReleaseWireSequencePerServer(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ReleaseWireSequencePerServer")
}
func TestReleaseWithoutClientPermissionIsUnfencedAndWarnsOncePerLocks(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ReleaseWithoutClientPermissionIsUnfencedAndWarnsOncePerLocks")
}
func TestRenewingMissingExpiredOrReplacedLockChangesNothing(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "RenewingMissingExpiredOrReplacedLockChangesNothing")
}
func TestResetExpiryAppliesTTLFromNow(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ResetExpiryAppliesTTLFromNow")
}
func TestResetExpiryAppliesTheDurationFromNow(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ResetExpiryAppliesTheDurationFromNow")
}
func TestResetExpiryFalseLosesTheLockAndLaterResetsSendNothing(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ResetExpiryFalseLosesTheLockAndLaterResetsSendNothing")
}
func TestResetTimedOutAfterTheSendIsFencedAndLost(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ResetTimedOutAfterTheSendIsFencedAndLost")
}
func TestPrimarySwitchRenewsAtOnce_EveryLockIsConfirmedOnTheNewPrimary(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PrimarySwitchRenewsAtOnce_EveryLockIsConfirmedOnTheNewPrimary")
}
func TestRestartWithoutPersistence_TheHolderLearnsInOneRoundTrip(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "RestartWithoutPersistence_TheHolderLearnsInOneRoundTrip")
}
func TestSentinelAcquisitionsNeedReplicaAcks_AnAcquisitionNoReplicaAcknowledgedIsNotHandedOut(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "SentinelAcquisitionsNeedReplicaAcks_AnAcquisitionNoReplicaAcknowledgedIsNotHandedOut")
}
func TestSentinelRenewalsNeedReplicaAcks_ARenewalNoReplicaAcknowledgedExtendsNothing(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "SentinelRenewalsNeedReplicaAcks_ARenewalNoReplicaAcknowledgedExtendsNothing")
}
func TestSentinelFailover_SessionsFollowTheNewPrimary(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "SentinelFailover_SessionsFollowTheNewPrimary")
}
func TestStarterCancelledBeforeTheSendHandsTheReleaseToAJoiner(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "StarterCancelledBeforeTheSendHandsTheReleaseToAJoiner")
}
func TestSurvivesConnectionReset_AResetDoesNotLoseAHealthyLock(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "SurvivesConnectionReset_AResetDoesNotLoseAHealthyLock")
}
func TestSurvivesConnectionReset_AnotherLocksFenceDoesNotLoseLocksOnItsSession(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "SurvivesConnectionReset_AnotherLocksFenceDoesNotLoseLocksOnItsSession")
}
func TestTryAcquireThenCloseSendsExactlySetAndOneDelete(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "TryAcquireThenCloseSendsExactlySetAndOneDelete")
}
func TestTwoAcquisitionsGetDifferentTokens(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "TwoAcquisitionsGetDifferentTokens")
}
func TestUncertainLocalClose_AReleaseWhoseSocketIsClosedLocallyIsUncertain(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "UncertainLocalClose_AReleaseWhoseSocketIsClosedLocallyIsUncertain")
}
func TestUncertainLocalClose_AnotherLocksFenceCutsOffAnAcquisition(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "UncertainLocalClose_AnotherLocksFenceCutsOffAnAcquisition")
}
func TestUncertainLocalClose_LocksCloseDuringAReleaseOnAPausedServer(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "UncertainLocalClose_LocksCloseDuringAReleaseOnAPausedServer")
}
func TestUncertainReleaseWithoutClientPermissionIsLostWithoutAFence(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "UncertainReleaseWithoutClientPermissionIsLostWithoutAFence")
}
func TestUncertainResetCancelsKeepAliveThenFencesAfterTheRenewal(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "UncertainResetCancelsKeepAliveThenFencesAfterTheRenewal")
}
func TestUnfencedRenewal_AnInterruptedRenewalEndsTheLockWithoutAFence(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "UnfencedRenewal_AnInterruptedRenewalEndsTheLockWithoutAFence")
}
func TestUnfencedRenewal_ByDefaultAKeepAliveNeedsClientPermission(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "UnfencedRenewal_ByDefaultAKeepAliveNeedsClientPermission")
}
func TestUnfencedRenewal_KeepAliveRenewsForAUserWithoutClientPermission(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "UnfencedRenewal_KeepAliveRenewsForAUserWithoutClientPermission")
}
func TestUnreturnedHandleEnds_ARefusedReleaseLeavesNoRenewalAndTheHandleEndsAtItsDeadline(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "UnreturnedHandleEnds_ARefusedReleaseLeavesNoRenewalAndTheHandleEndsAtItsDeadline")
}
func TestUnreturnedHandleEnds_AnAbandonedKeepAliveAcquisitionArmsNoRenewal(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "UnreturnedHandleEnds_AnAbandonedKeepAliveAcquisitionArmsNoRenewal")
}
func TestVerifyStillHeldAsksThePrimaryAndChangesNoState(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "VerifyStillHeldAsksThePrimaryAndChangesNoState")
}
func TestWaitRidesOutTransportErrors_AContendedTryWhoseReplyWasLostWaitsOn(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "WaitRidesOutTransportErrors_AContendedTryWhoseReplyWasLostWaitsOn")
}
func TestWaitRidesOutTransportErrors_ADefiniteRefusalEndsTheWaitAtOnce(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "WaitRidesOutTransportErrors_ADefiniteRefusalEndsTheWaitAtOnce")
}
func TestWaitRidesOutTransportErrors_ADidNotRunReplyIsTriedAgain(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "WaitRidesOutTransportErrors_ADidNotRunReplyIsTriedAgain")
}
func TestWaitRidesOutTransportErrors_ARestartOnTheSamePortDoesNotEndTheWait(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "WaitRidesOutTransportErrors_ARestartOnTheSamePortDoesNotEndTheWait")
}
func TestWaitRidesOutTransportErrors_ASetThatNeverArrivedIsSettledAndTriedAgain(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "WaitRidesOutTransportErrors_ASetThatNeverArrivedIsSettledAndTriedAgain")
}
func TestWaitRidesOutTransportErrors_ASetWhoseReplyWasLostIsSettledAndAcquired(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "WaitRidesOutTransportErrors_ASetWhoseReplyWasLostIsSettledAndAcquired")
}
func TestWaitRidesOutTransportErrors_ASettlingSlowerThanTheLeaseIsNotHandedOut(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "WaitRidesOutTransportErrors_ASettlingSlowerThanTheLeaseIsNotHandedOut")
}
func TestWaitRidesOutTransportErrors_TheBudgetEndsWithTheLastError(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "WaitRidesOutTransportErrors_TheBudgetEndsWithTheLastError")
}
func TestWaitRidesOutTransportErrors_TheLeaseCountsFromTheFirstSend(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "WaitRidesOutTransportErrors_TheLeaseCountsFromTheFirstSend")
}
func TestWaitUntilDone_AcquiresAsSoonAsTheHolderReleases(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "WaitUntilDone_AcquiresAsSoonAsTheHolderReleases")
}
func TestWaitUntilDone_KeepsPollingUntilTheContextEndsAndReturnsItsCause(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "WaitUntilDone_KeepsPollingUntilTheContextEndsAndReturnsItsCause")
}
func TestWaitingAcquisitionCutsTheLastSleepToTheBudgetAndTriesOnceMore(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "WaitingAcquisitionCutsTheLastSleepToTheBudgetAndTriesOnceMore")
}
func TestWaitingAcquisitionPollsEveryRetryEveryUntilFree(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "WaitingAcquisitionPollsEveryRetryEveryUntilFree")
}
func TestWithoutPush_SendsNoTracking(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "WithoutPush_SendsNoTracking")
}
func TestGuardedWriteNeedsTheLease_TheOwnersWritesRunAStaleHoldersAreRefused(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "GuardedWriteNeedsTheLease_TheOwnersWritesRunAStaleHoldersAreRefused")
}
func TestGuardedWriteValidatesBeforeSending_NothingIsSentForBadInput(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "GuardedWriteValidatesBeforeSending_NothingIsSentForBadInput")
}
func TestGuardedWriteValidatesBeforeSending_CrossSlotKeysAreRefusedInACluster(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "GuardedWriteValidatesBeforeSending_CrossSlotKeysAreRefusedInACluster")
}
func TestGuardedWriteSettlesAnUnknownOutcome_TheWriteIDRecordTellsRanFromNotRun(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "GuardedWriteSettlesAnUnknownOutcome_TheWriteIDRecordTellsRanFromNotRun")
}
func TestGuardedWriteChecksTheFence_AStaleFencingTokenIsRefusedEvenWithTheLeaseKey(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "GuardedWriteChecksTheFence_AStaleFencingTokenIsRefusedEvenWithTheLeaseKey")
}
func TestGuardedWriteNeedsTheLease_AUserScriptGetsItsOwnKeysAndArgs(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "GuardedWriteNeedsTheLease_AUserScriptGetsItsOwnKeysAndArgs")
}
func TestGuardedWriteWaitsForReplicas_ACountBelowTheAskIsReported(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "GuardedWriteWaitsForReplicas_ACountBelowTheAskIsReported")
}
func TestGuardedHolderHelper(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "GuardedHolderHelper")
}
func TestNoGuardedWriteAfterTakeover_APausedProcessIsRefused(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "NoGuardedWriteAfterTakeover_APausedProcessIsRefused")
}
func TestWrongTypeIsRefusedAtOnce_WaitingAcquisitionsOfEveryKind(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "WrongTypeIsRefusedAtOnce_WaitingAcquisitionsOfEveryKind")
}
func TestSemaphoreLimitIsStored_NoKeyBesideTheHoldersLiftsTheLimit(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "SemaphoreLimitIsStored_NoKeyBesideTheHoldersLiftsTheLimit")
}
func TestDidNotRunReplies_AnOOMRenewalIsRetriedUntilTheDeadline(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "DidNotRunReplies_AnOOMRenewalIsRetriedUntilTheDeadline")
}
func TestLeastPrivilegeAcl_EveryDocumentedLineRunsItsOperations(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LeastPrivilegeAcl_EveryDocumentedLineRunsItsOperations")
}
func TestLeastPrivilegeAcl_TheSentinelLineRunsItsOperations(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "LeastPrivilegeAcl_TheSentinelLineRunsItsOperations")
}
func TestGuardedWriteWaitsForReplicas_AReplicaAcknowledgesOnARealCluster(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "GuardedWriteWaitsForReplicas_AReplicaAcknowledgesOnARealCluster")
}
func TestFairGrantsInTicketOrder_WaitersAcquireInTheOrderTheyQueued(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FairGrantsInTicketOrder_WaitersAcquireInTheOrderTheyQueued")
}
func TestFairDeadWaiterCostsItsWaiterLease_AGrantToADeadWaiterLapsesAtItsWaiterLease(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FairDeadWaiterCostsItsWaiterLease_AGrantToADeadWaiterLapsesAtItsWaiterLease")
}
func TestFairNonFairNeverTakesAReservation_AndOvertakingIsCounted(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FairNonFairNeverTakesAReservation_AndOvertakingIsCounted")
}
func TestFairGrantsInTicketOrder_SemaphorePermitsAndRWLockHolds(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FairGrantsInTicketOrder_SemaphorePermitsAndRWLockHolds")
}
func TestFairWaiterLeavesWhenItsWaitEnds(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "FairWaiterLeavesWhenItsWaitEnds")
}
func TestListShowsWhoHoldsWhat_NeverAToken(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ListShowsWhoHoldsWhat_NeverAToken")
}
func TestListShowsWhoHoldsWhat_EveryPrimaryOfARealCluster(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "ListShowsWhoHoldsWhat_EveryPrimaryOfARealCluster")
}

func TestSentinelAcquisitionsNeedReplicaAcks_ATryALostReplyLeftIsNeverHandedOut(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "SentinelAcquisitionsNeedReplicaAcks_ATryALostReplyLeftIsNeverHandedOut")
}

func TestSwitchReassertsLocksWithoutKeepAlive_AKeyTheNewPrimaryLacksEndsTheLockAtOnce(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "SwitchReassertsLocksWithoutKeepAlive_AKeyTheNewPrimaryLacksEndsTheLockAtOnce")
}

func TestSwitchReassertsLocksWithoutKeepAlive_AUserWithoutClientKillStillEndsALockTheNewPrimaryLacks(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "SwitchReassertsLocksWithoutKeepAlive_AUserWithoutClientKillStillEndsALockTheNewPrimaryLacks")
}

func TestSwitchReassertsLocksWithoutKeepAlive_EveryHoldWhoseRecordTheNewPrimaryLacksEndsAtOnce(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "SwitchReassertsLocksWithoutKeepAlive_EveryHoldWhoseRecordTheNewPrimaryLacksEndsAtOnce")
}

func TestPrimarySwitchRenewsAtOnce_EveryHoldWithKeepAliveRenewsOnTheNewPrimary(t *testing.T) {
	leasesuite.Run(t, leasesuite.Wire, "PrimarySwitchRenewsAtOnce_EveryHoldWithKeepAliveRenewsOnTheNewPrimary")
}
