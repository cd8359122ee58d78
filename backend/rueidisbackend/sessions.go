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
	ks := s.k.session(token)
	v, ok, err := s.cachedValue(ctx, ks.login)
	if !ok {
		return "", false, err
	}
	l, ok := parseLogin(string(v))
	if !ok {
		return "", false, nil // not written by this version: no session
	}
	now := s.nowMs()
	switch {
	case now >= l.created+s.life:
		return "", false, nil
	case now < l.deadline:
		return l.user, true, nil
	}
	seen, err := s.c.Do(ctx, s.c.B().Get().Key(ks.seen).Build()).ToString()
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
	return l.user, true, nil
}

// startSession creates a session unless a live one holds the keys, dropping
// an expired one first, and fills it with the data RenewSession moves. On a
// single server (KEYS 6 and 7 given) it also indexes the session.
//
// KEYS: the session's, then index and the user's index, optional.
// ARGV: sessionArgs, token, login value, then three lists, each its length
// first: recent items (newest first), cart item-count pairs and values
// key-value pairs. Answers {EXISTS} or {OK, the dropped session's login or
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
redis.call('SET', KEYS[2], SEEN, 'PX', ttl)
local i = 9
for k = 3, 5 do
  local n = tonumber(ARGV[i])
  if n > 0 then
    if k == 3 then
      redis.call('RPUSH', KEYS[k], unpack(ARGV, i + 1, i + n))
    else
      redis.call('HSET', KEYS[k], unpack(ARGV, i + 1, i + n))
    end
    redis.call('PEXPIRE', KEYS[k], ttl)
  end
  i = i + n + 1
end
if KEYS[6] then redis.call('ZADD', KEYS[6], STAMP, ARGV[7]) end
if KEYS[7] then indexUser(KEYS[7], ARGV[7], string.match(c, '^[^/]+')) end
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

// refreshSession refreshes a live session and views an item, writing
// nothing if the session is not live. It rewrites the login only when its
// coarse deadline is less than half an idle timeout away, and only then
// writes the session's stamp to the index, so that most refreshes touch
// neither a cached key nor the shared index (cleaning corrects index
// entries that lag behind). On a single server (KEYS 6 and 7 given) it does
// the index and view writes itself; in a cluster the caller does them once
// the script has answered.
//
// KEYS: the session's, then index and viewed, optional. ARGV: sessionArgs,
// token, item ("" for none), recent limit. Answers {NO_SESSION} or {OK,
// user, the login written or nil, the session's stamp}.
var refreshSession = sessionScript(`
local s = sessionAt(KEYS[1], KEYS[2])
if not s or not s.live then return {NO_SESSION} end
local login, deadline = false, s.deadline
if deadline - NOW < HALF then
  deadline = tonumber(NEWD)
  login = s.c .. ' ' .. NEWD .. ' ' .. s.user
end
local ttl = keyTTL(s.created, deadline)
local seen = SEEN
if s.seen and s.stamp >= tonumber(STAMP) then seen = s.seen end
redis.call('SET', KEYS[2], seen, 'PX', ttl)
if login then
  redis.call('SET', KEYS[1], login, 'PX', ttl)
  expireRest(ttl)
end
if ARGV[8] ~= '' then pushRecent(ARGV[8], ARGV[9], ttl) end
local stamp = string.match(seen, '^%S+')
if KEYS[6] then
  if login then redis.call('ZADD', KEYS[6], stamp, ARGV[7]) end
  if ARGV[8] ~= '' then redis.call('ZINCRBY', KEYS[7], -1, ARGV[8]) end
end
return {OK, s.user, login, stamp}
`)

// RefreshSession implements driver.Store. On a single server it is one
// script. In a cluster the index and the view counts live on other slots,
// and are written only if the session is live, so they follow the script
// in a second round trip, made only when there is an item to count or the
// index to move.
func (s *store) RefreshSession(ctx context.Context, token, item string) (string, bool, error) {
	stamp, now := s.nextStamp()
	ks := s.k.session(token)
	keys := ks.all()
	if !s.cluster {
		keys = append(keys, s.k.index(), s.k.viewed())
	}
	res, err := s.do(ctx, s.scriptCall(refreshSession, keys,
		s.sessionArgs(now, seenValue(stamp, now), token, item, s.limit)))[0].ToArray()
	if err != nil {
		return "", false, err
	}
	if st, err := status(res); err != nil || st != driver.OK {
		return "", false, err
	}
	if len(res) < 4 {
		return "", false, errShortReply
	}
	user, err := res[1].ToString()
	if err != nil {
		return "", false, err
	}
	login, moved, err := optString(res[2])
	if err != nil {
		return "", false, err
	}
	if moved {
		s.own.wrote(ks.login, []byte(login))
	}
	if s.cluster {
		var calls []call
		if moved {
			sessionStamp, err := res[3].ToString()
			if err != nil {
				return "", false, err
			}
			calls = append(calls, s.bumpCall(token, sessionStamp))
		}
		if item != "" {
			calls = append(calls, s.viewCall(item))
		}
		if err := s.send(ctx, calls); err != nil {
			return "", false, err
		}
	}
	return user, true, nil
}

