package rueidisbackend

import (
	"context"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail/driver"
)

// CheckToken implements driver.Store, reading the login key through the
// client-side cache. While the coarse deadline the login holds lies ahead,
// the session is surely live (its lifetime permitting) and no round trip is
// made; past it, the exact last-seen time is read from the server.
func (s *store) CheckToken(ctx context.Context, token string) (string, bool, error) {
	v, ok, err := s.cachedString(ctx, s.k.sessionKey(loginKind, token))
	if !ok {
		return "", false, err
	}
	l, ok := parseLogin(v)
	if !ok {
		return "", false, nil // not written by this version: no session
	}
	now := s.nowMs()
	if now >= l.created+s.life {
		return "", false, nil
	}
	if now >= l.deadline {
		seen, err := s.c.Do(ctx, s.c.B().Get().Key(s.k.sessionKey(seenKind, token)).Build()).ToString()
		if rueidis.IsRedisNil(err) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		_, last, ok := parseSeen(seen)
		if !ok || !s.live(now, l.created, last) {
			return "", false, nil
		}
	}
	if out, err := s.revokedLogin(ctx, token, l.user, l.created); out || err != nil {
		return "", false, err
	}
	return l.user, true, nil
}

// startSession creates a session unless a live one holds the keys, dropping
// an expired one first, and fills it with the data RenewSession moves. On a
// single server (KEYS 5 and 6 given) it also indexes the session.
//
// KEYS: the session's, then the session index and the user's index,
// optional. ARGV: sessionArgs, token, login value, then three lists, each
// its length first: recent items (oldest first), cart item-count pairs and
// values key-value pairs. Answers {EXISTS} or {OK, the dropped session's login or
// nil}.
var startSession = sessionScript(`
local s = sessionAt(KEYS[1], KEYS[2])
if s and s.live then return {EXISTS} end
local dropped = false
if s then dropped = s.login end
dropSession()
local login = ARGV[8]
local c, d = string.match(login, '^(%S+) (%S+) ')
local _, created = stampMs(c)
local ttl = keyTTL(created, tonumber(d))
redis.call('SET', KEYS[1], login, 'PX', ttl)
local n = tonumber(ARGV[9])
local seen = SEEN
if n > 0 then seen = joinSeen(SEEN, n, table.concat({unpack(ARGV, 10, 9 + n)}, '\n') .. '\n') end
redis.call('SET', KEYS[2], seen, 'PX', ttl)
local i = 10 + n
for k = 3, 4 do
  n = tonumber(ARGV[i])
  if n > 0 then
    redis.call('HSET', KEYS[k], unpack(ARGV, i + 1, i + n))
    redis.call('PEXPIRE', KEYS[k], ttl)
  end
  i = i + n + 1
end
if KEYS[5] then redis.call('ZADD', KEYS[5], STAMP, ARGV[7]) end
if KEYS[6] then indexUser(KEYS[6], ARGV[7], string.match(c, '^[^/]+')) end
return {OK, dropped}
`)

// StartSession implements driver.Store: one script on the session's slot
// and, unless that indexed the session already (on a single server), the
// index writes in a second round trip.
func (s *store) StartSession(ctx context.Context, token, user string) (driver.Status, error) {
	stamp, now := s.nextStamp()
	ks := s.k.session(token)
	login := loginValue(createdField(stamp, now), now+s.idle, user)
	keys := ks.all()
	if !s.cluster {
		keys = append(keys, s.k.index())
		if user != "" {
			keys = append(keys, s.k.user(user))
		}
	}
	st, dropped, err := s.start(ctx, keys, s.sessionArgs(now, seenValue(stamp, now), token, login, "0", "0", "0"))
	if err != nil || st != driver.OK {
		return st, err
	}
	s.own.wrote(ks.login, []byte(login))
	var calls []call
	if s.cluster {
		calls = append(calls, s.indexCall(token, stamp))
		if user != "" {
			calls = append(calls, s.addUserCall(user, token, formatStamp(stamp)))
		}
	}
	calls = append(calls, s.unindexDropped(token, dropped, user)...)
	return driver.OK, s.send(ctx, calls)
}

