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
// removed by the next acquisition (ZREMRANGEBYSCORE up to now) and never
// counted; nothing else depends on their removal. A semaphore keeps its
// limit in the same sorted set (SemaphoreLimitMember, a negative score),
// so that the limit cannot vanish while holders remain.
//
// Every script reads each of its keys before it decides anything (a
// string with GET, a sorted set with ZCARD, ZCOUNT or ZSCORE), so that a
// key of another type is refused at once with the server's WRONGTYPE error
// reply, never read as a holder, a writer or a lease.

// serverNow is the Lua prelude every time-reading script starts with: the
// server's TIME in whole milliseconds.
const serverNow = "local t = redis.call('time')\n" +
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"

// SemaphoreLimitMember is the sorted-set member under which a semaphore
// stores its limit, in its holders key itself: the empty member (no owner
// token is empty), with score minus the limit. A negative score is never
// live (live holders' scores are lease ends after now), never purged (the
// acquisition removes the scores from 0 to now) and never counted, and the
// limit can only disappear together with the holders' key: an eviction or
// expiry removes both, the last release deletes both.
const SemaphoreLimitMember = ""

// MaxSemaphoreLimit is the largest semaphore limit: the limit is stored as
// a sorted-set score (a double) and compared in the script as Lua prints
// it, which is exact far beyond this bound.
const MaxSemaphoreLimit = 1<<31 - 1

// SemaphoreAcquireScript takes a permit (KEYS[1] = holders sorted set;
// ARGV[1] = owner token, not empty, ARGV[2] = lease ms, ARGV[3] = the
// limit, a canonical decimal from 1 to MaxSemaphoreLimit). An empty token
// is refused with an error reply before anything is read. The stored limit
// is the score of SemaphoreLimitMember, negated. While the semaphore has a
// live holder, a stored limit other than ARGV[3] — or none at all — is
// refused with the error reply "LIMITMISMATCH semaphore limit is <stored>,
// not <ARGV[3]>" (<stored> "unknown" when none is stored) before anything is
// written. Otherwise it removes the expired holders, and if the token is not
// a live holder yet and fewer than ARGV[3] holders are live, adds it with
// ZADD NX and score now + lease; with no other live holder it stores
// ARGV[3] as the limit. Then the key's TTL is raised to at least the lease.
// Replies: 1 = the token holds a permit (new, or already held: then
// unchanged), 0 = the semaphore is full (nothing added; expired holders were
// removed).
const SemaphoreAcquireScript = "if ARGV[1] == '' then return redis.error_reply('ERR semaphore owner token must not be empty') end\n" +
	serverNow +
	"local live = redis.call('zcount', KEYS[1], '(' .. now, '+inf')\n" +
	"local stored = redis.call('zscore', KEYS[1], '')\n" +
	"if stored then stored = tostring(-tonumber(stored)) end\n" +
	"if live > 0 and stored ~= ARGV[3] then\n" +
	"  return redis.error_reply('LIMITMISMATCH semaphore limit is ' .. (stored or 'unknown') .. ', not ' .. ARGV[3])\n" +
	"end\n" +
	"redis.call('zremrangebyscore', KEYS[1], 0, now)\n" +
	"local lease = tonumber(ARGV[2])\n" +
	"if not redis.call('zscore', KEYS[1], ARGV[1]) then\n" +
	"  if live >= tonumber(ARGV[3]) then return 0 end\n" +
	"  redis.call('zadd', KEYS[1], 'NX', now + lease, ARGV[1])\n" +
	"end\n" +
	"if live == 0 then redis.call('zadd', KEYS[1], -tonumber(ARGV[3]), '') end\n" +
	"if redis.call('pttl', KEYS[1]) < lease then redis.call('pexpire', KEYS[1], lease) end\n" +
	"return 1"

// SemaphoreAcquireScriptSHA is the SHA1 of SemaphoreAcquireScript.
const SemaphoreAcquireScriptSHA = "4be158600a3ff48dc8a26785b879e4a7f87d1355"

// HolderRenewScript renews one holder (KEYS[1] = holders sorted set;
// ARGV[1] = owner token, ARGV[2] = lease ms). A token that is no member, or
// whose lease already ended by server time, is refused (reply 0, nothing
// changed): an expired lease is lost, never silently re-taken (a
// semaphore's stored limit, whose score is negative, is never renewed).
// Otherwise its score becomes now + lease (ZADD XX: shorter or longer than
// before) and the key's TTL is raised to at least the lease. Replies: 1 =
// renewed, 0 = not a live holder.
const HolderRenewScript = serverNow +
	"local score = redis.call('zscore', KEYS[1], ARGV[1])\n" +
	"if not score or tonumber(score) <= now then return 0 end\n" +
	"local lease = tonumber(ARGV[2])\n" +
	"redis.call('zadd', KEYS[1], 'XX', now + lease, ARGV[1])\n" +
	"if redis.call('pttl', KEYS[1]) < lease then redis.call('pexpire', KEYS[1], lease) end\n" +
	"return 1"

