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
	reply, err := s.do(ctx, s.scriptCall(setValue, s.k.session(token).all(),
		s.sessionArgs(s.nowMs(), "", key, string(value), maxSessionValues)))[0].ToArray()
	if err != nil {
		return 0, err
	}
	return status(reply)
}

// Value implements driver.Store: the value and the session's state, read
// in one round trip. Values are read from the server, not cached.
func (s *store) Value(ctx context.Context, token, key string) ([]byte, bool, error) {
	ks := s.k.session(token)
	msg, ok, err := s.readLive(ctx, token, ks, s.c.B().Hget().Key(ks.values).Field(key).Build())
	if !ok || msg.IsNil() {
		return nil, false, err
	}
	return valueBytes(msg.AsBytes())
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
	if out, err := s.revokedToken(ctx, token); out || err != nil {
		return nil, false, err
	}
	reply, err := s.do(ctx, s.scriptCall(popValue, s.k.session(token).all(),
		s.sessionArgs(s.nowMs(), "", key)))[0].ToArray()
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
	return s.c.Do(ctx, s.c.B().Hdel().Key(s.k.sessionKey(valuesKind, token)).Field(key).Build()).Error()
}
