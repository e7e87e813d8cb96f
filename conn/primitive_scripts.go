package conn

// The scripts of the lease semaphore and the read/write lock (listed with
// their keys and replies in docs/compatibility.md). Every one is keyed by a
// unique owner token, runs as one atomic step, reads "now" from the
// server's TIME (never from a client clock) and names every key it touches
// in KEYS, all under one hash tag (see NewSemaphore, NewRWLock).
//
// Holders are sorted-set members: member = owner token, score = the server
// time in milliseconds at which the holder's lease ends. A holder whose
// score is s is live while the server time t < s and expired from t = s on:
// a lease of L ms taken at t0 lasts exactly [t0, t0+L). Expired members are
// removed by the next acquisition (ZREMRANGEBYSCORE -inf now) and never
// counted; nothing else depends on their removal.

// serverNow is the Lua prelude every time-reading script starts with: the
// server's TIME in whole milliseconds.
const serverNow = "local t = redis.call('time')\n" +
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"

// SemaphoreAcquireScript takes a permit (KEYS[1] = holders sorted set,
// KEYS[2] = limit string; ARGV[1] = owner token, ARGV[2] = lease ms,
// ARGV[3] = the limit, a canonical decimal ≥ 1). While the semaphore has a
// live holder, a stored limit other than ARGV[3] is refused with the error
// reply "LIMITMISMATCH semaphore limit is <stored>, not <ARGV[3]>" before
// anything is written. Otherwise it removes the expired holders, and if the
// token is not a live holder yet and fewer than ARGV[3] holders are live,
// adds it with ZADD NX and score now + lease. Then both keys' TTLs are
// raised to at least the lease (the limit key gets the holders key's TTL, so
// both live and vanish together) and the limit is stored. Replies: 1 = the
// token holds a permit (new, or already held: then unchanged), 0 = the
// semaphore is full (nothing added; expired holders were removed).
const SemaphoreAcquireScript = serverNow +
	"local live = redis.call('zcount', KEYS[1], '(' .. now, '+inf')\n" +
	"local stored = redis.call('get', KEYS[2])\n" +
	"if live > 0 and stored and stored ~= ARGV[3] then\n" +
	"  return redis.error_reply('LIMITMISMATCH semaphore limit is ' .. stored .. ', not ' .. ARGV[3])\n" +
	"end\n" +
	"redis.call('zremrangebyscore', KEYS[1], '-inf', now)\n" +
	"local lease = tonumber(ARGV[2])\n" +
	"if not redis.call('zscore', KEYS[1], ARGV[1]) then\n" +
	"  if live >= tonumber(ARGV[3]) then return 0 end\n" +
	"  redis.call('zadd', KEYS[1], 'NX', now + lease, ARGV[1])\n" +
	"end\n" +
	"local ttl = redis.call('pttl', KEYS[1])\n" +
	"if ttl < lease then\n" +
	"  ttl = lease\n" +
	"  redis.call('pexpire', KEYS[1], ttl)\n" +
	"end\n" +
	"redis.call('set', KEYS[2], ARGV[3], 'PX', ttl)\n" +
	"return 1"

// SemaphoreAcquireScriptSHA is the SHA1 of SemaphoreAcquireScript.
const SemaphoreAcquireScriptSHA = "cde657a29c6ff19f8f6b405036496a5fdc4e6ab9"

// HolderRenewScript renews one holder (KEYS[1] = holders sorted set,
// KEYS[2…] = keys that live as long as it, such as a semaphore's limit;
// ARGV[1] = owner token, ARGV[2] = lease ms). A token that is no member, or
// whose lease already ended by server time, is refused (reply 0, nothing
// changed): an expired lease is lost, never silently re-taken. Otherwise its
// score becomes now + lease (ZADD XX: shorter or longer than before), the
// holders key's TTL is raised to at least the lease and the other keys get
// the same TTL. Replies: 1 = renewed, 0 = not a live holder.
const HolderRenewScript = serverNow +
	"local score = redis.call('zscore', KEYS[1], ARGV[1])\n" +
	"if not score or tonumber(score) <= now then return 0 end\n" +
	"local lease = tonumber(ARGV[2])\n" +
	"redis.call('zadd', KEYS[1], 'XX', now + lease, ARGV[1])\n" +
	"local ttl = redis.call('pttl', KEYS[1])\n" +
	"if ttl < lease then\n" +
	"  ttl = lease\n" +
	"  redis.call('pexpire', KEYS[1], ttl)\n" +
	"end\n" +
	"for i = 2, #KEYS do redis.call('pexpire', KEYS[i], ttl) end\n" +
	"return 1"

// HolderRenewScriptSHA is the SHA1 of HolderRenewScript.
const HolderRenewScriptSHA = "74e59ef6fb9cb111fbf152f5239159e7fef8101c"