// start runs startSession and returns its status and the login of the
// session it dropped, if any.
func (s *store) start(ctx context.Context, keys, args []string) (driver.Status, string, error) {
	res, err := s.do(ctx, s.scriptCall(startSession, keys, args))[0].ToArray()
	if err != nil {
		return 0, "", err
	}
	st, err := status(res)
	if err != nil || st != driver.OK {
		return st, "", err
	}
	if len(res) < 2 {
		return 0, "", errShortReply
	}
	dropped, _, err := optString(res[1])
	return driver.OK, dropped, err
}

// unindexDropped returns the call that removes a session that a new one
// under token replaced from its user's index, if it had a user other than
// user (whose index the new session's entry replaces).
func (s *store) unindexDropped(token, droppedLogin, user string) []call {
	l, ok := parseLogin(droppedLogin)
	if !ok || l.user == "" || l.user == user {
		return nil
	}
	return []call{s.unindexUserCall(l.user, []string{token, l.cstamp})}
}

// refreshSession refreshes a live session and puts an item first in its
// recent items, writing nothing if the session is not live, or if its
// login was written less than TouchEvery ago and there is no new item. It
// rewrites the login only once TouchEvery has passed, and only then writes
// the session's stamp to the index, so that most refreshes touch neither a
// cached key nor the shared index (cleaning corrects index entries that lag
// behind). On a single server (KEYS 5 given) it writes the index entry
// itself; in a cluster the caller does once the script has answered.
//
// KEYS: the session's, then the session index, optional. ARGV:
// sessionArgs, token, item ("" for none), recent limit. Answers
// {NO_SESSION}; {OK, user, the login written, the session's stamp} if it
// rewrote the login; or, commonly, just the user.
var refreshSession = sessionScript(refreshBody)

const refreshBody = `
local s = sessionAt(KEYS[1], KEYS[2], true)
if not s or not s.live then return {NO_SESSION} end
local login, deadline = false, s.deadline
-- A visit within TOUCH of the last full write that views no new item
-- writes nothing (the client answers most of them from its cache).
if not due(deadline) and (ARGV[8] == '' or newestOf(s.seen) == ARGV[8]) then return s.user end
if due(deadline) then
  deadline = tonumber(NEWD)
  login = s.c .. ' ' .. NEWD .. ' ' .. s.user
end
local ttl = (login or not s.seen) and keyTTL(s.created, deadline)
local seen = writeSeen(s, ARGV[8], ARGV[9], ttl)
local stamp = false
if login then
  redis.call('SET', KEYS[1], login, 'PX', ttl)
  expireRest(ttl)
  stamp = string.match(seen, '^%S+')
end
if KEYS[5] and login then redis.call('ZADD', KEYS[5], stamp, ARGV[7]) end
if not login then return s.user end -- the common case, in brief
return {OK, s.user, login, stamp}
`

// RefreshSession implements driver.Store. On a single server it is one
// script. In a cluster the index lives on another slot, and is written
// only if the session is live, so it follows the script in a second round
// trip, made only when the index entry moves. A visit that the script would
// write nothing for (see quiet) is answered from the client-side cache,
// without a round trip.
func (s *store) RefreshSession(ctx context.Context, token, item string) (string, bool, error) {
	ks := s.k.session(token)
	if v, found, err := s.cachedString(ctx, ks.login); err != nil {
		return "", false, err
	} else if l, ok := parseLogin(v); found && ok {
		if out, err := s.revokedLogin(ctx, token, l.user, l.created); out || err != nil {
			return "", false, err
		}
		if quiet, err := s.quiet(ctx, ks, l, item); quiet || err != nil {
			return l.user, err == nil, err
		}
	}
	stamp, now := s.nextStamp()
	var keys []string
	if s.cluster {
		keys = ks.all()
	} else {
		keys = ks.allWith(s.k.index())
	}
	msg, err := s.runScript(ctx, s.batches.refresh, refreshSession, keys,
		s.sessionArgs(now, seenValue(stamp, now), token, item, s.limit))
	if err != nil {
		return "", false, err
	}
	r, live, err := refreshReply(msg)
	if !live || err != nil {
		return "", false, err
	}
	if item != "" {
		// The recent items may have changed: until the cache has heard,
		// quiet reads them from the server.
		s.own.deleted(ks.seen)
	}
	if r.moved {
		s.own.wrote(ks.login, []byte(r.login))
	}
	if s.cluster && r.moved {
		// The session is refreshed: a failed move of the index entry is
		// left to cleaning, which moves lagging entries up.
		s.withDeferred(ctx, s.bumpCall(token, r.stamp))
	}
	return r.user, true, nil
}

