// Command lockctl holds, inspects and releases respire-go lease locks from
// the shell, like flock(1) and `etcdctl lock` do for files and etcd:
//
//	lockctl run --key K --ttl 30s [--wait 10s] [--fenced COUNTER | --limit N] [--owner LABEL] -- CMD ARGS...
//	lockctl guard --key K [--ttl 30s] [--wait 10s] [--fenced COUNTER] -- COMMAND ARGS...
//	lockctl status [-q] [--fenced COUNTER] [--show-token] KEY...
//	lockctl release KEY --token HEX
//	lockctl watch [--interval 100ms] KEY...
//	lockctl acl --server redis-7.0|redis-8.4|valkey-8.1|valkey-9.0 [--managed] [--fenced] [--limit]
//
// run takes KEY (waiting up to --wait), keeps it alive while CMD runs in a
// process group apart from lockctl's (the guard's, below), passes RESPIRE_LOCK_KEY (and, with --fenced,
// RESPIRE_FENCING_TOKEN) in CMD's environment, forwards SIGINT, SIGTERM,
// SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to that group, and releases the lock
// once CMD has exited. With --limit N, KEY names a lease semaphore and run
// takes one of its N permits instead (RESPIRE_LOCK_LIMIT in CMD's
// environment): at most N CMDs run at once wherever lockctl runs. A KEY is
// one lock or one semaphore, never both: a plain (or fenced) run while KEY's
// semaphore has a live permit, or a run --limit while KEY is held as a plain
// lock, gives back what it took and exits 65 without running CMD (each run
// checks once it holds, so the two kinds never both run CMD). CMD never
// outlives its lock:
//
//   - If ownership is lost while CMD runs, CMD's group gets SIGTERM, then
//     SIGKILL after --grace, and lockctl exits with status 76. CMD is
//     signalled before anything is written, and no write can end or stop
//     lockctl (SIGPIPE is caught, so a broken pipe is a failed write;
//     SIGTTOU is ignored once CMD runs).
//   - If lockctl dies (kill -9), CMD's group is killed at once with SIGKILL:
//     on Linux CMD's parent-death signal is SIGKILL (set from an OS thread
//     locked for CMD's life, as Linux ties the signal to the thread), and on
//     every system a guard — lockctl started again, leading CMD's process
//     group and ignoring the terminal's and the shell's signals — kills the
//     group when its pipe from lockctl ends without a goodbye. No grace
//     period: nobody is left to renew the lease or to time one.
//   - Job control: when CMD stops by SIGTSTP, SIGTTIN or SIGTTOU (Ctrl-Z in
//     the terminal CMD's group holds, or SIGTSTP sent to lockctl, which
//     passes it on), lockctl takes the terminal back and stops its whole
//     process group, the shell's job, with SIGSTOP, so that the shell shows
//     the job stopped. Stopped, it renews nothing. Continued (fg, bg,
//     SIGCONT), it checks the lease first: still held, CMD's group is
//     continued (and given the terminal again when lockctl's group is the
//     foreground group, after fg); lost, it is a loss as above. With no
//     job-control shell to continue it (its process group is orphaned: a
//     session leader under script(1) or docker -t, a service) lockctl never
//     stops: it continues CMD at once, as the kernel discards such stops.
//     CMD stopped by SIGSTOP is a pause: lockctl keeps renewing.
//
// guard takes KEY (waiting up to --wait), makes one guarded write — a
// write command of lease's allowlist, which the server runs only while KEY
// holds this lock's token, checked in the same atomic step
// (lease.Lock.Guard) — releases KEY and prints "written"; a write the
// server refused because the lock was lost is status 76, one whose reply
// was lost 69 (saying whether settling proved it did not run).
//
// status prints, per key, whether an owner is present, the owner's
// fingerprint (the same as watch shows), its remaining time to live (PTTL)
// and the owner label its holder set (lease.WithOwner, run --owner), never
// the owner token unless --show-token is given, and exits 1
// when a key has no owner (-q prints nothing, for `lockctl status -q KEY &&
// ...`); a KEY without owner whose semaphore has a live permit is shown as
// that semaphore, and counts as held. Tokens have one written form: the upper-case hexadecimal of the
// key's exact bytes (lease.Token.Hex), which status --show-token prints and
// release --token reads. release deletes a key only if it holds the given
// token (the raw-token release of package lease); watch polls GET and PTTL
// and prints acquisitions, releases and expiries as timestamped lines, and
// says when its connection is lost and back; acl prints the least-privilege
// ACL rule of docs/compatibility.md (--managed, --fenced and --limit add
// what each kind of run needs).
//
// Connections follow the Redis tools' conventions: --url/-u or REDIS_URL
// (redis://user:pass@host:port/db, rediss:// for TLS), --addr, redis-cli's
// -h HOST -p PORT -a PASSWORD -n DB and --user, --password or
// REDIS_PASSWORD, --tls with --cacert, --cluster/-c; --sim PROFILE starts
// the embedded simulator (package sim) instead, so nothing needs
// installing. -h is the host, never help: help is --help.
//
// Durations (--ttl, --wait, --grace, --interval) are Go durations or a
// number of seconds, from 0 to lease.MaxTTL (876000h, about 100 years);
// NaN, infinities and longer values are refused as usage errors naming the
// limit, checked before any conversion, so every architecture agrees.
//
// Exit status: 0 or CMD's own status (128+N when CMD was killed by signal
// N); 1 release found the key not held by the token, or status found a key
// without owner; 64 usage error (EX_USAGE); 65 run found KEY in use as the
// other kind, a semaphore or a plain lock (EX_DATAERR); 69 the server
// cannot be reached or failed a command (EX_UNAVAILABLE); 70 an internal
// error (EX_SOFTWARE); 75 the lock was not acquired, held by another owner
// for the whole --wait (EX_TEMPFAIL); 76 ownership was lost while CMD ran
// (guard: before the write ran, nothing written);
// 77 the server refused the credentials or a permission (EX_NOPERM); 78 run
// --limit gave another limit than KEY's live permits use (EX_CONFIG);
// 126/127 CMD could not be run / was not found. `lockctl --help` and `lockctl
// COMMAND --help` print the details.
package main
