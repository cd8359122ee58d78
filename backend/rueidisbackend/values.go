package rueidisbackend

import (
	"context"
	_ "embed"
	"errors"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
)

//go:embed setvalue.lua
var setValueSrc string

var setValue = sessionScript(setValueSrc)

var maxSessionValues = itoa(retail.MaxSessionValues)

// SetValue implements driver.Store with one script on the session's slot.
func (s *store) SetValue(ctx context.Context, token, key string, value []byte) (driver.Status, error) {
	k := s.k.session(token)
	reply, err := s.do(ctx, s.scriptCall(setValue, []string{k},
		s.sessionArgs(s.nowMs(), key, string(value), maxSessionValues)))[0].ToArray()
	s.cartOrValuesWritten(k)
	if err != nil {
		return 0, err
	}
	st, err := status(reply)
	if err != nil || st == driver.NoSession {
		return st, err
	}
	if len(reply) < 3 {
		return 0, errShortReply
	}
	user, err1 := reply[1].ToString()
	created, err2 := reply[2].AsInt64()
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	// A session its user logged out of everywhere is absent: it goes, and
	// the value just written with it.
	if out, err := s.endIfRevoked(ctx, token, user, created); out || err != nil {
		return driver.NoSession, err
	}
	return st, nil
}

// Value implements driver.Store: the session's values, read through the
// client-side cache (they change only when they are written).
func (s *store) Value(ctx context.Context, token, key string) ([]byte, bool, error) {
	v, ok, err := s.cachedValue(ctx, token, key)
	if !ok || err != nil {
		return nil, false, err
	}
	return []byte(v), true, nil
}

// cachedValue reads the value under key of token's live session through
// the client-side cache.
func (s *store) cachedValue(ctx context.Context, token, key string) (string, bool, error) {
	fields, err := s.liveFields(ctx, token)
	if fields == nil || err != nil {
		return "", false, err
	}
	v, ok := fields["value:"+key]
	return v, ok, nil
}

//go:embed popvalue.lua
var popValueSrc string

var popValue = sessionScript(popValueSrc)

// PopValue implements driver.Store with one script on the session's slot,
// so that of concurrent pops one gets the value.
func (s *store) PopValue(ctx context.Context, token, key string) ([]byte, bool, error) {
	// Commonly there is nothing to pop (a flash message left for the next
	// page, say), which the cached values tell without a round trip.
	if _, ok, err := s.cachedValue(ctx, token, key); !ok || err != nil {
		return nil, false, err
	}
	k := s.k.session(token)
	reply, err := s.do(ctx, s.scriptCall(popValue, []string{k}, s.sessionArgs(s.nowMs(), key)))[0].ToArray()
	s.cartOrValuesWritten(k)
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

//go:embed deletevalue.lua
var deleteValueSrc string

var deleteValue = newScript(deleteValueSrc)

// DeleteValue implements driver.Store with one script on the session's
// slot.
func (s *store) DeleteValue(ctx context.Context, token, key string) error {
	k := s.k.session(token)
	err := s.do(ctx, s.scriptCall(deleteValue, []string{k}, []string{key}))[0].Error()
	s.cartOrValuesWritten(k)
	return err
}
