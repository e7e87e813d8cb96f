package conn

// The fair queue's scripts for a semaphore's permits and a read/write
// lock's holds (the queue's layout: fair_scripts.go). As the mutex's, they
// read the queue's front only on a hand-off: nothing on that path counts
// the waiters or looks for a member past the front (a short queue is one
// listpack on the server, where a count or a miss walks every member). One
// read of the leases gives the waiter leases that ended, one read of the
// queue's first waiters (one more than it may grant: whether any stay) the
// heads, a fresh waiter's position is the queue's length, and the live
// holders are counted as the set's size once the ended ones are removed.
// Numbers reach redis.call as strings formatted once (%d). A claim of a
// reservation — the head's next try — checks the limit, turns the
// reservation into the hold and touches nothing else.

// fairNumbers formats a whole number for redis.call.
const fairNumbers = "local function d(x) return string.format('%d', x) end\n"

// fairQueuePrelude starts a semaphore's or read/write lock's queue work,
// after now (serverNow) and the lock's own reads: the waiters whose waiter
// lease ended are dropped (at most 64 a script; the rest by the ones
// after), and the helpers over the queue. left caches whether waiters
// remain (nil: not known; anyLeft reads it). heads(n) reads the front: up
// to n waiters to grant (from the head; in the fairhead mutation, from
// behind it), their tickets, and how many members it read.
const fairQueuePrelude = "local Q, L = KEYS[#KEYS - 1], KEYS[#KEYS]\n" +
	"local dead = redis.call('zrangebyscore', L, '(0', d(now), 'LIMIT', '0', '64')\n" +
	"if #dead > 0 then\n" +
	"  redis.call('zrem', Q, unpack(dead))\n" +
	"  redis.call('zrem', L, unpack(dead))\n" +
	"end\n" +
	"local left = nil\n" +
	"local function dequeue(m) redis.call('zrem', Q, m) redis.call('zrem', L, m) left = nil end\n" +
	"local function anyLeft()\n" +
	"  if left == nil then left = #redis.call('zrangebyscore', Q, '(0', '+inf', 'LIMIT', '0', '1') > 0 end\n" +
	"  return left\n" +
	"end\n" +
	"local function leaseLeft(m) return math.max(tonumber(redis.call('zscore', L, m) or now) - now, 1) end\n" +
	"local function heads(n)\n" +
	"  local r = redis.call('zrangebyscore', Q, '(0', '+inf', 'WITHSCORES', 'LIMIT', '0', d(n + " + fairHeadOffset + " + 1))\n" +
	"  local k = #r / 2\n" +
	"  local o = math.max(math.min(" + fairHeadOffset + ", k - 1), 0)\n" +
	"  local hs, ss = {}, {}\n" +
	"  for i = o + 1, math.min(o + n, k) do hs[#hs + 1] = r[2 * i - 1] ss[#ss + 1] = r[2 * i] end\n" +
	"  return hs, ss, k\n" +
	"end\n" +
	"local function enqueue(m, wl, w)\n" +
	"  local n = -tonumber(redis.call('zadd', Q, 'INCR', '-1', ''))\n" +
	"  local fresh = redis.call('zadd', Q, 'NX', d(2 * n + w), m) == 1\n" +
	"  redis.call('zadd', L, d(now + wl), m)\n" +
	"  left = true\n" +
	"  return fresh, n\n" +
	"end\n" +
	"local function tidy(wl)\n" +
	"  if not anyLeft() then redis.call('del', Q, L) return end\n" +
	"  if wl > 0 and redis.call('pttl', Q) < wl then\n" +
	"    redis.call('pexpire', Q, d(2 * wl))\n" +
	"    redis.call('pexpire', L, d(2 * wl))\n" +
	"  end\n" +
	"end\n" +
	"local function position(m)\n" +
	"  local s = redis.call('zscore', Q, m)\n" +
	"  if not s then return 0 end\n" +
	"  return redis.call('zcount', Q, '(0', '(' .. s) + 1\n" +
	"end\n"

// fairSemaphoreMine reads the token's reservation (rsv) and, without
// one, its permit (mine: either) in the semaphore's holders (S = KEYS[1],
// tok = ARGV[1]).
const fairSemaphoreMine = "local S, tok = KEYS[1], ARGV[1]\n" +
	"local rsv = redis.call('zscore', S, 'fair:' .. tok)\n" +
	"local mine = rsv or redis.call('zscore', S, tok)\n"

