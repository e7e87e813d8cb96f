package main

// The --help texts. They are written for people who know flock(1),
// redis-cli and `etcdctl lock`.

const connUsage = `Connection options (before or after COMMAND):
      --url URL          redis://[user:password@]host[:port][/db]; rediss:// for TLS
                         (default: $REDIS_URL, else 127.0.0.1:6379)
      --addr HOST:PORT   server address; a comma-separated list of seeds with --cluster
      --user NAME        ACL user name
      --password PASS    password (default: $REDIS_PASSWORD); prefer the environment,
                         the command line is visible to other users of the machine
      --tls              connect with TLS
      --cacert FILE      CA certificate(s) to verify the server with (implies --tls)
      --cluster          the server is a Redis Cluster (follow MOVED/ASK), like redis-cli -c
      --sim PROFILE      start the embedded simulator (redis-7.0, redis-8.4, valkey-8.1,
                         valkey-9.0) in this process and use it: nothing to install
`

const exitUsageText = `Exit status:
    0        success; for run: CMD's own exit status (128+N if CMD was killed by signal N)
    1        release: the key was not held by that token (nothing deleted)
   64        usage error: bad flags or arguments, a server that cannot be reached,
             or credentials it refuses
   69        the server failed a command (e.g. NOPERM, connection lost)
   75        run: not acquired, another owner held the lock for the whole --wait
   76        run: ownership was lost while CMD ran (CMD got SIGTERM, then SIGKILL)
  126, 127   run: CMD could not be executed / was not found (nothing acquired)
`

const mainUsage = `Usage: lockctl [connection options] COMMAND [options] [ARGS...]

Hold, inspect and release respire-go lease locks on Redis and Valkey.

Commands:
  run       hold a lock while a command runs, like flock(1) or 'etcdctl lock'
  status    show whether keys are held, and for how long
  release   release a lock by its owner token
  watch     print acquisitions, releases and expiries of keys as they happen
  acl       print the least-privilege ACL rule for a server version
  help      show help for a command

Examples:
  lockctl run --key locks:backup --ttl 30s --wait 10s -- ./backup.sh
  lockctl --sim redis-8.4 run --key demo -- sh -c 'echo "holding $RESPIRE_LOCK_KEY"'
  REDIS_URL=rediss://locker:secret@redis.internal:6380 lockctl status locks:backup

` + connUsage + `
` + exitUsageText + `
Run 'lockctl COMMAND --help' for the options of a command.
`

const runUsage = `Usage: lockctl run --key KEY [--ttl 30s] [--wait DURATION] [--fenced COUNTER] [options] [--] CMD [ARGS...]

Acquire KEY, run CMD while keeping the lease alive, release KEY when CMD exits.

CMD runs in its own process group with RESPIRE_LOCK_KEY=KEY (and, with --fenced,
RESPIRE_FENCING_TOKEN=N) added to its environment; stdin, stdout and stderr are
passed through. SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to
lockctl are forwarded to CMD's process group; lockctl waits for CMD to exit,
releases the lock and exits with CMD's status. If ownership is lost while CMD
runs (a renewal finds another owner, or cannot be confirmed before the lease
could expire), CMD's group gets SIGTERM, then SIGKILL after --grace, and lockctl
exits with 76. lockctl waits for CMD itself, not for processes CMD leaves running
in the background. In the foreground of a terminal, CMD's group gets the terminal
while it runs, as a shell's job does: CMD can read it, and Ctrl-C reaches CMD.

Options:
      --key KEY          the lock key (required)
      --ttl DURATION     lease duration, renewed at about half of it (default 30s)
      --wait DURATION    keep trying this long while another owner holds KEY
                         (default 0: one try; exit 75 if held)
      --fenced COUNTER   take a fencing token from the counter key COUNTER in the same
                         atomic step and pass it as RESPIRE_FENCING_TOKEN (in a cluster,
                         KEY and COUNTER need one hash tag: {job}:lock, {job}:fence)
      --grace DURATION   time between SIGTERM and SIGKILL on loss (default 10s)
      --unfenced-renewal renew without CLIENT ID/KILL permission (see 'lockctl acl'):
                         a renewal with an unknown outcome then ends the lock at once
  -h, --help             show this help

Durations are Go durations (30s, 1m30s, 250ms) or a number of seconds.
The user needs the ACL of 'lockctl acl --server VERSION --managed'; --fenced also
runs a script, which needs +evalsha +eval +exists +get +pttl +incr +set.

` + connUsage + `
` + exitUsageText

const statusUsage = `Usage: lockctl status [--fenced COUNTER]... [--show-token] KEY...

For each KEY, print whether an owner is present and the lease's remaining time
to live (PTTL); for each --fenced COUNTER, the fencing counter's value. Sends
only GET and PTTL (the user needs +get +pttl).

Options:
      --fenced COUNTER   also print this fencing counter (repeatable)
      --show-token       also print the owner token in hex, for 'lockctl release'.
                         The token is a secret: whoever has it can release the lock
                         from under its holder. Do not paste it into logs or tickets.
  -h, --help             show this help

` + connUsage + `
` + exitUsageText

const releaseUsage = `Usage: lockctl release KEY --token HEX

Delete KEY if, and only if, it holds the owner token HEX (the raw-token release:
DELEX, DELIFEQ or a Lua compare-and-delete, as the server supports). Prints
"released" (exit 0) or "not owned" (exit 1: KEY is free or held by another token;
nothing was deleted). HEX is the token's hexadecimal form (lease.Token.Hex, or
'lockctl status --show-token'), in upper or lower case.

Options:
      --token HEX        the owner token, hex-encoded (required)
  -h, --help             show this help

` + connUsage + `
` + exitUsageText

const watchUsage = `Usage: lockctl watch [--interval 100ms] KEY...

Print KEY's current state (held or free), then a timestamped line whenever KEY
is acquired (a new owner appears), released (it disappears, or changes owner,
before its PTTL ran out) or expires (it disappears at its PTTL), until
interrupted (exit 0). It polls GET and PTTL every --interval: changes shorter
than the interval can be missed, and an end within one interval of the PTTL
counts as an expiry. Owners are shown as a fingerprint (the first bytes of the
token's SHA-256), never as the token.

Options:
      --interval DURATION  polling interval (default 100ms)
  -h, --help               show this help

` + connUsage

const aclUsage = `Usage: lockctl acl --server redis-7.0|redis-8.4|valkey-8.1|valkey-9.0 [--managed]

Print the least-privilege ACL SETUSER rule for a lock user on that server version
(docs/compatibility.md). The rule covers the raw-token API (status's GET, release);
--managed adds the CLIENT permissions managed locks need to fence uncertain
commands, which 'lockctl run' uses. 'lockctl status' and 'watch' also need +pttl.
Replace the user name and >pw with your own.

Options:
      --server VERSION   the server version
      --managed          add +client|id +client|info +client|kill
  -h, --help             show this help
`

// usages maps each command to its help text ('lockctl help COMMAND').
var usages = map[string]string{
	"run":     runUsage,
	"status":  statusUsage,
	"release": releaseUsage,
	"watch":   watchUsage,
	"acl":     aclUsage,
}