// HolderReleaseScript releases one holder (KEYS[1] = holders sorted set,
// KEYS[2…] = keys deleted with the last live holder; ARGV[1] = owner token)
// with ZREM. When no live holder remains, every key is deleted (the
// semaphore's stored limit binds only while it has a live holder). Replies:
// 1 = released a live holder, 0 = the token held nothing live (missing, or
// its lease had ended: an expired member is removed all the same).
const HolderReleaseScript = "local score = redis.call('zscore', KEYS[1], ARGV[1])\n" +
	"if not score then return 0 end\n" +
	serverNow +
	"redis.call('zrem', KEYS[1], ARGV[1])\n" +
	"if redis.call('zcount', KEYS[1], '(' .. now, '+inf') == 0 then\n" +
	"  redis.call('del', unpack(KEYS))\n" +
	"end\n" +
	"if tonumber(score) > now then return 1 end\n" +
	"return 0"

// HolderReleaseScriptSHA is the SHA1 of HolderReleaseScript.
const HolderReleaseScriptSHA = "00e669367629cd30236c10b4ff429348701f6001"

// HolderLeaseScript reads one holder's lease (KEYS[1] = holders sorted
// set; ARGV[1] = owner token) without changing anything: ZSCORE, then TIME.
// Replies: n > 0 = a live holder with n ms of lease left, 0 = a member whose
// lease has ended (not yet removed), -2 = no such member.
const HolderLeaseScript = "local score = redis.call('zscore', KEYS[1], ARGV[1])\n" +
	"if not score then return -2 end\n" +
	serverNow +
	"local left = tonumber(score) - now\n" +
	"if left > 0 then return left end\n" +
	"return 0"

// HolderLeaseScriptSHA is the SHA1 of HolderLeaseScript.
const HolderLeaseScriptSHA = "12633c77947924a7b958d08f3eac5e1f471bedb1"

// HolderCountScript counts the live holders (KEYS[1] = holders sorted set)
// without removing the expired ones: ZCOUNT of the scores after now.
// Reply: the count.
const HolderCountScript = serverNow +
	"return redis.call('zcount', KEYS[1], '(' .. now, '+inf')"

// HolderCountScriptSHA is the SHA1 of HolderCountScript.
const HolderCountScriptSHA = "1c6a1ac2f757171ab3b5a6d9ab479f5ea86c0610"

// ReadAcquireScript takes a read hold (KEYS[1] = writer string, KEYS[2] =
// readers sorted set; ARGV[1] = owner token, ARGV[2] = lease ms). While the
// writer key exists — a writer holds it or waits for the readers to drain —
// it answers 0 and changes nothing (writer preference). Otherwise it removes
// the expired readers, adds the token with ZADD NX and score now + lease
// (a live reader of that token is left unchanged) and raises the readers
// key's TTL to at least the lease. Replies: 1 = the token holds a read
// lease, 0 = refused because of a writer.
const ReadAcquireScript = "if redis.call('exists', KEYS[1]) == 1 then return 0 end\n" +
	serverNow +
	"local lease = tonumber(ARGV[2])\n" +
	"redis.call('zremrangebyscore', KEYS[2], '-inf', now)\n" +
	"redis.call('zadd', KEYS[2], 'NX', now + lease, ARGV[1])\n" +
	"if redis.call('pttl', KEYS[2]) < lease then redis.call('pexpire', KEYS[2], lease) end\n" +
	"return 1"

// ReadAcquireScriptSHA is the SHA1 of ReadAcquireScript.
const ReadAcquireScriptSHA = "1bb3c3315aad77d810153e9a0a14ffc033390469"

// WriteAcquireScript takes the write hold or waits for it (KEYS[1] =
// writer string, KEYS[2] = readers sorted set; ARGV[1] = owner token, which
// must not begin with "waiting:", ARGV[2] = lease ms, ARGV[3] = waiting
// marker lease ms). A token beginning with "waiting:" is refused with an
// error reply before anything is read. When the writer key holds another
// token or another writer's marker it answers 0 and changes nothing. When it
// is absent or holds this token's marker "waiting:<token>", the expired
// readers are removed; with no live reader left the writer key becomes the
// token with PX lease (reply 1), otherwise it becomes (or stays) the marker
// with PX marker lease, which refuses new readers until it expires or the
// writer takes the lock (reply 2). Replies: 1 = the token holds the write
// lease (new, or already held: then unchanged), 2 = waiting (the marker is
// set), 0 = another writer holds or waits.
const WriteAcquireScript = "if string.sub(ARGV[1], 1, 8) == 'waiting:' then\n" +
	"  return redis.error_reply('ERR write lock owner token must not begin with waiting:')\n" +
	"end\n" +
	"local holder = redis.call('get', KEYS[1])\n" +
	"if holder == ARGV[1] then return 1 end\n" +
	"local marker = 'waiting:' .. ARGV[1]\n" +
	"if holder and holder ~= marker then return 0 end\n" +
	serverNow +
	"redis.call('zremrangebyscore', KEYS[2], '-inf', now)\n" +
	"if redis.call('zcard', KEYS[2]) == 0 then\n" +
	"  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])\n" +
	"  return 1\n" +
	"end\n" +
	"redis.call('set', KEYS[1], marker, 'PX', ARGV[3])\n" +
	"return 2"

// WriteAcquireScriptSHA is the SHA1 of WriteAcquireScript.
const WriteAcquireScriptSHA = "e4ee4d93bd631eafbb67851d24157e983bdd329f"

// WaitingMarkerPrefix begins the value a waiting writer stores in the
// writer key: "waiting:" followed by its owner token.
const WaitingMarkerPrefix = "waiting:"