// fairSemaphoreStart reads the semaphore's limit (stored: the limit
// member's score) and now, after the token's reads. keep raises the
// holders' TTL; noteLimit stores the limit the holders are taken under.
const fairSemaphoreStart = "local stored = redis.call('zscore', S, '')\n" +
	serverNow + fairNumbers +
	"local function keep(ms) if redis.call('pttl', S) < ms then redis.call('pexpire', S, d(ms)) end end\n" +
	"local function noteLimit(limit)\n" +
	"  if tonumber(stored) ~= -limit then stored = d(-limit) redis.call('zadd', S, stored, '') end\n" +
	"end\n"

// fairSemaphorePart is the semaphore's queue part. liveNow removes the
// ended permits and reservations and counts the live ones; advance grants
// the limit − live free permits to the heads, in ticket order, each a
// reservation lasting what is left of its waiter lease (the script's own
// token, when takeMine, is only dequeued: its caller takes the permit).
// advance replies the live count after and whether the token was granted.
const fairSemaphorePart = "local function liveNow()\n" +
	"  redis.call('zremrangebyscore', S, '0', d(now))\n" +
	"  local n = redis.call('zcard', S)\n" +
	"  if stored then n = n - 1 end\n" +
	"  return n\n" +
	"end\n" +
	"local function advance(limit, live, takeMine)\n" +
	"  if not limit or live >= limit then return live, false end\n" +
	"  local hs, _, k = heads(math.min(limit - live, 64))\n" +
	"  if #hs == 0 then left = false return live, false end\n" +
	"  local add, longest, got = {}, 1, false\n" +
	"  for _, h in ipairs(hs) do\n" +
	"    if h == tok then got = true end\n" +
	"    if h ~= tok or not takeMine then\n" +
	"      local l = leaseLeft(h)\n" +
	"      add[#add + 1] = d(now + l)\n" +
	"      add[#add + 1] = 'fair:' .. h\n" +
	"      longest = math.max(longest, l)\n" +
	"    end\n" +
	"  end\n" +
	"  redis.call('zrem', Q, unpack(hs))\n" +
	"  redis.call('zrem', L, unpack(hs))\n" +
	"  left = k > #hs\n" +
	"  if #add > 0 then\n" +
	"    redis.call('zadd', S, unpack(add))\n" +
	"    noteLimit(limit)\n" +
	"    keep(longest)\n" +
	"  end\n" +
	"  return live + #hs, got\n" +
	"end\n"

// FairSemaphoreTryScript is one try of a fair waiter for a permit (KEYS[1]
// = the holders set, KEYS[2], KEYS[3] = the queue; ARGV[1] = token, not
// empty, ARGV[2] = lease ms, ARGV[3] = waiter lease ms, ARGV[4] = the
// limit, ARGV[5] = "1" for a single try). The limit is checked as
// SemaphoreAcquireScript checks it (LIMITMISMATCH, nothing changed; the
// stored limit is the holders', else the one the waiters queued with). A
// live permit of the token is the hold (reply 1), and so is its live
// reservation, which becomes a permit of lease ms (touching nothing else).
// A single try takes a permit only when one is free and nobody is queued,
// else it grants the free permits to the heads and refuses (reply 0).
// Otherwise the token is queued (once: its ticket is kept; the queue's
// first waiter, or one whose limit the holders do not store, records its
// limit as the queue's member "#"), its waiter lease renewed, the free
// permits granted to the first limit − live waiters — the token's taken at
// once — and the reply is −(position). The holders set is read first
// (WRONGTYPE).
const FairSemaphoreTryScript = "if ARGV[1] == '' then return redis.error_reply('ERR semaphore owner token must not be empty') end\n" +
	fairSemaphoreMine + fairSemaphoreStart +
	"local lease, wl, limit = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])\n" +
	"local function limitText(s) if s then return tostring(-tonumber(s)) end end\n" +
	"if limitText(stored) ~= ARGV[4] then\n" +
	"  local s = limitText(stored or redis.call('zscore', KEYS[2], '#'))\n" +
	"  if s ~= ARGV[4] and redis.call('zcount', S, '(' .. now, '+inf') > 0 then\n" +
	"    return redis.error_reply('LIMITMISMATCH semaphore limit is ' .. (s or 'unknown') .. ', not ' .. ARGV[4])\n" +
	"  end\n" +
	"end\n" +
	"local function take()\n" +
	"  redis.call('zadd', S, d(now + lease), tok)\n" +
	"  noteLimit(limit)\n" +
	"  keep(lease)\n" +
	"  return 1\n" +
	"end\n" +
	"if mine and tonumber(mine) > now then\n" +
	"  if not rsv then return 1 end\n" +
	"  redis.call('zrem', S, 'fair:' .. tok)\n" +
	"  return take()\n" +
	"end\n" +
	fairQueuePrelude + fairSemaphorePart +
	"local live = liveNow()\n" +
	"if ARGV[5] == '1' then\n" +
	"  if live < limit and not anyLeft() then take() tidy(0) return 1 end\n" +
	"  advance(limit, live, false) tidy(0) return 0\n" +
	"end\n" +
	"local fresh, n = enqueue(tok, wl, 0)\n" +
	"if fresh and (n == 1 or tonumber(stored) ~= -limit) then redis.call('zadd', Q, d(-limit), '#') end\n" +
	"local _, got = advance(limit, live, true)\n" +
	"if got then take() tidy(wl) return 1 end\n" +
	"tidy(wl)\n" +
	"if fresh then return 2 - redis.call('zcard', Q) end\n" +
	"return -position(tok)"

