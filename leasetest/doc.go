// Package leasetest lets the tests of code that uses package lease (or
// coordination) make what happens to a lock in production happen now: an
// in-process simulated Redis or Valkey server (package sim, over real TCP
// sockets on loopback) whose faults are named in the lock's terms.
//
//	func TestReportStopsWhenItsLockIsLost(t *testing.T) {
//		srv := leasetest.Start(t) // closed, with everything it handed out, at test end
//		locks := srv.Locks()      // a lease.Locks on a client of its own
//		lock, err := locks.Acquire(t.Context(), "locks:report", 30*time.Second, lease.WithKeepAlive())
//		if err != nil {
//			t.Fatal(err)
//		}
//		done := make(chan error, 1)
//		go func() { done <- runReport(lock.Context()) }() // the code under test
//		srv.Steal("locks:report") // another owner's token in the key, as after a lost race
//		if err := <-done; !errors.Is(err, lease.ErrOwnershipLost) {
//			t.Fatalf("runReport = %v, want it stopped by the lost lock", err)
//		}
//	}
//
// # The faults and what a lock holder observes
//
// Each method acts on the server at once and returns when the change is
// made; none sleeps or waits for a client. What a holder observes comes
// after, through the library, as in production:
//
//   - Steal, Delete and Expire change one key (as another client's SET or
//     DEL, or its lease running out, would). A holder with a keep-alive and
//     push (the default: RESP3 client-side tracking) learns it within
//     milliseconds: Lock.Context ends with a *lease.LossError whose Reason
//     is lease.LossReadRefused. Without push (lease.WithoutPush, or a
//     holder with no keep-alive) it learns at its next renewal or release:
//     the renewal is refused (lease.LossRefused), the release answers
//     lease.NotOwned. A waiter (lease.WithWait, lease.WithWaitUntilDone) is
//     woken by Delete and Expire at once with push, at its next poll
//     without.
//   - Pause stalls the server: commands wait, unanswered, until Resume. A
//     holder whose renewal waits past its lease loses the lock at the
//     lease's end (minus the drift margin) by its own clock, whatever the
//     server does: Lock.Context ends with lease.LossDeadlineInFlight (or
//     lease.LossDeadline).
//   - DropConnections closes every client's socket, as a network blip or a
//     proxy restart would; Failover puts a new primary behind the same
//     address. Both are survived by a healthy keep-alive lock: the library
//     reconnects, and its next renewal confirms the lease on a fresh
//     connection.
//
// # Keys
//
// The faults take wire keys: the key as the server stores it, with the key
// prefix of the lease.Locks view that took the lock (Locks.WithKeyPrefix,
// Locks.KeyPrefix) in front. A lock acquired as
// "report" by a view with prefix "jobs:" is stolen with Steal("jobs:report").
//
// # Your Redis client
//
// Server.Locks needs no Redis client: it runs on a minimal client of
// respire-go's own (Server.Client), and this package links none, so it is
// the same for a service on go-redis, rueidis or valkey-go. A test that
// must run over the client the service uses connects it with Addr and
// Password and passes it to that client's adapter:
//
//	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: srv.Password(),
//		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
//	t.Cleanup(func() { _ = client.Close() })
//	locks, err := goredis.New(client) // rueidislease.New, valkeygo.New alike
//	if err != nil {
//		t.Fatal(err)
//	}
//	t.Cleanup(locks.Close) // cleanups run last first: before the client's Close
//
// Either Locks observes the faults below alike (goredis.ExampleNew_leasetest).
//
// # The server
//
// Start (in a test) and NewServer (anywhere else, with Close) run one
// simulated node of a profile of package sim (WithProfile; default
// sim.Redis70): its replies, native commands and fallbacks are those of
// Redis 7.0, Redis 8.4, Valkey 8.1 or Valkey 9.0. It listens on a free
// loopback port with a random password, keeps time on the real clock and
// expires keys as a real server does. Sim returns the sim.Server itself for
// what this package does not name (scripted faults on single commands,
// the command log, ACL users).
package leasetest
