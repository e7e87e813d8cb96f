package main

// The --help texts. They are written for people who know flock(1),
// redis-cli and `etcdctl lock`.

const connUsage = `Connection options (before or after COMMAND; redis-cli's short forms work):
  -u, --url URL          redis://[user:password@]host[:port][/db]; rediss:// for TLS
                         (default: $REDIS_URL, else 127.0.0.1:6379)
      --addr HOST:PORT   server address; a comma-separated list of seeds with --cluster
  -h HOST                server host (default 127.0.0.1), as redis-cli -h: -h is never help
  -p PORT                server port (default 6379)
  -n DB                  database number (overrides the URL's)
      --user NAME        ACL user name
  -a, --password PASS    password (default: $REDIS_PASSWORD); prefer the environment,
                         the command line is visible to other users of the machine
      --tls              connect with TLS
      --cacert FILE      CA certificate(s) to verify the server with (implies --tls)
  -c, --cluster          the server is a Redis Cluster (follow MOVED/ASK), as redis-cli -c
      --sim PROFILE      start the embedded simulator (redis-7.0, redis-8.4, valkey-8.1,
                         valkey-9.0) in this process and use it: nothing to install
Give the server one way: --url, --addr or -h/-p. Help is --help (or -help).
`

const exitUsageText = `Exit status:
    0        success; for run: CMD's own exit status (128+N if CMD was killed by signal N)
    1        release: the key was not held by that token (nothing deleted);
             status: a KEY has no owner
   64        usage error: bad flags or arguments (EX_USAGE)
   65        run: KEY is in use as the other kind: a semaphore with a live permit
             (run --limit) beside a plain run, or a plain lock beside run --limit;
             nothing was run (EX_DATAERR)
   69        the server cannot be reached, or failed a command (connection lost,
             LOADING, READONLY, ...) (EX_UNAVAILABLE)
   70        an internal error of lockctl (EX_SOFTWARE)
   75        run: not acquired, another owner held the lock for the whole --wait (EX_TEMPFAIL)
   76        run: ownership was lost while CMD ran (CMD got SIGTERM, then SIGKILL);
             guard: the lock was lost before the write ran (nothing written)
   77        the server refused the credentials (WRONGPASS, NOAUTH) or a permission
             (NOPERM; for run, e.g. CLIENT KILL: see --unfenced-renewal) (EX_NOPERM)
   78        run --limit: KEY's live permits use another limit (or none is stored
             with them); nothing was run (EX_CONFIG)
  126, 127   run: CMD could not be executed / was not found (nothing acquired)
`

const durationsText = `Durations are Go durations (30s, 1m30s, 250ms) or a number of seconds, from 0 to
876000h (lease.MaxTTL, about 100 years); NaN, infinities and longer values are refused.
`

const mainUsage = `Usage: lockctl [connection options] COMMAND [options] [ARGS...]

Hold, inspect and release respire-go lease locks on Redis and Valkey.

Commands:
  run       hold a lock while a command runs, like flock(1) or 'etcdctl lock'
  guard     take a lock and make one write that the server runs only while it is held
  status    show whether keys are held, and for how long
  release   release a lock by its owner token
  watch     print acquisitions, releases and expiries of keys as they happen
  ls        list locks: owner label, lease left, holders, fair waiters (never a token)
  top       the most-waited locks, refreshed
  acl       print the least-privilege ACL rule for a server version
  help      show help for a command

Examples:
  lockctl run --key locks:backup --ttl 30s --wait 10s -- ./backup.sh
  lockctl -h redis.internal -p 6380 -n 2 run --key locks:backup -- ./backup.sh
  lockctl --sim redis-8.4 run --key demo -- sh -c 'echo "holding $RESPIRE_LOCK_KEY"'
  REDIS_URL=rediss://locker:secret@redis.internal:6380 lockctl status locks:backup
  lockctl status -q locks:backup && echo "a backup is running"
  lockctl guard --key '{job:42}:lock' --wait 5s -- HSET '{job:42}:state' status done

` + connUsage + `
` + exitUsageText + `
Run 'lockctl COMMAND --help' for the options of a command.
`

