package rueidisbackend

import (
	"context"
	"math"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail/driver"
)

// A session's state lives in two keys on its slot: login, holding
// "CREATED DEADLINE USER", and seen, holding the last-seen stamp (see
// seenValue). CREATED is the stamp the session was created (or last logged
// in) with, formatted as createdField; DEADLINE is Unix ms by the Store's
// clock. A session is live at now iff
//
//	now < lastSeen + IdleTimeout  and  now < created + Lifetime.
//
// DEADLINE is lastSeen + IdleTimeout as it was when login was last written:
// a lower bound of the real idle deadline, since lastSeen only grows. A
// refresh rewrites login only when DEADLINE is less than half the idle
// timeout away, so CheckToken can answer from a cached login while DEADLINE
// lies ahead and reads seen from the server only after.
//
// Key TTLs follow from the same rule: a refresh that leaves DEADLINE alone
// happens at least half an idle timeout before it, so the session cannot
// outlive keyEnd = min(DEADLINE + IdleTimeout - IdleTimeout/2, created +
// Lifetime). Every write sets the TTL of the keys it writes to keyEnd - now
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
	stamp, err1 := strconv.ParseFloat(st, 64)
	deadline, err2 := strconv.ParseInt(d, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return login{}, false
	}
	l = login{created: int64(math.Floor(stamp)), cstamp: st, deadline: deadline, user: user}
	if two {
		var err error
		if l.created, err = strconv.ParseInt(ms, 10, 64); err != nil {
			return login{}, false
		}
	}
	return l, true
}

// parseSeen parses a seen key's value (see seenValue) into its stamp and
// the last-seen time in Unix ms.
func parseSeen(v string) (stamp float64, lastSeen int64, ok bool) {
	st, ms, two := strings.Cut(v, " ")
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
	st, _, _ := strings.Cut(seen, " ")
	return st
}

// readLive sends cmd, a read of one of a session's keys, together with
// reads of its state, in one round trip to the session's slot. ok is false
// if the session is not live; the reply to cmd is then not looked at.
func (s *store) readLive(ctx context.Context, ks sessionKeys, cmd rueidis.Completed) (rueidis.RedisMessage, bool, error) {
	res := s.c.DoMulti(ctx,
		s.c.B().Get().Key(ks.login).Build(),
		s.c.B().Get().Key(ks.seen).Build(),
		cmd)
	live, err := s.liveFrom(res[0], res[1])
	if !live || err != nil {
		return rueidis.RedisMessage{}, false, err
	}
	msg, err := res[2].ToMessage()
	if rueidis.IsRedisNil(err) {
		err = nil
	}
	return msg, err == nil, err
}

// liveFrom reports whether the replies to GET login and GET seen describe
// a live session.
func (s *store) liveFrom(login, seen rueidis.RedisResult) (bool, error) {
	info, ok, err := s.infoFrom(login, seen)
	return ok && s.live(s.nowMs(), info.created, info.lastSeen), err
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
var prelude = `
local OK, NO_SESSION, EXISTS, FULL, TOO_MANY = ` + strings.Join([]string{
	itoa(int(driver.OK)), itoa(int(driver.NoSession)), itoa(int(driver.Exists)),
	itoa(int(driver.Full)), itoa(int(driver.TooMany))}, ", ") + `
local NOW, SEEN, IDLE, LIFE, SLACK, NEWD = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local STAMP = string.match(SEEN, '^%S*')
local NEWC = (string.gsub(SEEN, ' ', '/')) -- the created field of a session created now
local HALF = math.floor(IDLE / 2)

-- stampMs returns the stamp and the ms of a seen value ("STAMP" or
-- "STAMP MS") or of a created field ("STAMP" or "STAMP/MS").
local function stampMs(v)
  local st, ms = string.match(v, '^([^ /]+)[ /]?(.*)$')
  st = tonumber(st)
  if not st then return nil end
  if ms == '' then return st, math.floor(st) end
  return st, tonumber(ms)
end

-- sessionAt returns the session in the given login and seen keys, or nil.
local function sessionAt(loginKey, seenKey)
  local v = redis.call('GET', loginKey)
  if not v then return nil end
  local c, d, u = string.match(v, '^(%S+) (%-?%d+) (.*)$')
  if not c then return nil end -- not written by this version: no session
  local cstamp, created = stampMs(c)
  if not cstamp then return nil end
  local s = {login = v, c = c, cstamp = string.match(c, '^[^/]+'), created = created, deadline = tonumber(d), user = u}
  s.seen = redis.call('GET', seenKey)
  s.last = s.created
  if s.seen then s.stamp, s.last = stampMs(s.seen) end
  s.live = NOW < s.last + IDLE and NOW < s.created + LIFE
  return s
end

-- keyTTL is the TTL, in ms, of the keys of a session with the given
-- created and deadline (see state.go).
local function keyTTL(created, deadline)
  -- At least 1 ms: a session is live, but another process's clock may run
  -- far ahead of the one that set the deadline, and a TTL of 0 deletes.
  return math.max(math.min(deadline + IDLE - HALF, created + LIFE) - NOW + SLACK, 1)
end

-- expireRest sets ttl on the session's recent, cart and values keys.
local function expireRest(ttl)
  redis.call('PEXPIRE', KEYS[3], ttl)
  redis.call('PEXPIRE', KEYS[4], ttl)
  redis.call('PEXPIRE', KEYS[5], ttl)
end

-- pushRecent moves item to the front of the recent list, keeping limit.
local function pushRecent(item, limit, ttl)
  if redis.call('LINDEX', KEYS[3], 0) ~= item then
    redis.call('LREM', KEYS[3], 1, item)
    redis.call('LPUSH', KEYS[3], item)
    redis.call('LTRIM', KEYS[3], 0, tonumber(limit) - 1)
  end
  redis.call('PEXPIRE', KEYS[3], ttl)
end

-- dropSession deletes every key of the session.
local function dropSession()
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
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

// sessionScript is a script that starts with prelude.
func sessionScript(body string) *script { return newScript(prelude + body) }
