// Command lockctl holds, inspects and releases respire-go lease locks from
// the shell, like flock(1) and `etcdctl lock` do for files and etcd:
//
//	lockctl run --key K --ttl 30s [--wait 10s] [--fenced COUNTER] -- CMD ARGS...
//	lockctl status [--fenced COUNTER] [--show-token] KEY...
//	lockctl release KEY --token HEX
//	lockctl watch [--interval 100ms] KEY...
//	lockctl acl --server redis-7.0|redis-8.4|valkey-8.1|valkey-9.0 [--managed]
//
// run takes KEY (waiting up to --wait), keeps it alive while CMD runs in its
// own process group, passes RESPIRE_LOCK_KEY (and, with --fenced,
// RESPIRE_FENCING_TOKEN) in CMD's environment, forwards SIGINT, SIGTERM,
// SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to that group, and releases the lock
// once CMD has exited. If ownership is lost while CMD runs, CMD's group gets
// SIGTERM, then SIGKILL after --grace, and lockctl exits with status 76.
//
// status prints, per key, whether an owner is present and its remaining
// time to live (PTTL), never the owner token unless --show-token is given;
// release deletes a key only if it holds the given token (the raw-token
// release of package lease); watch polls GET and PTTL and prints
// acquisitions, releases and expiries as timestamped lines; acl prints the
// least-privilege ACL rule of docs/compatibility.md.
//
// Connections follow the Redis tools' conventions: --url or REDIS_URL
// (redis://user:pass@host:port/db, rediss:// for TLS), --addr, --user,
// --password or REDIS_PASSWORD, --tls with --cacert, --cluster; --sim
// PROFILE starts the embedded simulator (package sim) instead, so nothing
// needs installing.
//
// Exit status: 0 or CMD's own status (128+N when CMD was killed by signal
// N); 1 release found the key not held by the token; 64 usage error (bad
// flags or arguments, a server that cannot be reached or refuses the
// credentials); 69 the server failed a command; 75 the lock was not
// acquired (held by another owner for the whole --wait); 76 ownership was
// lost while CMD ran; 126/127 CMD could not be run / was not found.
// `lockctl --help` and `lockctl COMMAND --help` print the details.
package main
