package conn

// The scripts of fair waiting (fair.go): a first-come-first-served queue
// of waiters in front of a mutex, a semaphore or a read/write lock. Each
// script is one atomic step keyed by the waiter's owner token, reads "now"
// from the server's TIME, and names every key it touches in KEYS: the
// lock's own key(s) first, then the queue's two keys, all in one hash slot
// (FairQueue).
//
// The queue (KEYS[#KEYS-1], a sorted set) holds each waiter's ticket:
// member = the waiter's token, score = 2·n (+1 for a writer of a
// read/write lock), n drawn from the queue's counter, which is the member
// "" with score −(last n); the member "!" holds −(times a non-fair
// acquisition took a mutex ahead of the queue), and a semaphore's queue
// keeps the limit its waiters asked for as "#" with score −limit. Waiters' scores are
// positive, the counters' never are, so "(0" to "+inf" is the waiters in
// ticket order. The leases (KEYS[#KEYS], a sorted set) hold each waiter's
// waiter lease: member = token, score = its end in server ms; the member
// "@" + the mutex's value as the queue last saw it (score 0) is how a
// later script tells a holder that came from outside the queue (the holder
// of a reservation "fair:" + token the queue granted is the token, which
// claimed it). A waiter whose waiter lease ended is removed by the next
// script that reads the queue (at most 64 a script; the rest by the ones
// after): every one that queues, renews or grants — a claim of a
// reservation only turns it into the hold. The queue's keys live at least
// the longest waiter lease queued (the mutex's: up to twice it, renewed
// when under it).
//
// A grant is a reservation in the lock itself, which every acquisition,
// fair or not, respects: a mutex's (or a writer's) key holds "fair:" + the
// waiter's token, a semaphore's holders or a lock's readers hold the member
// "fair:" + token, each lasting what was left of the waiter's waiter lease.
// The grantee leaves the queue when granted; its next try turns the
// reservation into its hold. A reservation that ends unclaimed is a turn
// lost: the waiter's next try queues it again, at the back.

// fairMutexPrelude starts the mutex's queue scripts, after the key's
// read (v): the queue's front is all a hand-off touches, so nothing here
// walks the whole queue (a short queue is one listpack on the server, where
// a count or a miss walks every member): one read of the leases gives the
// marker (score 0) and the waiter leases that ended, one read of the queue's
// first two waiters the head, a fresh waiter's position is the queue's
// length. Numbers reach redis.call as strings formatted once (%d). left
// caches whether waiters remain (nil: not known; anyLeft reads it).
const fairMutexPrelude = "local K, Q, L = KEYS[1], KEYS[2], KEYS[3]\n" +
	"local t = redis.call('time')\n" +
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n" +
	"local marker, dead, left = nil, {}, nil\n" +
	"local r = redis.call('zrangebyscore', L, '0', string.format('%d', now), 'WITHSCORES', 'LIMIT', '0', '65')\n" +
	"for i = 1, #r, 2 do\n" +
	"  if r[i + 1] == '0' then marker = r[i] else dead[#dead + 1] = r[i] end\n" +
	"end\n" +
	"if #dead > 0 then\n" +
	"  redis.call('zrem', Q, unpack(dead))\n" +
	"  redis.call('zrem', L, unpack(dead))\n" +
	"end\n" +
	"local function dequeue(m) redis.call('zrem', Q, m) redis.call('zrem', L, m) end\n" +
	"local function heads() return redis.call('zrangebyscore', Q, '(0', '+inf', 'LIMIT', '0', '2') end\n" +
	"local function anyLeft()\n" +
	"  if left == nil then left = #redis.call('zrangebyscore', Q, '(0', '+inf', 'LIMIT', '0', '1') > 0 end\n" +
	"  return left\n" +
	"end\n" +
	"local function grant(hs)\n" +
	"  local h = hs[math.min(1 + " + fairHeadOffset + ", #hs)]\n" +
	"  if not h then left = false return nil end\n" +
	"  local l = math.max(tonumber(redis.call('zscore', L, h) or now) - now, 1)\n" +
	"  dequeue(h)\n" +
	"  redis.call('set', K, 'fair:' .. h, 'PX', string.format('%d', l))\n" +
	"  left = #hs > 1\n" +
	"  return 'fair:' .. h\n" +
	"end\n" +
	"local function seen(v)\n" +
	"  if not marker or not v or marker == '@' .. v or marker == '@fair:' .. v or string.sub(v, 1, 5) == 'fair:' then return end\n" +
	"  redis.call('zadd', Q, 'INCR', '-1', '!')\n" +
	"end\n" +
	"local function note(cur)\n" +
	"  local want = '@' .. (cur or '')\n" +
	"  if marker == want or (cur and marker == '@fair:' .. cur) or not anyLeft() then return end\n" +
	"  if marker then redis.call('zrem', L, marker) end\n" +
	"  redis.call('zadd', L, '0', want)\n" +
	"end\n" +
	"local function tidy(wl)\n" +
	"  if not anyLeft() then redis.call('del', Q, L) return end\n" +
	"  if wl > 0 and redis.call('pttl', Q) < wl then\n" +
	"    redis.call('pexpire', Q, string.format('%d', 2 * wl))\n" +
	"    redis.call('pexpire', L, string.format('%d', 2 * wl))\n" +
	"  end\n" +
	"end\n" +
	"local function position(m)\n" +
	"  local s = redis.call('zscore', Q, m)\n" +
	"  if not s then return 0 end\n" +
	"  return redis.call('zcount', Q, '(0', '(' .. s) + 1\n" +
	"end\n"