// quiet reports whether a visit of the session whose login is l, viewing
// item, would be written by nothing: the session is surely live (before
// its coarse deadline and within its lifetime), its login was written less
// than TouchEvery ago, and item is "" or its newest recent item. The login
// and the recent items come from the client-side cache.
func (s *store) quiet(ctx context.Context, ks sessionKeys, l login, item string) (bool, error) {
	now := s.nowMs()
	if now >= l.deadline || now >= l.created+s.life || now-(l.deadline-s.idle) >= s.touch {
		return false, nil
	}
	if item == "" {
		return true, nil
	}
	seen, ok, err := s.cachedString(ctx, ks.seen)
	if !ok || err != nil {
		return false, err
	}
	recent := recentOf(seen)
	return len(recent) > 0 && recent[0] == item, nil
}

// refreshed is what refreshSession answers for a live session.
type refreshed struct {
	user         string
	moved        bool   // whether the login was rewritten
	login, stamp string // if moved: the login written and the session's stamp
}

// refreshReply reads refreshSession's answer; live is false if there was
// no live session.
func refreshReply(msg rueidis.RedisMessage) (r refreshed, live bool, err error) {
	if user, err := msg.ToString(); err == nil {
		return refreshed{user: user}, true, nil // the common answer, in brief
	}
	res, err := msg.ToArray()
	if err != nil {
		return r, false, err
	}
	if st, err := status(res); err != nil || st != driver.OK {
		return r, false, err
	}
	if len(res) < 4 {
		return r, false, errShortReply
	}
	if r.user, err = res[1].ToString(); err != nil {
		return r, false, err
	}
	if r.login, r.moved, err = optString(res[2]); err != nil || !r.moved {
		return r, err == nil, err
	}
	r.stamp, err = res[3].ToString()
	return r, err == nil, err
}

// updateToken is UpdateToken's part on the session's slot: it refreshes a
// live session, setting its user, or replaces an absent or expired one by a
// new session. It writes the login only when the user changes, the session
// is new or the coarse deadline needs moving, keeps the largest last-seen
// stamp (so the stamp and the index agree whatever order concurrent updates
// land in), and moves the item to the front of the recent items (its view
// is counted by the retail package). On a single server (KEYS 5 and 6
// given) it also writes the user's index and, when it writes the login,
// the index entry (as refreshSession).
//
// KEYS: the session's, then the session index and the user's index,
// optional. ARGV: sessionArgs, token, user, item ("" for none), recent
// limit. Answers {1 if the session is new else 0, the
// login written or nil, its created stamp, the login of the session
// replaced or of the user replaced, or nil}, or just 0 if the session was
// live and the login is left as it was.
var updateToken = sessionScript(updateBody)

