package rueidisbackend

import (
	"context"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail/driver"
)

// A session's state lives in two keys on its slot: login, holding
// "CREATED DEADLINE USER", and seen, holding the last-seen stamp (see
// seenValue) followed by the recently viewed items (see recentOf), which
// change on the same refreshes. CREATED is the stamp the session was created (or last logged
// in) with, formatted as createdField; DEADLINE is Unix ms by the Store's
// clock. A session is live at now iff
//
//	now < lastSeen + IdleTimeout  and  now < created + Lifetime.
//
// DEADLINE is lastSeen + IdleTimeout as it was when login was last written:
// a lower bound of the real idle deadline, since lastSeen only grows. A
// refresh rewrites login only once TouchEvery has passed since it was
// written (DEADLINE - IdleTimeout), so CheckToken can answer from a cached
// login while DEADLINE lies ahead and reads seen from the server only after.
//
// Key TTLs follow from the same rule: a refresh that leaves DEADLINE alone
// happens within TouchEvery of the login's write, so the session cannot
// outlive keyEnd = min(DEADLINE + TouchEvery, created + Lifetime). Every write sets the TTL of the keys it writes to keyEnd - now
// + TTLSlack, and every rewrite of login moves keyEnd, so it sets that TTL
// on all the session's keys.
//
// A user's index scores each token with its session's CREATED stamp rather
// than its creation time: stamps are unique within a process, so removing
// an entry "if it is still the one of the session just deleted" cannot
// remove the entry of a session created again under the same token in the
// same millisecond.

// login is the content of a login key.
type login struct {
	created  int64  // Unix ms
	cstamp   string // the created stamp, as the user's index scores it
	deadline int64  // the coarse idle deadline, Unix ms
	user     string
}

// createdField formats a session's created stamp for its login key: the
// stamp, followed by "/MS" if the stamp is not within the millisecond the
// clock read (see nextStamp).
func createdField(stamp float64, now int64) string {
	if int64(math.Floor(stamp)) == now {
		return formatStamp(stamp)
	}
	return formatStamp(stamp) + "/" + i64(now)
}

// loginValue formats a login key's value.
func loginValue(created string, deadline int64, user string) string {
	return created + " " + i64(deadline) + " " + user
}

// parseLogin parses a login key's value; ok is false if it was not written
// by this version.
func parseLogin(v string) (l login, ok bool) {
	c, rest, ok1 := strings.Cut(v, " ")
	d, user, ok2 := strings.Cut(rest, " ")
	st, ms, two := strings.Cut(c, "/")
	created, ok3 := stampFloor(st)
	deadline, err := strconv.ParseInt(d, 10, 64)
	if !ok1 || !ok2 || !ok3 || err != nil {
		return login{}, false
	}
	l = login{created: created, cstamp: st, deadline: deadline, user: user}
	if two {
		var err error
		if l.created, err = strconv.ParseInt(ms, 10, 64); err != nil {
			return login{}, false
		}
	}
	return l, true
}

// stampFloor returns the whole milliseconds of a stamp: for one as
// formatStamp writes it (digits, then perhaps a point and more digits) with
// at most 15 digits before the point, its integer part, read without
// converting the fraction, as CheckToken reads a login on every page view;
// for anything else, the floor of its value as a float. (Beyond 15 digits
// formatStamp's digits are the float's shortest form, not its value.)
func stampFloor(st string) (int64, bool) {
	whole, frac, point := strings.Cut(st, ".")
	if len(whole) <= 15 && digits(whole) && (!point || digits(frac)) {
		n, err := strconv.ParseInt(whole, 10, 64)
		return n, err == nil
	}
	f, err := strconv.ParseFloat(st, 64)
	return int64(math.Floor(f)), err == nil
}

// digits reports whether s is one or more ASCII digits.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// parseSeen parses a seen key's value (see seenValue) into its stamp and
// the last-seen time in Unix ms.
func parseSeen(v string) (stamp float64, lastSeen int64, ok bool) {
	head, _, _ := strings.Cut(v, "\n")
	st, ms, two := strings.Cut(head, " ")
	stamp, err := strconv.ParseFloat(st, 64)
	if err != nil {
		return 0, 0, false
	}
	if !two {
		return stamp, int64(math.Floor(stamp)), true
	}
	lastSeen, err = strconv.ParseInt(ms, 10, 64)
	return stamp, lastSeen, err == nil
}

// stampOf returns the stamp of a seen value, as the index holds it.
func stampOf(seen string) string {
	head, _, _ := strings.Cut(seen, "\n")
	st, _, _ := strings.Cut(head, " ")
	return st
}