// FairMutexTryScript is one try of a fair waiter for a mutex (KEYS[1] =
// the lock's key, KEYS[2], KEYS[3] = the queue; ARGV[1] = the waiter's
// owner token, ARGV[2] = lease ms, ARGV[3] = waiter lease ms, ARGV[4] = "1"
// for a single try that does not queue). The key holding the token, or its
// reservation, is the hold (reply 1; a reservation becomes the token with
// PX lease, touching nothing else: the queue notes a claimed reservation
// as the holder it granted). A single try takes a key that is free,
// unreserved and has nobody queued (reply 1), else it refuses (reply 0)
// after granting a free key to the head. Otherwise the token is queued
// (once: its ticket is kept), its waiter lease renewed, a free key granted
// to the head — taken at once when the head is the token — and the reply
// is −(position). The key is read first (WRONGTYPE), the leases next, and
// the queue's first write or read comes before any other write.
const FairMutexTryScript = "local v = redis.call('get', KEYS[1])\n" +
	"if v == ARGV[1] then return 1 end\n" +
	"if v == 'fair:' .. ARGV[1] then redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end\n" +
	fairMutexPrelude +
	"local tok, lease, wl = ARGV[1], ARGV[2], tonumber(ARGV[3])\n" +
	"seen(v)\n" +
	"local function take() redis.call('set', K, tok, 'PX', lease) note(tok) tidy(wl) return 1 end\n" +
	"if ARGV[4] == '1' then\n" +
	"  if v then note(v) tidy(0) return 0 end\n" +
	"  local hs = heads()\n" +
	"  if #hs == 0 then left = false return take() end\n" +
	"  note(grant(hs)) tidy(0) return 0\n" +
	"end\n" +
	"local n = -tonumber(redis.call('zadd', Q, 'INCR', '-1', ''))\n" +
	"local fresh = redis.call('zadd', Q, 'NX', string.format('%d', 2 * n), tok) == 1\n" +
	"redis.call('zadd', L, string.format('%d', now + wl), tok)\n" +
	"left = true\n" +
	"if not v then\n" +
	"  local hs = heads()\n" +
	"  if hs[math.min(1 + " + fairHeadOffset + ", #hs)] == tok then dequeue(tok) left = #hs > 1 return take() end\n" +
	"  v = grant(hs)\n" +
	"  left = true\n" +
	"end\n" +
	"note(v)\n" +
	"tidy(wl)\n" +
	"if not fresh then return -position(tok) end\n" +
	"local counters = 1\n" +
	"if redis.call('zscore', Q, '!') then counters = 2 end\n" +
	"return counters - redis.call('zcard', Q)"

// FairMutexRenewScript renews a queued waiter's waiter lease (KEYS as
// FairMutexTryScript; ARGV[1] = token, ARGV[2] = waiter lease ms) and
// grants a free key to the head. Replies: −(position) while queued; 2 =
// try now (the key is reserved for the token, or holds it); 0 = not queued
// (its waiter lease ended: its place is lost).
const FairMutexRenewScript = "local v = redis.call('get', KEYS[1])\n" +
	fairMutexPrelude +
	"local tok, wl = ARGV[1], tonumber(ARGV[2])\n" +
	"seen(v)\n" +
	"if v == tok or v == 'fair:' .. tok then return 2 end\n" +
	"if not redis.call('zscore', Q, tok) then return 0 end\n" +
	"redis.call('zadd', L, string.format('%d', now + wl), tok)\n" +
	"left = true\n" +
	"if not v then v = grant(heads()) end\n" +
	"note(v)\n" +
	"tidy(wl)\n" +
	"if v == 'fair:' .. tok then return 2 end\n" +
	"return -position(tok)"

// FairMutexReleaseScript releases a fair holder and hands the key on
// (KEYS as FairMutexTryScript; ARGV[1] = token): a key holding the token
// is deleted (reply 1, else 0), the token's place in the queue and its
// reservation (a waiter giving up, or the clean-up of a try) are dropped,
// and a free key is reserved for the head at once, so that no acquisition
// can take it in between (the grant's SET replaces the holder's value: no
// DEL first). A holder of the key is not queued (every grant and take
// dequeued it), so only another token's release touches its place.
const FairMutexReleaseScript = "local v = redis.call('get', KEYS[1])\n" +
	fairMutexPrelude +
	"local tok = ARGV[1]\n" +
	"seen(v)\n" +
	"if v ~= tok then dequeue(tok) end\n" +
	"local released = 0\n" +
	"if v == tok then released = 1 end\n" +
	"if not v or v == tok or v == 'fair:' .. tok then\n" +
	"  local g = grant(heads())\n" +
	"  if v and not g then redis.call('del', K) end\n" +
	"  v = g\n" +
	"end\n" +
	"note(v)\n" +
	"tidy(0)\n" +
	"return released"

// FairWaitersScript counts a queue's live waiters (KEYS[1] = the queue's
// leases): the waiter leases that have not ended by server time. Reply:
// the count.
const FairWaitersScript = serverNow +
	"return redis.call('zcount', KEYS[1], '(' .. now, '+inf')"

// FairOvertakenScript reads how many times a non-fair acquisition took a
// mutex ahead of its fair waiters since the queue formed (KEYS[1] = the
// queue). Reply: the count.
const FairOvertakenScript = "return -tonumber(redis.call('zscore', KEYS[1], '!') or 0)"