// updateToken is UpdateToken's part on the session's slot: it refreshes a
// live session, setting its user, or replaces an absent or expired one by a
// new session. It writes the login only when the user changes, the session
// is new or the coarse deadline needs moving, keeps the largest last-seen
// stamp (so the stamp and the index agree whatever order concurrent updates
// land in), and moves the item to the front of the recent list. On a single
// server (KEYS 6 to 8 given) it also writes the index, the view count and
// the user's index.
//
// KEYS: the session's, then index, viewed and the user's index, optional.
// ARGV: sessionArgs, token, user, item ("" for none), recent limit. Answers
// {1 if the session is new else 0, the login written or nil, its created
// stamp, the login of the session replaced or of the user replaced, or
// nil}.
var updateToken = sessionScript(`
local s = sessionAt(KEYS[1], KEYS[2])
local USER, ITEM = ARGV[8], ARGV[9]
local fresh, login, prev, cstamp, ttl = 0, false, false, STAMP, nil
local seen = SEEN
if s and s.live then
  cstamp = s.cstamp
  local deadline = s.deadline
  if s.user ~= USER or deadline - NOW < HALF then
    deadline = tonumber(NEWD)
    login = s.c .. ' ' .. NEWD .. ' ' .. USER
    if s.user ~= USER then prev = s.login end
  end
  ttl = keyTTL(s.created, deadline)
  if s.seen and s.stamp >= tonumber(STAMP) then seen = s.seen end
  if login then
    redis.call('SET', KEYS[1], login, 'PX', ttl)
    expireRest(ttl)
  end
else
  if s then prev = s.login end
  dropSession()
  fresh = 1
  login = NEWC .. ' ' .. NEWD .. ' ' .. USER
  ttl = keyTTL(NOW, tonumber(NEWD))
  redis.call('SET', KEYS[1], login, 'PX', ttl)
end
redis.call('SET', KEYS[2], seen, 'PX', ttl)
if ITEM ~= '' then pushRecent(ITEM, ARGV[10], ttl) end
if KEYS[6] then
  redis.call('ZADD', KEYS[6], string.match(seen, '^%S+'), ARGV[7])
  if ITEM ~= '' then redis.call('ZINCRBY', KEYS[7], -1, ITEM) end
  if fresh == 1 or prev then indexUser(KEYS[8], ARGV[7], cstamp) end
end
return {fresh, login, cstamp, prev}
`)

// UpdateToken implements driver.Store in one round trip: on a single
// server one script; in a cluster the session script, the index entry and
// the view count (the latter two on their own slots), sent together. When
// the session is new or changes user, its user's index is written in a
// second round trip (in a cluster, or to remove a former user's entry).
func (s *store) UpdateToken(ctx context.Context, token, user, item string) error {
	stamp, now := s.nextStamp()
	ks := s.k.session(token)
	keys := ks.all()
	if !s.cluster {
		keys = append(keys, s.k.index(), s.k.viewed(), s.k.user(user))
	}
	calls := []call{s.scriptCall(updateToken, keys,
		s.sessionArgs(now, seenValue(stamp, now), token, user, item, s.limit))}
	if s.cluster {
		calls = append(calls, s.indexCall(token, stamp))
		if item != "" {
			calls = append(calls, s.viewCall(item))
		}
	}
	res := s.do(ctx, calls...)
	reply, err := res[0].ToArray()
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
	for _, r := range res[1:] {
		if err := r.Error(); err != nil {
			return err
		}
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

// RecentItems implements driver.Store. The list changes on every view, so
// it is not cached.
func (s *store) RecentItems(ctx context.Context, token string) ([]string, error) {
	ks := s.k.session(token)
	msg, ok, err := s.readLive(ctx, ks, s.c.B().Lrange().Key(ks.recent).Start(0).Stop(-1).Build())
	if !ok {
		return nil, err
	}
	items, err := msg.AsStrSlice()
	if err != nil || len(items) == 0 {
		return nil, err
	}
	return items, nil
}

// SessionCount implements driver.Store.
func (s *store) SessionCount(ctx context.Context) (int, error) {
	n, err := s.c.Do(ctx, s.c.B().Zcard().Key(s.k.index()).Build()).AsInt64()
	return int(n), err
}
