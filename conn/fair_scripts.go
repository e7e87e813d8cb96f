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

// fairPrelude starts every queue script: now, the queue keys read first
// (WRONGTYPE), and the helpers over them.
const fairPrelude = serverNow +
	"local Q, L = KEYS[#KEYS - 1], KEYS[#KEYS]\n" +
	"redis.call('zcard', Q)\n" +
	"redis.call('zcard', L)\n" +
	"local function dequeue(m) redis.call('zrem', Q, m) redis.call('zrem', L, m) end\n" +
	"local function waiters() return redis.call('zcount', Q, '(0', '+inf') end\n" +
	"local function prune()\n" +
	"  for _, m in ipairs(redis.call('zrangebyscore', L, '(0', now, 'LIMIT', 0, 64)) do dequeue(m) end\n" +
	"end\n" +
	"local function heads(n)\n" +
	"  local o = math.max(math.min(" + fairHeadOffset + ", waiters() - 1), 0)\n" +
	"  return redis.call('zrangebyscore', Q, '(0', '+inf', 'LIMIT', o, n)\n" +
	"end\n" +
	"local function left(m) return math.max(tonumber(redis.call('zscore', L, m) or now) - now, 1) end\n" +
	"local function position(m)\n" +
	"  local s = redis.call('zscore', Q, m)\n" +
	"  if not s then return 0 end\n" +
	"  return redis.call('zcount', Q, '(0', '(' .. s) + 1\n" +
	"end\n" +
	"local function enqueue(m, wl, w)\n" +
	"  if not redis.call('zscore', Q, m) then\n" +
	"    local n = 1 - tonumber(redis.call('zscore', Q, '') or 0)\n" +
	"    redis.call('zadd', Q, -n, '')\n" +
	"    redis.call('zadd', Q, 2 * n + w, m)\n" +
	"  end\n" +
	"  redis.call('zadd', L, now + wl, m)\n" +
	"end\n" +
	"local function tidy(wl)\n" +
	"  if waiters() == 0 then redis.call('del', Q, L) return end\n" +
	"  for _, k in ipairs({Q, L}) do\n" +
	"    if redis.call('pttl', k) < wl then redis.call('pexpire', k, wl) end\n" +
	"  end\n" +
	"end\n"

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

// fairSemaphorePart is the semaphore's part: KEYS[1] is its holders set.
// storedLimit is the limit stored with the holders, or else the one the
// waiters queued with (the queue's member "#", score −limit); advance
// grants the free permits (limit − live holders and reservations) to the
// heads, in ticket order.
const fairSemaphorePart = "local S = KEYS[1]\n" +
	"local function storedLimit()\n" +
	"  local s = redis.call('zscore', S, '') or redis.call('zscore', Q, '#')\n" +
	"  if s then return -tonumber(s) end\n" +
	"end\n" +
	"local function keep(ms) if redis.call('pttl', S) < ms then redis.call('pexpire', S, ms) end end\n" +
	"local function advance(limit)\n" +
	"  if not limit then return end\n" +
	"  local free = limit - redis.call('zcount', S, '(' .. now, '+inf')\n" +
	"  if free <= 0 then return end\n" +
	"  for _, h in ipairs(heads(free)) do\n" +
	"    local l = left(h)\n" +
	"    dequeue(h)\n" +
	"    redis.call('zadd', S, now + l, 'fair:' .. h)\n" +
	"    redis.call('zadd', S, -limit, '')\n" +
	"    keep(l)\n" +
	"  end\n" +
	"end\n"

// FairSemaphoreTryScript is one try of a fair waiter for a permit (KEYS[1]
// = the holders set, KEYS[2], KEYS[3] = the queue; ARGV[1] = token, not
// empty, ARGV[2] = lease ms, ARGV[3] = waiter lease ms, ARGV[4] = the
// limit, ARGV[5] = "1" for a single try). The limit is checked as
// SemaphoreAcquireScript checks it (LIMITMISMATCH, nothing changed). A live
// permit of the token, or its reservation, is the hold (reply 1; a
// reservation becomes a permit of lease ms). A single try takes a permit
// only when one is free and nobody is queued, else it grants the free
// permits to the heads and refuses (reply 0). Otherwise the token is
// queued, its waiter lease renewed, the free permits granted to the first
// limit − live waiters — the token's taken at once — and the reply is
// −(position).
const FairSemaphoreTryScript = "if ARGV[1] == '' then return redis.error_reply('ERR semaphore owner token must not be empty') end\n" +
	fairPrelude + fairSemaphorePart +
	"local tok, lease, wl, limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])\n" +
	"local live = redis.call('zcount', S, '(' .. now, '+inf')\n" +
	"local stored = storedLimit()\n" +
	"if live > 0 and tostring(stored) ~= ARGV[4] then\n" +
	"  return redis.error_reply('LIMITMISMATCH semaphore limit is ' .. (stored and tostring(stored) or 'unknown') .. ', not ' .. ARGV[4])\n" +
	"end\n" +
	"redis.call('zremrangebyscore', S, 0, now)\n" +
	"prune()\n" +
	"if redis.call('zscore', S, tok) then return 1 end\n" +
	"local function take()\n" +
	"  redis.call('zrem', S, 'fair:' .. tok)\n" +
	"  redis.call('zadd', S, now + lease, tok)\n" +
	"  redis.call('zadd', S, -limit, '')\n" +
	"  keep(lease)\n" +
	"  tidy(wl)\n" +
	"  return 1\n" +
	"end\n" +
	"if redis.call('zscore', S, 'fair:' .. tok) then return take() end\n" +
	"if ARGV[5] == '1' then\n" +
	"  if waiters() == 0 and live < limit then return take() end\n" +
	"  advance(limit) tidy(0) return 0\n" +
	"end\n" +
	"enqueue(tok, wl, 0)\n" +
	"redis.call('zadd', Q, -limit, '#')\n" +
	"advance(limit)\n" +
	"if redis.call('zscore', S, 'fair:' .. tok) then return take() end\n" +
	"tidy(wl)\n" +
	"return -position(tok)"