// FairSemaphoreRenewScript renews a queued waiter's waiter lease (KEYS as
// FairSemaphoreTryScript; ARGV[1] = token, ARGV[2] = waiter lease ms) and
// grants the free permits under the stored limit (the holders', or the
// queue's). Replies as FairMutexRenewScript's.
const FairSemaphoreRenewScript = fairSemaphoreMine + fairSemaphoreStart +
	"local wl = tonumber(ARGV[2])\n" +
	"if mine and tonumber(mine) > now then return 2 end\n" +
	fairQueuePrelude + fairSemaphorePart +
	"if not redis.call('zscore', Q, tok) then return 0 end\n" +
	"redis.call('zadd', L, d(now + wl), tok)\n" +
	"left = true\n" +
	"local live = liveNow()\n" +
	"local s = stored or redis.call('zscore', Q, '#')\n" +
	"local _, got = advance(s and -tonumber(s), live, false)\n" +
	"tidy(wl)\n" +
	"if got then return 2 end\n" +
	"return -position(tok)"

// FairSemaphoreReleaseScript gives a fair holder's permit back and hands
// it on (KEYS as FairSemaphoreTryScript; ARGV[1] = token, not empty): the
// token's permit and reservation are removed — or, holding neither, its
// place in the queue (a holder or a grantee is not queued: every grant
// dequeued it) — the free permits granted to the heads under the stored
// limit, and the set deleted when nothing in it is live. Replies: 1 = a
// live permit was released, 0 = none.
const FairSemaphoreReleaseScript = "if ARGV[1] == '' then return redis.error_reply('ERR holder owner token must not be empty') end\n" +
	"local S, tok = KEYS[1], ARGV[1]\n" +
	"local mine = redis.call('zscore', S, tok)\n" +
	fairSemaphoreStart + fairQueuePrelude + fairSemaphorePart +
	"local released = 0\n" +
	"if mine and tonumber(mine) > now then released = 1 end\n" +
	"if redis.call('zrem', S, tok, 'fair:' .. tok) == 0 then dequeue(tok) end\n" +
	"local live = liveNow()\n" +
	"local s = stored or redis.call('zscore', Q, '#')\n" +
	"live = advance(s and -tonumber(s), live, false)\n" +
	"if live == 0 then redis.call('del', S) end\n" +
	"tidy(0)\n" +
	"return released"

// fairRWStart reads the read/write lock's writer key (W = KEYS[1], R =
// KEYS[2] the readers set; v: the writer key's value) and now; keepR
// raises the readers' TTL.
const fairRWStart = "local W, R, tok = KEYS[1], KEYS[2], ARGV[1]\n" +
	"local v = redis.call('get', W)\n"