// recentOf returns the recently viewed items a seen value holds, newest
// first. The value is "HEAD" when there are none, else "HEAD\nN\nITEMS":
// HEAD as seenValue writes it, N the number of items and ITEMS the items,
// oldest first, each followed by "\n" (items hold no control characters),
// so that a script adds or moves the newest and drops the oldest with
// plain string searches. Keeping them in the seen key, which every refresh
// rewrites anyway, saves a key per session and the list commands of every
// view.
func recentOf(seen string) []string {
	_, rest, ok := strings.Cut(seen, "\n")
	if !ok {
		return nil
	}
	_, items, ok := strings.Cut(rest, "\n")
	if !ok || items == "" {
		return nil
	}
	recent := strings.Split(strings.TrimSuffix(items, "\n"), "\n")
	slices.Reverse(recent)
	return recent
}

// liveSession reports whether token's session is live, reading its login
// through the client-side cache: before the login's coarse deadline the
// session is surely live (within its lifetime), and only past it is the
// exact last-seen time read from the server. A session its user logged out
// of everywhere is not live, and goes (see revokedLogin).
func (s *store) liveSession(ctx context.Context, token string, ks sessionKeys) (bool, error) {
	v, found, err := s.cachedString(ctx, ks.login)
	if !found || err != nil {
		return false, err
	}
	l, ok := parseLogin(v)
	now := s.nowMs()
	if !ok || now >= l.created+s.life {
		return false, nil
	}
	if now >= l.deadline {
		seen, err := s.c.Do(ctx, s.c.B().Get().Key(ks.seen).Build()).ToString()
		if rueidis.IsRedisNil(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if _, last, ok := parseSeen(seen); !ok || !s.live(now, l.created, last) {
			return false, nil
		}
	}
	out, err := s.revokedLogin(ctx, token, l.user, l.created)
	return !out && err == nil, err
}

// sessionInfo is a session's state as its login and seen keys hold it.
type sessionInfo struct {
	user              string
	created, lastSeen int64
}

// infoFrom parses the replies to GET login and GET seen; ok is false if
// there is no session.
func (s *store) infoFrom(login, seen rueidis.RedisResult) (sessionInfo, bool, error) {
	v, err := login.ToString()
	if rueidis.IsRedisNil(err) {
		return sessionInfo{}, false, nil
	}
	if err != nil {
		return sessionInfo{}, false, err
	}
	l, ok := parseLogin(v)
	if !ok {
		return sessionInfo{}, false, nil
	}
	info := sessionInfo{user: l.user, created: l.created, lastSeen: l.created}
	sv, err := seen.ToString()
	switch {
	case err == nil:
		if _, last, ok := parseSeen(sv); ok {
			info.lastSeen = last
		}
	case !rueidis.IsRedisNil(err):
		return sessionInfo{}, false, err
	}
	return info, true, nil
}

// status reads the driver.Status a session script answers with first.
func status(reply []rueidis.RedisMessage) (driver.Status, error) {
	if len(reply) == 0 {
		return 0, errShortReply
	}
	n, err := reply[0].AsInt64()
	return driver.Status(n), err
}

// optString reads a reply that is a string or nil.
func optString(m rueidis.RedisMessage) (string, bool, error) {
	if m.IsNil() {
		return "", false, nil
	}
	v, err := m.ToString()
	return v, err == nil, err
}

// live reports whether a session created at created and last seen at
// lastSeen is live at now.
func (s *store) live(now, created, lastSeen int64) bool {
	return now < lastSeen+s.idle && now < created+s.life
}

// prelude starts every script that reads a session's state. Its KEYS start
// with the session's keys in the order of sessionKeys.all; its ARGV with
// sessionArgs. The scripts answer with driver.Status values.
//
// A script body names its keys and arguments KEYS[B+n] and ARGV[A+n] (the
// bodies are written KEYS[n] and ARGV[n]; offsetArgs rewrites them, and in
// the batched form puts the values every call shares at fixed positions,
// see layout), and reads sessionArgs only through the globals frame sets
// (NOW, SEEN...), so that the batched form of a script (see batchScript)
// can run the body for session after session, moving B and A on. The
// prelude's own functions name the session's keys KEYS[B+1] to KEYS[B+4]:
// those are never shared.
var prelude = `
local OK, NO_SESSION, EXISTS, FULL, TOO_MANY = ` + strings.Join([]string{
	itoa(int(driver.OK)), itoa(int(driver.NoSession)), itoa(int(driver.Exists)),
	itoa(int(driver.Full)), itoa(int(driver.TooMany))}, ", ") + `
local B, A = 0, 0 -- where the current session's KEYS and ARGV start
local NOW, SEEN, IDLE, LIFE, SLACK, NEWD, STAMP, TOUCH

-- shared reads the arguments a batch's sessions share: the clock's ms,
-- "IDLE:TOUCH" (the idle timeout and TouchEvery), lifetime and TTL slack,
-- and the idle deadline of a session refreshed now.
local function shared(now, idle, life, slack, newd)
  local i, t = string.match(idle, '^(%d+):(%d+)$')
  NOW, IDLE, TOUCH, LIFE, SLACK, NEWD = now + 0, i + 0, t + 0, life + 0, slack + 0, newd
end

-- due reports whether a session whose login holds deadline is due to be
-- written in full (touched): its login was written TOUCH or more ago.
local function due(deadline)
  return NOW - (deadline - IDLE) >= TOUCH
end

-- seenArg reads the seen value to write, and its stamp (commonly the
-- whole value, which then costs no new string).
local function seenArg(seen)
  local sp = string.find(seen, ' ', 1, true)
  SEEN, STAMP = seen, sp and string.sub(seen, 1, sp - 1) or seen
end

-- frame reads the current session's sessionArgs.
local function frame()
  shared(ARGV[A + 1], ARGV[A + 3], ARGV[A + 4], ARGV[A + 5], ARGV[A + 6])
  seenArg(ARGV[A + 2])
end

-- newCreated returns the created field of a session created now.
local function newCreated()
  return (string.gsub(SEEN, ' ', '/'))
end

-- stampMs returns the stamp and the ms of a seen value ("STAMP" or
-- "STAMP MS") or of a created field ("STAMP" or "STAMP/MS").
local function stampMs(v)
  local st, ms = string.match(v, '^([^ /]+)[ /]?(.*)$')
  st = tonumber(st)
  if not st then return nil end
  if ms == '' then return st, math.floor(st) end
  return st, tonumber(ms)
end

-- The seen key holds "HEAD" or "HEAD\nN\nITEMS": the last-seen stamp, and
-- the N recently viewed items, oldest first, each followed by "\n" (see
-- recentOf in state.go).

-- newestOf returns the newest recent item of a seen value, or nil.
local function newestOf(seen)
  return seen and string.match(seen, '\n([^\n]*)\n$')
end

-- joinSeen builds a seen value from its head, item count and items.
local function joinSeen(head, n, items)
  if n == 0 then return head end
  return head .. '\n' .. string.format('%d', n) .. '\n' .. items
end

-- alive reports whether a session created at the created ms, with the
-- given coarse deadline, is live: before the deadline it surely is (if
-- within its lifetime); after it, its seen value (nil if it has none) must
-- be younger than the idle timeout.
local function alive(created, deadline, seen)
  if NOW >= created + LIFE then return false end
  if NOW < deadline then return true end
  local last = created
  if seen then
    local _, seenMs = stampMs(string.match(seen, '^[^\n]*'))
    last = seenMs
  end
  return NOW < last + IDLE
end

-- sessionAt returns the session in the given login and seen keys, or nil.
-- It reads the seen key only if withSeen is true or the coarse deadline
-- has passed: before it the session is surely not idle-expired (s.seen is
-- then nil). Only the login is parsed here; writeSeen reads the seen value
-- where it needs to.
local function sessionAt(loginKey, seenKey, withSeen)
  local v, sv
  if withSeen then
    -- MGET answers nil for a key of another type, where GET fails: a key
    -- it finds missing is read again with GET, so that a foreign value is
    -- an error, not a session to overwrite.
    local r = redis.call('MGET', loginKey, seenKey)
    v, sv = r[1] or redis.call('GET', loginKey), r[2]
    if v and not sv then sv = redis.call('GET', seenKey) end
  else
    v = redis.call('GET', loginKey)
  end
  if not v then return nil end
  -- "STAMP[/MS] DEADLINE USER": the created ms are MS, or the stamp's
  -- whole part, read without converting the stamp's fraction. Each
  -- capture is a new string, hashed whole: the rare "/MS" is cut apart
  -- only when it is there.
  local c, ms, d, u = string.match(v, '^((%d+)%.?%d*/?%d*) (%-?%d+) (.*)$')
  if not c then return nil end -- not written by this version: no session
  local cstamp, slash = c, string.find(c, '/', 1, true)
  if slash then
    cstamp = string.sub(c, 1, slash - 1)
    if slash < #c then ms = string.sub(c, slash + 1) end
  end
  local s = {login = v, c = c, cstamp = cstamp, created = ms + 0, deadline = d + 0, user = u, seen = sv}
  if NOW >= s.deadline and not withSeen then s.seen = redis.call('GET', seenKey) end
  s.live = alive(s.created, s.deadline, s.seen)
  return s
end

-- liveAt returns the created ms and the coarse deadline of the live session
-- in the given login and seen keys, or nil. It is sessionAt for a script
-- that needs nothing else, without building the session's table.
local function liveAt(loginKey, seenKey)
  local v = redis.call('GET', loginKey)
  if not v then return nil end
  local whole, ms, d = string.match(v, '^(%d+)%.?%d*/?(%d*) (%-?%d+) ')
  if not whole then return nil end
  local created, deadline = (ms == '' and whole or ms) + 0, d + 0
  local seen = NOW >= deadline and redis.call('GET', seenKey) or nil
  if not alive(created, deadline, seen) then return nil end
  return created, deadline
end

-- keyTTL is the TTL, in ms and as a string, of the keys of a session with the given
-- created and deadline (see state.go).
local function keyTTL(created, deadline)
  -- At least 1 ms: a session is live, but another process's clock may run
  -- far ahead of the one that set the deadline, and a TTL of 0 deletes.
  -- Formatted here as an integer: Redis would format a Lua number with
  -- %.17g, which costs more than the rest of a refresh's arithmetic.
  return string.format('%d', math.max(math.min(deadline + TOUCH, created + LIFE) - NOW + SLACK, 1))
end

-- writeSeen writes the seen key of session s (nil for a new one) at ttl,
-- or, if ttl is false, keeping the TTL it has (s.seen must then be set: a
-- session's seen key has the TTL of its login, which changes only when the
-- login is rewritten):
-- the stamp SEEN, unless s holds a newer one (so that the stamp only grows
-- whatever order concurrent refreshes land in), and its recent items with
-- item ('' for none) moved or added last (the newest), keeping limit. It
-- cuts the stored value with plain searches (no pattern) and copies the
-- items once; when there are items and they stay as they are (no item, or
-- the newest again) and the TTL is kept, it writes the head in place if
-- its length is unchanged, copying no items, or nothing if the head is
-- unchanged too. Every string the script makes costs the server a hash of
-- all its bytes. It returns the head the key now holds, which starts with
-- the session's stamp.
local function writeSeen(s, item, limit, ttl)
  local old, head, a, kept = s and s.seen, SEEN, nil, false -- a: the end of old's head
  if old then
    a = string.find(old, '\n', 1, true)
    local e = string.find(old, ' ', 1, true) -- the old stamp ends at " MS" or at the head's end
    if not e or a and e > a then e = a end
    if (e and string.sub(old, 1, e - 1) or old) + 0 >= STAMP + 0 then
      head, kept = a and string.sub(old, 1, a - 1) or old, true
    end
  end
  local seen -- the value to write; nil if the items stay as they are
  if not a then
    seen = item == '' and head or head .. '\n1\n' .. item .. '\n'
  elseif item ~= '' then
    local b = string.find(old, '\n', a + 1, true) -- the items follow b
    local p = b -- then the "\n" before item, if the items hold it
    repeat
      p = string.find(old, item, p + 1, true)
    until not p or string.byte(old, p - 1) == 10 and string.byte(old, p + #item) == 10
    if not p then
      local n = string.sub(old, a + 1, b - 1)
      local had, max = n + 0, tonumber(limit)
      local count, from = had + 1, b -- the items kept start after from
      while count > max do
        from, count = string.find(old, '\n', from + 1, true), count - 1
      end
      if count ~= had then n = string.format('%d', count) end
      seen = head .. '\n' .. n .. '\n' .. string.sub(old, from + 1) .. item .. '\n'
    elseif p + #item < #old then -- "\nN\n", the items before item, the items after it
      seen = head .. string.sub(old, a, p - 1) .. string.sub(old, p + #item + 1) .. item .. '\n'
    end
  end
  if not seen and not ttl then
    if kept then return head end -- nothing changes
    if #head == a - 1 then
      redis.call('SETRANGE', KEYS[B + 2], 0, head)
      return head
    end
  end
  seen = seen or head .. string.sub(old, a)
  if ttl then
    redis.call('SET', KEYS[B + 2], seen, 'PX', ttl)
  else
    redis.call('SET', KEYS[B + 2], seen, 'KEEPTTL')
  end
  return head
end

-- expireRest sets ttl on the session's cart and values keys.
local function expireRest(ttl)
  redis.call('PEXPIRE', KEYS[B + 3], ttl)
  redis.call('PEXPIRE', KEYS[B + 4], ttl)
end

-- dropSession deletes every key of the session.
local function dropSession()
  redis.call('DEL', KEYS[B + 1], KEYS[B + 2], KEYS[B + 3], KEYS[B + 4])
end

-- indexUser adds token, created with stamp c, to a user's index, drops entries of
-- sessions whose lifetime has surely ended, and sets the index's TTL
-- beyond the end of every session it can hold.
local function indexUser(key, token, c)
  redis.call('ZADD', key, c, token)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', NOW - LIFE)
  redis.call('PEXPIRE', key, LIFE + SLACK)
end
`

// sessionScript is a script that starts with prelude and runs body once.
func sessionScript(body string) *script {
	return newScript(prelude + "frame()\n" + offsetArgs(body, layout{}))
}

// layout is where the batched form of a session script finds each call's
// KEYS and ARGV (see batchScript): the positions that hold the same value
// in every call of a Store (the recent limit, and the index and view count
// keys), which a batch sends once,
// ahead of the calls.
type layout struct {
	batched bool // false for the script that runs body once
	// keys and args are those positions, as the body names them (KEYS[n],
	// and ARGV[n] past sessionArgs), with their values, in the order the
	// batch sends them.
	keys, args []common
}

// commonAt returns the index in cs of the one at position pos, or -1.
func commonAt(cs []common, pos int) int {
	return slices.IndexFunc(cs, func(c common) bool { return c.pos == pos })
}

// commonBelow is how many of cs are at positions below pos.
func commonBelow(cs []common, pos int) int {
	n := 0
	for _, c := range cs {
		if c.pos < pos {
			n++
		}
	}
	return n
}

// batchScript is the batched form of a session script. Its KEYS are the
// common keys of lay, then each call's other KEYS. Its ARGV are the number
// of KEYS and of ARGV each call takes there, the arguments of sessionArgs
// that a batch shares (the clock's ms, the idle timeout, lifetime and TTL
// slack, the idle deadline of a session refreshed now), the common
// arguments of lay, then each call's own: its seen value and the script's
// other arguments. It answers with the array of body's answers, one a
// call, as one atomic step.
func batchScript(body string, lay layout) *script {
	lay.batched = true
	return newScript(prelude + "local function one()\n" + offsetArgs(body, lay) + `
end
local nk, na, out = tonumber(ARGV[1]), tonumber(ARGV[2]), {}
shared(ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
for j = 0, (#KEYS - ` + itoa(len(lay.keys)) + `) / nk - 1 do
  B, A = ` + itoa(len(lay.keys)) + ` + j * nk, ` + itoa(batchHead+len(lay.args)) + ` + j * na
  seenArg(ARGV[A + 1])
  out[j + 1] = one()
end
return out
`)
}

// sharedArgs is how many of sessionArgs a batch's sessions share: all but
// the seen value (see batchScript).
const sharedArgs = sessionArgCount - 1

// batchHead is how many ARGV a batch starts with before its common
// arguments: the counts of KEYS and ARGV a call takes, and sharedArgs.
const batchHead = 2 + sharedArgs

var argRef = regexp.MustCompile(`\b(KEYS|ARGV)\[(\d+)\]`)

// offsetArgs rewrites a script body's KEYS[n] and ARGV[n] for where lay
// puts them: as they are in a script that runs body once; in the batched
// form, KEYS[B+n'] and ARGV[A+n'] for a call's own (n' counting the
// positions lay does not make common), and the fixed position of a common
// one. A body reads sessionArgs only through the prelude's globals: naming
// one of them is a programming error.
func offsetArgs(body string, lay layout) string {
	return argRef.ReplaceAllStringFunc(body, func(ref string) string {
		m := argRef.FindStringSubmatch(ref)
		n, _ := strconv.Atoi(m[2])
		if m[1] == "KEYS" {
			if !lay.batched {
				return "KEYS[B + " + itoa(n) + "]"
			}
			if i := commonAt(lay.keys, n); i >= 0 {
				return "KEYS[" + itoa(i+1) + "]"
			}
			return "KEYS[B + " + itoa(n-commonBelow(lay.keys, n)) + "]"
		}
		if n <= sessionArgCount {
			panic("rueidisbackend: a session script names ARGV[" + m[2] + "], one of sessionArgs")
		}
		if !lay.batched {
			return "ARGV[A + " + itoa(n) + "]"
		}
		if i := commonAt(lay.args, n); i >= 0 {
			return "ARGV[" + itoa(batchHead+i+1) + "]"
		}
		// A call's own ARGV: its seen value, then its arguments past
		// sessionArgs but the common ones.
		return "ARGV[A + " + itoa(n-sharedArgs-commonBelow(lay.args, n)) + "]"
	})
}
