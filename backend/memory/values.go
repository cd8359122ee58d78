package memory

import (
	"context"
	"strings"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
)

// Values are stored as copies and never changed in place, only replaced, so
// a reader may copy one after releasing the lock.

// SetValue implements driver.Store.
func (s *store) SetValue(ctx context.Context, token, key string, value []byte) (driver.Status, error) {
	now := s.now()
	value = cloneBytes(value)
	sh := s.shard(token)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	x := s.liveSession(sh, token, now)
	if x == nil {
		return driver.NoSession, nil
	}
	if _, ok := x.values[key]; !ok {
		if len(x.values) >= retail.MaxSessionValues {
			return driver.Full, nil
		}
		if x.values == nil {
			x.values = make(map[string][]byte)
		}
		key = strings.Clone(key)
	}
	x.values[key] = value
	return driver.OK, nil
}

// Value implements driver.Store.
func (s *store) Value(ctx context.Context, token, key string) ([]byte, bool, error) {
	var value []byte
	var ok bool
	s.readSession(token, func(x *session) { value, ok = x.values[key] })
	if !ok {
		return nil, false, nil
	}
	return cloneBytes(value), true, nil
}

// PopValue implements driver.Store. The value leaves the Store, so the
// caller gets the Store's copy.
func (s *store) PopValue(ctx context.Context, token, key string) ([]byte, bool, error) {
	now := s.now()
	sh := s.shard(token)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	x := s.liveSession(sh, token, now)
	if x == nil {
		return nil, false, nil
	}
	value, ok := x.values[key]
	if !ok {
		return nil, false, nil
	}
	delete(x.values, key)
	return value, true, nil
}

// DeleteValue implements driver.Store.
func (s *store) DeleteValue(ctx context.Context, token, key string) error {
	now := s.now()
	sh := s.shard(token)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if x := s.liveSession(sh, token, now); x != nil {
		delete(x.values, key)
	}
	return nil
}

// cloneValues returns a copy of the values a login sets
// (driver.SessionOptions.Values), made before a shard is locked; a nil
// value, which deletes its key, stays nil.
func cloneValues(values map[string][]byte) map[string][]byte {
	if len(values) == 0 {
		return nil
	}
	out := make(map[string][]byte, len(values))
	for key, v := range values {
		if v != nil {
			v = cloneBytes(v)
		}
		out[strings.Clone(key)] = v
	}
	return out
}

// valuesAfter returns how many values a session that holds values holds
// once set, a login's, is applied.
func valuesAfter(values, set map[string][]byte) int {
	n := len(values)
	for key, v := range set {
		_, had := values[key]
		switch {
		case v == nil && had:
			n--
		case v != nil && !had:
			n++
		}
	}
	return n
}

// setValues applies set, a login's values as cloneValues copied them, to
// x: a nil value deletes its key. x's shard must be locked.
func setValues(x *session, set map[string][]byte) {
	for key, v := range set {
		if v == nil {
			delete(x.values, key)
			continue
		}
		if x.values == nil {
			x.values = make(map[string][]byte, len(set))
		}
		x.values[key] = v
	}
}