// FairSemaphoreRenewScript renews a queued waiter's waiter lease (KEYS as
// FairSemaphoreTryScript; ARGV[1] = token, ARGV[2] = waiter lease ms) and
// grants the free permits under the stored limit (the holders', or the
// queue's). Replies as FairMutexRenewScript's.
const FairSemaphoreRenewScript = fairPrelude + fairSemaphorePart +
	"local tok, wl = ARGV[1], tonumber(ARGV[2])\n" +
	"redis.call('zremrangebyscore', S, 0, now)\n" +
	"prune()\n" +
	"if redis.call('zscore', S, tok) or redis.call('zscore', S, 'fair:' .. tok) then return 2 end\n" +
	"if not redis.call('zscore', Q, tok) then return 0 end\n" +
	"redis.call('zadd', L, now + wl, tok)\n" +
	"advance(storedLimit())\n" +
	"tidy(wl)\n" +
	"if redis.call('zscore', S, 'fair:' .. tok) then return 2 end\n" +
	"return -position(tok)"

// FairSemaphoreReleaseScript gives a fair holder's permit back and hands
// it on (KEYS as FairSemaphoreTryScript; ARGV[1] = token, not empty): the
// token's permit, reservation and place in the queue are removed, the free
// permits granted to the heads under the stored limit, and the set deleted
// when nothing in it is live. Replies: 1 = a live permit was released, 0 =
// none.
const FairSemaphoreReleaseScript = "if ARGV[1] == '' then return redis.error_reply('ERR holder owner token must not be empty') end\n" +
	fairPrelude + fairSemaphorePart +
	"local tok = ARGV[1]\n" +
	"local score = redis.call('zscore', S, tok)\n" +
	"local released = 0\n" +
	"if score and tonumber(score) > now then released = 1 end\n" +
	"redis.call('zrem', S, tok, 'fair:' .. tok)\n" +
	"dequeue(tok)\n" +
	"redis.call('zremrangebyscore', S, 0, now)\n" +
	"prune()\n" +
	"advance(storedLimit())\n" +
	"if redis.call('zcount', S, '(' .. now, '+inf') == 0 then redis.call('del', S) end\n" +
	"tidy(0)\n" +
	"return released"

// fairRWPart is the read/write lock's part: KEYS[1] is its writer key,
// KEYS[2] its readers set. advance walks the queue from its head: a run of
// readers is granted while no writer holds, is reserved or waits; a writer
// at the head is granted once no reader is live, and until then leaves its
// waiting marker ("waiting:" + token, for what is left of its waiter
// lease), which refuses every new reader as a non-fair writer's does.
const fairRWPart = "local W, R = KEYS[1], KEYS[2]\n" +
	"local function readers() return redis.call('zcount', R, '(' .. now, '+inf') end\n" +
	"local function keepR(ms) if redis.call('pttl', R) < ms then redis.call('pexpire', R, ms) end end\n" +
	"local function advance()\n" +
	"  local v = redis.call('get', W)\n" +
	"  for i, h in ipairs(heads(64)) do\n" +
	"    local writer = tonumber(redis.call('zscore', Q, h)) % 2 == 1\n" +
	"    if writer then\n" +
	"      if i > 1 or (v and v ~= 'waiting:' .. h) then return end\n" +
	"      local l = left(h)\n" +
	"      if readers() > 0 then redis.call('set', W, 'waiting:' .. h, 'PX', l) return end\n" +
	"      dequeue(h)\n" +
	"      redis.call('set', W, 'fair:' .. h, 'PX', l)\n" +
	"      return\n" +
	"    end\n" +
	"    if v then return end\n" +
	"    local l = left(h)\n" +
	"    dequeue(h)\n" +
	"    redis.call('zadd', R, now + l, 'fair:' .. h)\n" +
	"    keepR(l)\n" +
	"  end\n" +
	"end\n" +
	"local function reserved(tok, writer)\n" +
	"  if writer then return redis.call('get', W) == 'fair:' .. tok end\n" +
	"  return redis.call('zscore', R, 'fair:' .. tok) ~= false\n" +
	"end\n"