// fairRWPart is the read/write lock's queue part. liveReaders removes the
// ended readers and reservations and counts the live ones. advance walks
// the queue from its head, a few waiters at a time: a run of readers is
// granted while no writer holds, is reserved or waits (v, the writer key);
// a writer at the head is granted once no reader is live (nr), and until
// then leaves its waiting marker ("waiting:" + token, for what is left of
// its waiter lease), which refuses every new reader as a non-fair writer's
// does. The script's own token, when takeMine, is only dequeued (its
// caller takes the hold). advance replies the live readers after, whether
// the token was granted and whether it wrote the writer key.
const fairRWPart = "local function keepR(ms) if redis.call('pttl', R) < ms then redis.call('pexpire', R, d(ms)) end end\n" +
	"local function liveReaders()\n" +
	"  redis.call('zremrangebyscore', R, '-inf', d(now))\n" +
	"  return redis.call('zcard', R)\n" +
	"end\n" +
	"local function readersIfFree(v)\n" +
	"  if v and string.sub(v, 1, 8) ~= 'waiting:' then return 0 end\n" +
	"  return liveReaders()\n" +
	"end\n" +
	"local function advance(v, nr, takeMine)\n" +
	"  if v and string.sub(v, 1, 8) ~= 'waiting:' then return nr, false, false end\n" +
	"  local got, first, granted = false, true, 0\n" +
	"  while granted < 64 do\n" +
	"    local hs, ss, k = heads(first and 1 or 8)\n" +
	"    if #hs == 0 then left = false return nr, got, false end\n" +
	"    local run, add, longest = {}, {}, 1\n" +
	"    local stop, wrote, gone = false, false, 0\n" +
	"    for i, h in ipairs(hs) do\n" +
	"      if tonumber(ss[i]) % 2 == 1 then\n" +
	"        stop = true\n" +
	"        if first and i == 1 and (not v or v == 'waiting:' .. h) then\n" +
	"          local l = leaseLeft(h)\n" +
	"          if nr > 0 then\n" +
	"            redis.call('set', W, 'waiting:' .. h, 'PX', d(l))\n" +
	"          else\n" +
	"            dequeue(h)\n" +
	"            gone = 1\n" +
	"            if h == tok then got = true end\n" +
	"            if h ~= tok or not takeMine then redis.call('set', W, 'fair:' .. h, 'PX', d(l)) end\n" +
	"          end\n" +
	"          wrote = true\n" +
	"        end\n" +
	"        break\n" +
	"      end\n" +
	"      if v then stop = true break end\n" +
	"      run[#run + 1] = h\n" +
	"      if h == tok then got = true end\n" +
	"      if h ~= tok or not takeMine then\n" +
	"        local l = leaseLeft(h)\n" +
	"        add[#add + 1] = d(now + l)\n" +
	"        add[#add + 1] = 'fair:' .. h\n" +
	"        longest = math.max(longest, l)\n" +
	"      end\n" +
	"    end\n" +
	"    if #run > 0 then\n" +
	"      redis.call('zrem', Q, unpack(run))\n" +
	"      redis.call('zrem', L, unpack(run))\n" +
	"      if #add > 0 then redis.call('zadd', R, unpack(add)) keepR(longest) end\n" +
	"      nr, granted = nr + #run, granted + #run\n" +
	"    end\n" +
	"    if stop then left = k > gone + #run return nr, got, wrote end\n" +
	"    if k <= #hs then left = false return nr, got, false end\n" +
	"    first = false\n" +
	"  end\n" +
	"  left = true\n" +
	"  return nr, got, false\n" +
	"end\n"