const runUsage = `Usage: lockctl run --key KEY [--ttl 30s] [--wait DURATION] [--fenced COUNTER | --limit N] [options] [--] CMD [ARGS...]

Acquire KEY, run CMD while keeping the lease alive, release KEY when CMD exits.
With --limit N, KEY names a lease semaphore: at most N CMDs run at once, on
every machine that runs 'lockctl run --limit N --key KEY'.

A KEY is one lock or one semaphore, never both: a run without --limit (plain
or --fenced) while KEY's semaphore has a live permit, or a run with --limit
while KEY is held as a plain lock, gives back what it took and exits 65
without running CMD. (Each run checks after it holds, so two runs of the two
kinds that start together never both run CMD: at worst both exit 65.)

CMD runs in a process group apart from lockctl's (led by the guard, below) with
RESPIRE_LOCK_KEY=KEY (and, with --fenced, RESPIRE_FENCING_TOKEN=N) added to its
environment; stdin, stdout and stderr are passed through. SIGINT, SIGTERM, SIGHUP,
SIGQUIT, SIGUSR1 and SIGUSR2 sent to lockctl are forwarded to CMD's process group;
lockctl waits for CMD to exit, releases the lock and exits with CMD's status.
lockctl waits for CMD itself, not for processes CMD leaves running in the
background. In the foreground of a terminal, CMD's group gets the terminal while
it runs, as a shell's job does: CMD can read it, and Ctrl-C reaches CMD.

CMD never outlives its lock:
  - Loss. If ownership is lost while CMD runs (a renewal finds another owner, or
    cannot be confirmed before the lease could expire), CMD's group gets SIGTERM
    at once, then SIGKILL after --grace, and lockctl exits with 76. CMD is
    signalled before lockctl writes anything, and no write can stop lockctl: a
    broken stdout or stderr pipe (SIGPIPE) or a terminal it may not write to
    (SIGTTOU) is ignored.
  - lockctl dies (kill -9, a crash). Nobody renews the lease any more, so CMD's
    group is killed (SIGKILL, no grace) at once: on Linux CMD has SIGKILL as its
    parent-death signal, and on every system a guard process (lockctl itself,
    leading CMD's process group) kills the group when lockctl is gone. Only what
    CMD moved out of its process group (setsid, a daemon) escapes.
  - Ctrl-Z. When CMD stops by job control (Ctrl-Z, or SIGTSTP sent to lockctl,
    which passes it to CMD's group; SIGTTIN, SIGTTOU), lockctl takes the
    terminal back and stops too (SIGSTOP to its process group, the job), so the
    shell shows the job stopped and Ctrl-C at the prompt works as usual. Stopped,
    lockctl renews nothing: a job stopped longer than its lease loses the lock.
    fg, bg or SIGCONT to lockctl resume it: if the lease is still held, CMD's
    group is continued (and given the terminal again after fg); if not, CMD does
    not run on: it is a loss, as above (SIGTERM, SIGKILL after --grace, exit 76).
    Resume the job, not CMD alone: a CMD continued behind lockctl's back runs
    without renewals. With no job-control shell to resume it (lockctl's process
    group is orphaned: a session leader under script(1), docker -t, a service),
    lockctl never stops: it continues CMD at once, as the kernel discards such
    stops. CMD stopped by SIGSTOP (a debugger) is a pause: lockctl keeps renewing.

Options:
      --key KEY          the lock key (required)
      --ttl DURATION     lease duration, renewed at about half of it (default 30s)
      --wait DURATION    keep trying this long while another owner holds KEY
                         (default 0: one try; exit 75 if held)
      --fenced COUNTER   take a fencing token from the counter key COUNTER in the same
                         atomic step and pass it as RESPIRE_FENCING_TOKEN (in a cluster,
                         KEY and COUNTER need one hash tag: {job}:lock, {job}:fence)
      --limit N          KEY is a semaphore of N permits (1 to 1000000; anything else,
                         0 included, is a usage error): take one of them, not the whole
                         key (waiting as --wait says while all N are held); CMD also gets
                         RESPIRE_LOCK_LIMIT=N. Every run on KEY must give the same N:
                         another limit is refused (exit 78) while a permit is held.
                         Not with --fenced
      --grace DURATION   time between SIGTERM and SIGKILL on loss (default 10s)
      --unfenced-renewal renew without CLIENT ID/KILL permission (see 'lockctl acl'):
                         a renewal with an unknown outcome then ends the lock at once
      --owner LABEL      label the lock with who holds it (host, pid, job id; never a
                         secret), as 'lockctl status' shows it (lease.WithOwner: UTF-8,
                         at most 256 bytes, no control characters)
      --help             show this help

` + durationsText + `
The user needs the ACL of 'lockctl acl --server VERSION --managed', with --fenced
that of 'lockctl acl --server VERSION --managed --fenced', with --limit that of
'lockctl acl --server VERSION --managed --limit'. (A plain run also reads KEY's
semaphore key with GET, and counts its permits only where it exists.)

` + connUsage + `
` + exitUsageText

