package rueidisbackend

import (
	"context"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
)

// CheckToken implements retail.Sessions, reading through the client-side
// cache: the login key changes only when the user does.
func (s *Store) CheckToken(ctx context.Context, token string) (string, bool, error) {
	if err := s.begin(ctx, retail.ValidateCheckToken(token)); err != nil {
		return "", false, err
	}
	msg, err := s.cachedGet(ctx, s.k.session(loginKey, token))
	if rueidis.IsRedisNil(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, wrap("CheckToken", err)
	}
	user, err := msg.ToString()
	if err != nil {
		return "", false, wrap("CheckToken", err)
	}
	return user, true, nil
}

// UpdateToken implements retail.Sessions in one round trip: the session
// script on the session's slot, the index entry and the view count (the
// latter two on their own slots, in parallel in a cluster).
func (s *Store) UpdateToken(ctx context.Context, token, user, item string) error {
	if err := s.begin(ctx, retail.ValidateUpdateToken(token, user, item)); err != nil {
		return err
	}
	stamp := s.nextStamp()
	ks := s.k.sessionKeys(token)
	calls := []call{
		s.scriptCall(updateSession, ks[:cartKey],
			[]string{user, formatStamp(stamp), item, s.limit}),
		{cmd: s.c.B().Zadd().Key(s.k.index()).Gt().ScoreMember().ScoreMember(stamp, token).Build()},
	}
	if item != "" {
		calls = append(calls, call{cmd: s.c.B().Zincrby().Key(s.k.viewed()).Increment(-1).Member(item).Build()})
	}
	res := s.do(ctx, calls...)
	changed, err := res[0].AsInt64()
	if err != nil {
		return wrap("UpdateToken", err)
	}
	if changed == 1 {
		s.own.wrote(ks[loginKey], []byte(user))
	}
	for _, r := range res[1:] {
		if err := r.Error(); err != nil {
			return wrap("UpdateToken", err)
		}
	}
	return nil
}

// RecentItems implements retail.Sessions. The list changes on every view, so
// it is not cached.
func (s *Store) RecentItems(ctx context.Context, token string) ([]string, error) {
	if err := s.begin(ctx, retail.ValidateRecentItems(token)); err != nil {
		return nil, err
	}
	items, err := s.c.Do(ctx, s.c.B().Lrange().Key(s.k.session(recentKey, token)).Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		return nil, wrap("RecentItems", err)
	}
	if len(items) == 0 {
		return nil, nil
	}
	return items, nil
}

// Logout implements retail.Sessions: it deletes the session's keys, then
// its index entry if no update has refreshed it meanwhile, so that a
// concurrent UpdateToken never leaves a session without an index entry.
func (s *Store) Logout(ctx context.Context, token string) error {
	if err := s.begin(ctx, retail.ValidateLogout(token)); err != nil {
		return err
	}
	keys := s.k.sessionKeys(token)
	stamp, err := s.do(ctx, s.scriptCall(logoutSession, keys, nil))[0].ToString()
	if rueidis.IsRedisNil(err) {
		return nil // no session
	}
	if err != nil {
		return wrap("Logout", err)
	}
	s.forgetSession(keys)
	if err := s.do(ctx, s.scriptCall(unindex, []string{s.k.index()}, []string{token, stamp}))[0].Error(); err != nil {
		return wrap("Logout", err)
	}
	return nil
}

// forgetSession records the deletion of a session's cached key, its login.
func (s *Store) forgetSession(keys []string) { s.own.deleted(keys[loginKey]) }

// SessionCount implements retail.Sessions.
func (s *Store) SessionCount(ctx context.Context) (int, error) {
	if err := s.begin(ctx, nil); err != nil {
		return 0, err
	}
	n, err := s.c.Do(ctx, s.c.B().Zcard().Key(s.k.index()).Build()).AsInt64()
	if err != nil {
		return 0, wrap("SessionCount", err)
	}
	return int(n), nil
}