// FairRWTryScript is one try of a fair waiter for a read/write lock
// (KEYS[1] = the writer key, KEYS[2] = the readers set, KEYS[3], KEYS[4] =
// the queue; ARGV[1] = token, ARGV[2] = lease ms, ARGV[3] = waiter lease
// ms, ARGV[4] = "1" for the write hold, "0" for a read hold, ARGV[5] = "1"
// for a single try). The token's hold, or its reservation, is the hold
// (reply 1; a reservation becomes the hold with lease ms). A single try
// takes the hold only when nobody is queued and it is free for it (a read
// hold: no writer key; the write hold: no writer key and no live reader),
// else it advances the queue and refuses (reply 0). Otherwise the token is
// queued, its waiter lease renewed, the queue advanced — the token's grant
// taken at once — and the reply is −(position). Both keys are read first
// (WRONGTYPE); a write token beginning with "waiting:" is refused.
const FairRWTryScript = "if string.sub(ARGV[1], 1, 8) == 'waiting:' then\n" +
	"  return redis.error_reply('ERR write lock owner token must not begin with waiting:')\n" +
	"end\n" +
	"if ARGV[1] == '' then return redis.error_reply('ERR holder owner token must not be empty') end\n" +
	"redis.call('get', KEYS[1])\n" +
	"redis.call('zcard', KEYS[2])\n" +
	fairPrelude + fairRWPart +
	"local tok, lease, wl, writer = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] == '1'\n" +
	"redis.call('zremrangebyscore', R, '-inf', now)\n" +
	"prune()\n" +
	"if writer and redis.call('get', W) == tok then return 1 end\n" +
	"if not writer and redis.call('zscore', R, tok) then return 1 end\n" +
	"local function take()\n" +
	"  if writer then redis.call('set', W, tok, 'PX', lease) tidy(wl) return 1 end\n" +
	"  redis.call('zrem', R, 'fair:' .. tok)\n" +
	"  redis.call('zadd', R, now + lease, tok)\n" +
	"  keepR(lease)\n" +
	"  tidy(wl)\n" +
	"  return 1\n" +
	"end\n" +
	"if reserved(tok, writer) then return take() end\n" +
	"if ARGV[5] == '1' then\n" +
	"  local free = redis.call('exists', W) == 0 and (not writer or readers() == 0)\n" +
	"  if waiters() == 0 and free then return take() end\n" +
	"  advance() tidy(0) return 0\n" +
	"end\n" +
	"enqueue(tok, wl, writer and 1 or 0)\n" +
	"advance()\n" +
	"if reserved(tok, writer) then return take() end\n" +
	"tidy(wl)\n" +
	"return -position(tok)"

// FairRWRenewScript renews a queued waiter's waiter lease (KEYS as
// FairRWTryScript; ARGV[1] = token, ARGV[2] = waiter lease ms) and
// advances the queue. Replies as FairMutexRenewScript's.
const FairRWRenewScript = fairPrelude + fairRWPart +
	"local tok, wl = ARGV[1], tonumber(ARGV[2])\n" +
	"redis.call('zremrangebyscore', R, '-inf', now)\n" +
	"prune()\n" +
	"local v = redis.call('get', W)\n" +
	"if v == tok or v == 'fair:' .. tok or redis.call('zscore', R, tok) or redis.call('zscore', R, 'fair:' .. tok) then return 2 end\n" +
	"if not redis.call('zscore', Q, tok) then return 0 end\n" +
	"redis.call('zadd', L, now + wl, tok)\n" +
	"advance()\n" +
	"tidy(wl)\n" +
	"if redis.call('get', W) == 'fair:' .. tok or redis.call('zscore', R, 'fair:' .. tok) then return 2 end\n" +
	"return -position(tok)"

// FairRWReleaseScript releases a fair holder of a read/write lock and
// hands the lock on (KEYS as FairRWTryScript; ARGV[1] = token, ARGV[2] =
// "1" for the write hold, "0" for a read hold): the hold, the token's
// reservations, waiting marker and place in the queue are removed, the
// readers set deleted when no reader is live, and the queue advanced.
// Replies: 1 = a live hold was released, 0 = none.
const FairRWReleaseScript = "local v = redis.call('get', KEYS[1])\n" +
	"redis.call('zcard', KEYS[2])\n" +
	fairPrelude + fairRWPart +
	"local tok, writer = ARGV[1], ARGV[2] == '1'\n" +
	"local released = 0\n" +
	"if writer and v == tok then released = 1 end\n" +
	"if not writer then\n" +
	"  local s = redis.call('zscore', R, tok)\n" +
	"  if s and tonumber(s) > now then released = 1 end\n" +
	"end\n" +
	"if v == tok or v == 'fair:' .. tok or v == 'waiting:' .. tok then redis.call('del', W) end\n" +
	"redis.call('zrem', R, tok, 'fair:' .. tok)\n" +
	"dequeue(tok)\n" +
	"redis.call('zremrangebyscore', R, '-inf', now)\n" +
	"if readers() == 0 then redis.call('del', R) end\n" +
	"prune()\n" +
	"advance()\n" +
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