const updateBody = `
local s = sessionAt(KEYS[1], KEYS[2], true)
local USER, ITEM = ARGV[8], ARGV[9]
local fresh, login, prev, cstamp, ttl = 0, false, false, STAMP, nil
if s and s.live then
  cstamp = s.cstamp
  local deadline, created = s.deadline, s.created
  if s.user ~= USER then -- a login: the lifetime starts again
    deadline, created, cstamp, prev = tonumber(NEWD), NOW, STAMP, s.login
    login = newCreated() .. ' ' .. NEWD .. ' ' .. USER
  elseif due(deadline) then
    deadline = tonumber(NEWD)
    login = s.c .. ' ' .. NEWD .. ' ' .. USER
  end
  if login or not s.seen then ttl = keyTTL(created, deadline) end
  if login then
    redis.call('SET', KEYS[1], login, 'PX', ttl)
    expireRest(ttl)
  end
else
  if s then prev = s.login end
  dropSession()
  s = nil
  fresh = 1
  login = newCreated() .. ' ' .. NEWD .. ' ' .. USER
  ttl = keyTTL(NOW, tonumber(NEWD))
  redis.call('SET', KEYS[1], login, 'PX', ttl)
end
local seen = writeSeen(s, ITEM, ARGV[10], ttl)
if KEYS[5] then
  if login then redis.call('ZADD', KEYS[5], string.match(seen, '^%S+'), ARGV[7]) end
  if fresh == 1 or prev then indexUser(KEYS[6], ARGV[7], cstamp) end
end
if fresh == 0 and not login and not prev then return 0 end -- the common case, in brief
return {fresh, login, cstamp, prev}
`

// UpdateToken implements driver.Store in one round trip: on a single
// server one script; in a cluster the session script, the index entry and
// the view count (the latter two on their own slots), sent together. When
// the session is new or changes user, its user's index is written in a
// second round trip (in a cluster, or to remove a former user's entry).
func (s *store) UpdateToken(ctx context.Context, token, user, item string) error {
	// A session its user logged out of everywhere is absent (revokedToken
	// removes it): replaced by a new one, as an expired one is.
	if _, err := s.revokedToken(ctx, token); err != nil {
		return err
	}
	stamp, now := s.nextStamp()
	ks := s.k.session(token)
	var keys []string
	if s.cluster {
		keys = ks.all()
	} else {
		keys = ks.allWith(s.k.index(), s.k.user(user))
	}
	args := s.sessionArgs(now, seenValue(stamp, now), token, user, item, s.limit)
	var msg rueidis.RedisMessage
	var err error
	if s.cluster {
		// The index entry goes with the script; if its node fails, it is
		// kept for later (deferred.go).
		res := s.withDeferred(ctx, s.scriptCall(updateToken, keys, args), s.indexCall(token, stamp))
		if msg, err = res[0].ToMessage(); err == nil && res[1].Error() != nil {
			s.deferred.keep(map[string]float64{token: stamp})
		}
	} else {
		msg, err = s.runScript(ctx, s.batches.update, updateToken, keys, args)
	}
	if err != nil {
		return err
	}
	s.own.deleted(ks.seen) // the recent items may have changed
	if n, err := msg.AsInt64(); err == nil && n == 0 {
		return nil // a live session refreshed, its login left as it was
	}
	reply, err := msg.ToArray()
	if err != nil {
		return err
	}
	if len(reply) < 4 {
		return errShortReply
	}
	fresh, err := reply[0].AsInt64()
	if err != nil {
		return err
	}
	login, wrote, err := optString(reply[1])
	if err != nil {
		return err
	}
	if wrote {
		s.own.wrote(ks.login, []byte(login))
	}
	prev, replaced, err := optString(reply[3])
	if err != nil || fresh == 0 && !replaced {
		return err
	}
	var more []call
	if s.cluster {
		cstamp, err := reply[2].ToString()
		if err != nil {
			return err
		}
		more = append(more, s.addUserCall(user, token, cstamp))
	}
	more = append(more, s.unindexDropped(token, prev, user)...)
	return s.send(ctx, more)
}

// RecentItems implements driver.Store, reading the session's login and
// seen key (its recent items) through the client-side cache: with
// TouchEvery, the seen key changes only on a new item or a full write.
func (s *store) RecentItems(ctx context.Context, token string) ([]string, error) {
	ks := s.k.session(token)
	if live, err := s.liveSession(ctx, token, ks); !live || err != nil {
		return nil, err
	}
	seen, _, err := s.cachedString(ctx, ks.seen)
	if err != nil {
		return nil, err
	}
	return recentOf(seen), nil
}

// SessionCount implements driver.Store: the size of the index.
func (s *store) SessionCount(ctx context.Context) (int, error) {
	n, err := s.c.Do(ctx, s.c.B().Zcard().Key(s.k.index()).Build()).AsInt64()
	return int(n), err
}
