package rueidisbackend

import (
	"context"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
)

// setValue stores a session value while the session is live, refusing a
// new key in a session of ARGV[9] values (FULL). The values' TTL follows
// the session's (see state.go).
//
// KEYS: the session's. ARGV: sessionArgs, key, value, the most values.
var setValue = sessionScript(`
local created, deadline = liveAt(KEYS[1], KEYS[2])
if not created then return {NO_SESSION} end
if redis.call('HEXISTS', KEYS[4], ARGV[7]) == 0 and redis.call('HLEN', KEYS[4]) >= tonumber(ARGV[9]) then
  return {FULL}
end
redis.call('HSET', KEYS[4], ARGV[7], ARGV[8])
redis.call('PEXPIRE', KEYS[4], keyTTL(created, deadline))
return {OK}
`)

var maxSessionValues = itoa(retail.MaxSessionValues)

// SetValue implements driver.Store with one script on the session's slot.
func (s *store) SetValue(ctx context.Context, token, key string, value []byte) (driver.Status, error) {
	if out, err := s.revokedToken(ctx, token); out || err != nil {
		return driver.NoSession, err
	}
	ks := s.k.session(token)
	reply, err := s.do(ctx, s.scriptCall(setValue, ks.all(),
		s.sessionArgs(s.nowMs(), "", key, string(value), maxSessionValues)))[0].ToArray()
	s.own.deleted(ks.values)
	if err != nil {
		return 0, err
	}
	return status(reply)
}

// Value implements driver.Store: the session's login and values, read
// through the client-side cache (a session's values are few and change
// only when they are written).
func (s *store) Value(ctx context.Context, token, key string) ([]byte, bool, error) {
	v, ok, err := s.cachedValue(ctx, token, s.k.session(token), key)
	if !ok || err != nil {
		return nil, false, err
	}
	return []byte(v), true, nil
}

// cachedValue reads the value under key of token's live session through
// the client-side cache.
func (s *store) cachedValue(ctx context.Context, token string, ks sessionKeys, key string) (string, bool, error) {
	if live, err := s.liveSession(ctx, token, ks); !live || err != nil {
		return "", false, err
	}
	values, err := s.cachedHash(ctx, ks.values)
	if err != nil {
		return "", false, err
	}
	v, ok := values[key]
	return v, ok, nil
}

// popValue returns and deletes a value of a live session.
//
// KEYS: the session's. ARGV: sessionArgs, key. Answers {NO_SESSION} if there
// is no live session or no value, else {OK, value}.
var popValue = sessionScript(`
local created, deadline = liveAt(KEYS[1], KEYS[2])
if not created then return {NO_SESSION} end
local v = redis.call('HGET', KEYS[4], ARGV[7])
if not v then return {NO_SESSION} end
redis.call('HDEL', KEYS[4], ARGV[7])
return {OK, v}
`)

// PopValue implements driver.Store with one script on the session's slot,
// so that of concurrent pops one gets the value.
func (s *store) PopValue(ctx context.Context, token, key string) ([]byte, bool, error) {
	// Commonly there is nothing to pop (a flash message left for the next
	// page, say), which the cached values tell without a round trip.
	ks := s.k.session(token)
	if _, ok, err := s.cachedValue(ctx, token, ks, key); !ok || err != nil {
		return nil, false, err
	}
	reply, err := s.do(ctx, s.scriptCall(popValue, ks.all(),
		s.sessionArgs(s.nowMs(), "", key)))[0].ToArray()
	s.own.deleted(ks.values)
	if err != nil {
		return nil, false, err
	}
	st, err := status(reply)
	if err != nil || st != driver.OK {
		return nil, false, err
	}
	if len(reply) < 2 {
		return nil, false, errShortReply
	}
	return valueBytes(reply[1].AsBytes())
}

// valueBytes returns a value read from the server as the caller's own
// slice; an empty value is an empty, non-nil slice.
func valueBytes(b []byte, err error) ([]byte, bool, error) {
	if err != nil {
		return nil, false, err
	}
	return append(make([]byte, 0, len(b)), b...), true, nil
}

// DeleteValue implements driver.Store. Deleting a value of a session that
// is not live deletes what would never be read again.
func (s *store) DeleteValue(ctx context.Context, token, key string) error {
	ks := s.k.session(token)
	err := s.c.Do(ctx, s.c.B().Hdel().Key(ks.values).Field(key).Build()).Error()
	s.own.deleted(ks.values)
	return err
}