// FairRWTryScript is one try of a fair waiter for a read/write lock
// (KEYS[1] = the writer key, KEYS[2] = the readers set, KEYS[3], KEYS[4] =
// the queue; ARGV[1] = token, ARGV[2] = lease ms, ARGV[3] = waiter lease
// ms, ARGV[4] = "1" for the write hold, "0" for a read hold, ARGV[5] = "1"
// for a single try). The token's hold is the hold (reply 1), and so is its
// live reservation, which becomes the hold with lease ms (touching nothing
// else). A single try takes the hold only when nobody is queued and it is
// free for it (a read hold: no writer key; the write hold: no writer key
// and no live reader), else it advances the queue and refuses (reply 0).
// Otherwise the token is queued (once: its ticket is kept), its waiter
// lease renewed, the queue advanced — the token's grant taken at once —
// and the reply is −(position). The writer key is read first, the readers
// set before it is written (WRONGTYPE); a write token beginning with
// "waiting:" is refused.
const FairRWTryScript = "if string.sub(ARGV[1], 1, 8) == 'waiting:' then\n" +
	"  return redis.error_reply('ERR write lock owner token must not begin with waiting:')\n" +
	"end\n" +
	"if ARGV[1] == '' then return redis.error_reply('ERR holder owner token must not be empty') end\n" +
	fairRWStart +
	"local writer = ARGV[4] == '1'\n" +
	"if writer and v == tok then return 1 end\n" +
	"if writer and v == 'fair:' .. tok then redis.call('set', W, tok, 'PX', ARGV[2]) return 1 end\n" +
	serverNow + fairNumbers +
	"local lease, wl = tonumber(ARGV[2]), tonumber(ARGV[3])\n" +
	"local function take()\n" +
	"  if writer then redis.call('set', W, tok, 'PX', ARGV[2]) return 1 end\n" +
	"  redis.call('zadd', R, d(now + lease), tok)\n" +
	"  if redis.call('pttl', R) < lease then redis.call('pexpire', R, ARGV[2]) end\n" +
	"  return 1\n" +
	"end\n" +
	"if not writer then\n" +
	"  local rsv = redis.call('zscore', R, 'fair:' .. tok)\n" +
	"  if rsv and tonumber(rsv) > now then redis.call('zrem', R, 'fair:' .. tok) return take() end\n" +
	"  local s = redis.call('zscore', R, tok)\n" +
	"  if s and tonumber(s) > now then return 1 end\n" +
	"end\n" +
	fairQueuePrelude + fairRWPart +
	"local nr = readersIfFree(v)\n" +
	"if ARGV[5] == '1' then\n" +
	"  if not v and (not writer or nr == 0) and not anyLeft() then take() tidy(0) return 1 end\n" +
	"  advance(v, nr, false) tidy(0) return 0\n" +
	"end\n" +
	"local fresh = enqueue(tok, wl, writer and 1 or 0)\n" +
	"local _, got = advance(v, nr, true)\n" +
	"if got then take() tidy(wl) return 1 end\n" +
	"tidy(wl)\n" +
	"if fresh then return 1 - redis.call('zcard', Q) end\n" +
	"return -position(tok)"

// FairRWRenewScript renews a queued waiter's waiter lease (KEYS as
// FairRWTryScript; ARGV[1] = token, ARGV[2] = waiter lease ms) and
// advances the queue. Replies as FairMutexRenewScript's.
const FairRWRenewScript = fairRWStart +
	"if v == tok or v == 'fair:' .. tok then return 2 end\n" +
	serverNow + fairNumbers +
	"local wl = tonumber(ARGV[2])\n" +
	"for _, m in ipairs({tok, 'fair:' .. tok}) do\n" +
	"  local s = redis.call('zscore', R, m)\n" +
	"  if s and tonumber(s) > now then return 2 end\n" +
	"end\n" +
	fairQueuePrelude + fairRWPart +
	"if not redis.call('zscore', Q, tok) then return 0 end\n" +
	"redis.call('zadd', L, d(now + wl), tok)\n" +
	"left = true\n" +
	"local _, got = advance(v, readersIfFree(v), false)\n" +
	"tidy(wl)\n" +
	"if got then return 2 end\n" +
	"return -position(tok)"

// FairRWReleaseScript releases a fair holder of a read/write lock and
// hands the lock on (KEYS as FairRWTryScript; ARGV[1] = token, ARGV[2] =
// "1" for the write hold, "0" for a read hold): the token's hold,
// reservations and waiting marker are removed — or, holding none, its
// place in the queue (a waiting writer's too) — and the queue advanced; a
// writer key the token held and nobody was granted is deleted. Replies: 1
// = a live hold was released, 0 = none.
const FairRWReleaseScript = fairRWStart +
	"local s = redis.call('zscore', R, tok)\n" +
	"local writer = ARGV[2] == '1'\n" +
	serverNow + fairNumbers + fairQueuePrelude + fairRWPart +
	"local released = 0\n" +
	"if writer and v == tok then released = 1 end\n" +
	"if not writer and s and tonumber(s) > now then released = 1 end\n" +
	"local held = v == tok or v == 'fair:' .. tok\n" +
	"if s or not writer then held = redis.call('zrem', R, tok, 'fair:' .. tok) > 0 or held end\n" +
	"if not held then dequeue(tok) end\n" +
	"local mineW = v == tok or v == 'fair:' .. tok or v == 'waiting:' .. tok\n" +
	"if mineW then v = false end\n" +
	"local _, _, wrote = advance(v, readersIfFree(v), false)\n" +
	"if mineW and not wrote then redis.call('del', W) end\n" +
	"tidy(0)\n" +
	"return released"