// HolderRenewScriptSHA is the SHA1 of HolderRenewScript.
const HolderRenewScriptSHA = "c74659226a61710f5794e4225ce2213c787a73c5"

// HolderReleaseScript releases one holder (KEYS[1] = holders sorted set;
// ARGV[1] = owner token, not empty) with ZREM. An empty token is refused
// with an error reply before anything is read (it would name a semaphore's
// stored limit). When no live holder remains, the key is deleted (a
// semaphore's stored limit with it: it binds only while a holder is live).
// Replies: 1 = released a live holder, 0 = the token held nothing live
// (missing, or its lease had ended: an expired member is removed all the
// same).
const HolderReleaseScript = "if ARGV[1] == '' then return redis.error_reply('ERR holder owner token must not be empty') end\n" +
	"local score = redis.call('zscore', KEYS[1], ARGV[1])\n" +
	"if not score then return 0 end\n" +
	serverNow +
	"redis.call('zrem', KEYS[1], ARGV[1])\n" +
	"if redis.call('zcount', KEYS[1], '(' .. now, '+inf') == 0 then redis.call('del', KEYS[1]) end\n" +
	"if tonumber(score) > now then return 1 end\n" +
	"return 0"

// HolderReleaseScriptSHA is the SHA1 of HolderReleaseScript.
const HolderReleaseScriptSHA = "a7077343f7e54f9ee15c5bee9ecfa9526835a7a4"

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
// readers sorted set; ARGV[1] = owner token, ARGV[2] = lease ms). It reads
// both keys first (GET, ZCARD), so that a key of another type is refused
// with WRONGTYPE before anything else. While the writer key exists — a
// writer holds it or waits for the readers to drain — it answers 0 and
// changes nothing (writer preference). Otherwise it removes the expired
// readers, adds the token with ZADD NX and score now + lease (a live reader
// of that token is left unchanged) and raises the readers key's TTL to at
// least the lease. Replies: 1 = the token holds a read lease, 0 = refused
// because of a writer.
const ReadAcquireScript = "local writer = redis.call('get', KEYS[1])\n" +
	"redis.call('zcard', KEYS[2])\n" +
	"if writer then return 0 end\n" +
	serverNow +
	"local lease = tonumber(ARGV[2])\n" +
	"redis.call('zremrangebyscore', KEYS[2], '-inf', now)\n" +
	"redis.call('zadd', KEYS[2], 'NX', now + lease, ARGV[1])\n" +
	"if redis.call('pttl', KEYS[2]) < lease then redis.call('pexpire', KEYS[2], lease) end\n" +
	"return 1"

// ReadAcquireScriptSHA is the SHA1 of ReadAcquireScript.
const ReadAcquireScriptSHA = "fdc54ad920f6b65870f01812ab8ce1aa1888edcc"

// WriteAcquireScript takes the write hold or waits for it (KEYS[1] =
// writer string, KEYS[2] = readers sorted set; ARGV[1] = owner token, which
// must not begin with "waiting:", ARGV[2] = lease ms, ARGV[3] = waiting
// marker lease ms). A token beginning with "waiting:" is refused with an
// error reply before anything is read. It reads both keys first (GET,
// ZCARD), so that a key of another type is refused with WRONGTYPE before
// anything else. When the writer key holds another token or another
// writer's marker it answers 0 and changes nothing. When it is absent or
// holds this token's marker "waiting:<token>", the expired readers are
// removed; with no live reader left the writer key becomes the token with
// PX lease (reply 1), otherwise it becomes (or stays) the marker with PX
// marker lease, which refuses new readers until it expires or the writer
// takes the lock (reply 2). Replies: 1 = the token holds the write lease
// (new, or already held: then unchanged), 2 = waiting (the marker is set),
// 0 = another writer holds or waits.
const WriteAcquireScript = "if string.sub(ARGV[1], 1, 8) == 'waiting:' then\n" +
	"  return redis.error_reply('ERR write lock owner token must not begin with waiting:')\n" +
	"end\n" +
	"local holder = redis.call('get', KEYS[1])\n" +
	"redis.call('zcard', KEYS[2])\n" +
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
const WriteAcquireScriptSHA = "12321117085245b57f209d807f53fdedc5b5a687"

// WaitingMarkerPrefix begins the value a waiting writer stores in the
// writer key: "waiting:" followed by its owner token.
const WaitingMarkerPrefix = "waiting:"