const statusUsage = `Usage: lockctl status [-q] [--fenced COUNTER]... [--semaphore KEY]... [--show-token] KEY...

For each KEY, print whether an owner is present — with its fingerprint
(owner=XXXXXXXX, the same as watch prints) — the lease's remaining time to
live (PTTL) and the owner label its holder set (label "...": lease.WithOwner,
lockctl run --owner; no byte of the token); for each --fenced COUNTER, the
fencing counter's value; for each --semaphore KEY (the semaphore 'lockctl run
--limit N --key KEY' takes permits of), its live permits and the limit stored
with them. A KEY is one lock or one semaphore: a KEY without owner whose
semaphore has a live permit is shown as --semaphore shows it, and is held.
Exits 0 when every KEY is held (and every semaphore has a live permit) and 1
otherwise (counters do not count), so 'lockctl status -q KEY && ...' runs only
while KEY is in use. Sends GET and PTTL (the user needs +get +pttl), and GET of
KEY's semaphore key; only where that exists, and for --semaphore, the holder
count script and ZSCORE of the stored limit (the rule of 'lockctl acl --limit').

Options:
  -q                     quiet: print nothing, only the exit status (with
                         --show-token: each held KEY's token alone, one per line)
      --fenced COUNTER   also print this fencing counter (repeatable)
      --semaphore KEY    also print the live permits of this semaphore (repeatable;
                         not with --show-token: permits are counted, not listed)
      --show-token       also print the owner token, in the one form lockctl uses: the
                         upper-case hexadecimal of the key's exact bytes (lease.Token.Hex),
                         exactly what 'lockctl release --token' takes. It is not the
                         value redis-cli GET shows. The token is a secret: whoever has it
                         can release the lock from under its holder. Do not paste it
                         into logs or tickets.
      --help             show this help

` + connUsage + `
` + exitUsageText

const releaseUsage = `Usage: lockctl release KEY --token HEX

Delete KEY if, and only if, it holds the owner token HEX (the raw-token release:
DELEX, DELIFEQ or a Lua compare-and-delete, as the server supports). Prints
"released" (exit 0) or "not owned" (exit 1: KEY is free or held by another token;
nothing was deleted). HEX is the token as 'lockctl status --show-token' prints
it (lease.Token.Hex; either case): the hexadecimal of the key's bytes, not the
value redis-cli GET shows — given that value, release deletes nothing and says so.

  lockctl release KEY --token "$(lockctl status -q --show-token KEY)"

Options:
      --token HEX        the owner token, as status --show-token prints it (required)
      --help             show this help

` + connUsage + `
` + exitUsageText

const watchUsage = `Usage: lockctl watch [--interval 100ms] KEY...

Print KEY's current state (held or free), then a timestamped line whenever KEY
is acquired (a new owner appears), released (it disappears, or changes owner,
before its PTTL ran out) or expires (it disappears at its PTTL), until
interrupted (exit 0). It polls GET and PTTL every --interval: changes shorter
than the interval can be missed, and an end within one interval of the PTTL
counts as an expiry. Owners are shown as a fingerprint (the first bytes of the
token's SHA-256, as status shows it), never as the token.

When its reads fail for want of a connection, watch prints one timestamped
"disconnected from ADDR: REASON (retrying)" line and keeps polling; once they
work again, one "reconnected to ADDR after DURATION" line (changes in that time
may have been missed, and a key gone meanwhile counts as released or expired by
its last PTTL). A server that cannot be reached when watch starts is exit 69.

Options:
      --interval DURATION  polling interval (default 100ms)
      --help               show this help

` + durationsText + `
` + connUsage

