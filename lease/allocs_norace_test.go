//go:build !race

package lease

// pairAllocsBaseline is what an uncontended TryAcquire + Release pair that
// never asks for Lock.Context allocates on the client side (measured with
// testing.AllocsPerRun against a sim node in another process, see
// TestLockContext_IsLazyAPairThatNeverAsksForItAllocatesNoMore).
const pairAllocsBaseline = 2
