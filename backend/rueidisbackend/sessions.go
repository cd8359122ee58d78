package rueidisbackend

import (
	"context"

	"github.com/redis/rueidis"
)

// CheckToken implements driver.Store, reading through the client-side
// cache: the login key changes only when the user does.
func (s *store) CheckToken(ctx context.Context, token string) (string, bool, error) {
	user, ok, err := s.cachedValue(ctx, s.k.sessionKey(loginKind, token))
	if !ok {
		return "", false, err
	}
	return string(user), true, nil
}

// updateSession is UpdateToken's part on the session's slot. It writes the
// user only when it changes (so cached logins stay valid), keeps the largest
// last-seen stamp (so the stamp and the index agree whatever order
// concurrent updates land in), and moves the item to the front of the
// recent list. It returns userChanged or userKept.
//
// KEYS: login, seen, recent. ARGV: user, stamp, item ("" for none), limit.
var updateSession = newScript(`
local KEPT, CHANGED = 0, 1
local answer = KEPT
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1])
  answer = CHANGED
end
local seen = redis.call('GET', KEYS[2])
if not seen or tonumber(ARGV[2]) > tonumber(seen) then
  redis.call('SET', KEYS[2], ARGV[2])
end
if ARGV[3] ~= '' and redis.call('LINDEX', KEYS[3], 0) ~= ARGV[3] then
  redis.call('LREM', KEYS[3], 1, ARGV[3])
  redis.call('LPUSH', KEYS[3], ARGV[3])
  redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[4]) - 1)
end
return answer
`)

// updateSession's answers (the script's KEPT and CHANGED).
const (
	userKept    = 0 // the login already held the user
	userChanged = 1 // the login was written
)

// UpdateToken implements driver.Store in one round trip: the session
// script on the session's slot, the index entry and the view count (the
// latter two on their own slots, in parallel in a cluster).
func (s *store) UpdateToken(ctx context.Context, token, user, item string) error {
	stamp := s.nextStamp()
	ks := s.k.session(token)
	calls := []call{
		s.scriptCall(updateSession, []string{ks.login, ks.seen, ks.recent},
			[]string{user, formatStamp(stamp), item, s.limit}),
		{cmd: s.c.B().Zadd().Key(s.k.index()).Gt().ScoreMember().ScoreMember(stamp, token).Build()},
	}
	if item != "" {
		calls = append(calls, call{cmd: s.c.B().Zincrby().Key(s.k.viewed()).Increment(-1).Member(item).Build()})
	}
	res := s.do(ctx, calls...)
	answer, err := res[0].AsInt64()
	if err != nil {
		return err
	}
	if answer == userChanged {
		s.own.wrote(ks.login, []byte(user))
	}
	for _, r := range res[1:] {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}

// RecentItems implements driver.Store. The list changes on every view, so
// it is not cached.
func (s *store) RecentItems(ctx context.Context, token string) ([]string, error) {
	items, err := s.c.Do(ctx, s.c.B().Lrange().Key(s.k.sessionKey(recentKind, token)).Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil || len(items) == 0 {
		return nil, err
	}
	return items, nil
}

// logoutSession deletes a session's keys and returns the stamp it had, or
// nil if there was no session.
//
// KEYS: login, seen, recent, cart.
var logoutSession = newScript(`
local seen = redis.call('GET', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return seen
`)

// unindex removes each token whose stamp in the index is still the given
// one, and returns how many it removed. Logout and cleaning use it so that
// an update racing them keeps its index entry.
//
// KEYS: index. ARGV: token, stamp pairs.
var unindex = newScript(`
local n = 0
for i = 1, #ARGV, 2 do
  local s = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if s and tonumber(s) == tonumber(ARGV[i + 1]) then
    n = n + redis.call('ZREM', KEYS[1], ARGV[i])
  end
end
return n
`)

// Logout implements driver.Store: it deletes the session's keys, then its
// index entry if no update has refreshed it meanwhile, so that a concurrent
// UpdateToken never leaves a session without an index entry.
func (s *store) Logout(ctx context.Context, token string) error {
	ks := s.k.session(token)
	stamp, err := s.do(ctx, s.scriptCall(logoutSession, ks.all(), nil))[0].ToString()
	if rueidis.IsRedisNil(err) {
		return nil // no session
	}
	if err != nil {
		return err
	}
	s.forgetSession(ks)
	return s.do(ctx, s.scriptCall(unindex, []string{s.k.index()}, []string{token, stamp}))[0].Error()
}

// forgetSession records the deletion of a session's cached key, its login.
func (s *store) forgetSession(ks sessionKeys) { s.own.deleted(ks.login) }

// SessionCount implements driver.Store.
func (s *store) SessionCount(ctx context.Context) (int, error) {
	n, err := s.c.Do(ctx, s.c.B().Zcard().Key(s.k.index()).Build()).AsInt64()
	return int(n), err
}