const aclUsage = `Usage: lockctl acl --server redis-7.0|redis-8.4|valkey-8.1|valkey-9.0 [--managed] [--fenced] [--limit] [--sentinel]

Print the least-privilege ACL SETUSER rule for a lock user on that server version
(docs/compatibility.md). The rule covers the raw-token API (status's GET, release);
--managed adds the CLIENT permissions managed locks need to fence uncertain
commands, which 'lockctl run' uses; --fenced adds what 'run --fenced' needs,
--limit what 'run --limit' and 'status' of a semaphore need (give them with
--managed for run). --sentinel (with --managed) adds what a Sentinel client of
the library needs on every data node Sentinel may promote: INFO replication when
a session opens, ROLE and WAIT after each renewal and acquisition (lockctl itself
connects to one address). 'lockctl status' and 'watch' also need +pttl. Replace the user
name and >pw with your own. acl connects to nothing: connection options are
accepted (so -h is never help) and ignored.

Options:
      --server VERSION   the server version
      --managed          add +client|id +client|info +client|kill
      --fenced           add ` + fencedPermissions + `
      --limit            add ` + limitPermissions + `
      --sentinel         add ` + sentinelPermissions + ` (with --managed)
      --help             show this help
`

const guardUsage = `Usage: lockctl guard --key KEY [--ttl 30s] [--wait DURATION] [--fenced COUNTER] [options] [--] COMMAND [ARGS...]

Acquire KEY, make one guarded write — COMMAND ARGS..., which the server runs
only while KEY still holds this lock's token, in the same atomic step as that
check (lease.Lock.Guard) — and release KEY. Prints "written" (exit 0).

  lockctl guard --key '{job:42}:lock' --wait 5s -- HSET '{job:42}:state' status done

COMMAND must be one of SET, DEL, UNLINK, EXPIRE, PEXPIRE, PERSIST, INCR, DECR,
INCRBY, DECRBY, APPEND, HSET, HDEL, HINCRBY, LPUSH, RPUSH, SADD, SREM, ZADD, ZREM,
XADD, with the arguments the server accepts (checked before anything is sent:
exit 64 otherwise). In a cluster, every key of COMMAND must share KEY's hash
tag, as '{job:42}:lock' and '{job:42}:state' do (exit 64 otherwise). With
--fenced, the write also needs the lock's fencing token to be the largest that
ever wrote through COUNTER (the fence record COUNTER:guarded, or {COUNTER}:guarded
for a COUNTER without a hash tag): a holder whose counter went back (a failover
to a lagging replica) is refused.

The lock is held without a keep-alive: COMMAND is one write, and --ttl must
outlast it. Exit 75 if another owner held KEY for the whole --wait; 76 if the
lock was lost before the write reached the server (nothing written); 69 if the
write's reply was lost — the message says whether settling proved it did not
run, or could not tell (it may have run).

Options:
      --key KEY          the lock key (required)
      --ttl DURATION     lease duration (default 30s)
      --wait DURATION    keep trying this long while another owner holds KEY
                         (default 0: one try; exit 75 if held)
      --fenced COUNTER   a fencing-token lock: take a token from COUNTER and check
                         the fence record with the write
      --owner LABEL      label the lock with who holds it, as for run
      --help             show this help

` + durationsText + `
The user needs +set +get +pttl +evalsha +eval and the write's own command
(the guard script runs it), with its keys and the write-id record (KEY:guard,
or {KEY}:guard for a KEY without a hash tag) in its key patterns; CLIENT ID and
CLIENT KILL let a lost reply be settled.

` + connUsage + `
` + exitUsageText

// usages maps each command to its help text ('lockctl help COMMAND').
var usages = map[string]string{
	"run":     runUsage,
	"guard":   guardUsage,
	"status":  statusUsage,
	"release": releaseUsage,
	"watch":   watchUsage,
	"acl":     aclUsage,
	"ls":      lsUsage,
	"top":     topUsage,
}

const lsUsage = `Usage: lockctl ls [--json] [--limit 1000] [PATTERN]

List the locks whose key (or semaphore / read-write lock name) matches PATTERN, a
Redis glob (default "*"), on every primary (SCAN; with --cluster every cluster
primary): kind, key, owner label, lease left, holders (a semaphore's permits/limit,
a read-write lock's readers) and fair waiters. Never prints a token. About five
round trips per lock found: a tool for operators, not for a hot path.

  --json         one JSON array: kind, key, owner, held, lease_ms, holders, limit,
                 waiters, overtaken, ...
  --limit N      list at most N locks (more: exit 69 after printing N)
`

const topUsage = `Usage: lockctl top [--interval 2s] [--count 20] [--iterations 0] [--json] [PATTERN]

Show the most-waited locks matching PATTERN (default "*"), most fair waiters
first, refreshed every --interval until interrupted (or --iterations times),
like mc admin top locks. Columns as lockctl ls.

  --json         one JSON object per refresh and line: {"time": ..., "locks": [...]}
`
