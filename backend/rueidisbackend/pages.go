package rueidisbackend

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/redis/rueidis"
)

// A cached page is stored as its expiry (Unix ms by the Store's clock, 8
// bytes big-endian) followed by the body. The Store's clock decides expiry,
// as in every backend; the key's own TTL, TTLSlack beyond that expiry, only
// lets Redis free a page nobody reads again.
const pageHeader = 8

var errShortPage = errors.New("rueidisbackend: cached page shorter than its header")

// Page implements driver.Store, reading through the client-side cache.
func (s *store) Page(ctx context.Context, key string) ([]byte, bool, error) {
	v, ok, err := s.cachedValue(ctx, s.k.page(key))
	if !ok {
		return nil, false, err
	}
	if len(v) < pageHeader {
		return nil, false, errShortPage
	}
	if s.nowMs() >= int64(binary.BigEndian.Uint64(v)) {
		return nil, false, nil
	}
	return bytes.Clone(v[pageHeader:]), true, nil
}

// SetPage implements driver.Store. The key's TTL is ttl plus TTLSlack of
// real time, so that Redis never drops a page the Store's clock still
// considers live (see Options.TTLSlack).
func (s *store) SetPage(ctx context.Context, key string, body []byte, ttl time.Duration) error {
	v := make([]byte, pageHeader+len(body))
	binary.BigEndian.PutUint64(v, uint64(s.nowMs()+ttl.Milliseconds()))
	copy(v[pageHeader:], body)
	k := s.k.page(key)
	px := (ttl + s.ttlSlack).Milliseconds()
	if err := s.c.Do(ctx, s.c.B().Set().Key(k).Value(rueidis.BinaryString(v)).PxMilliseconds(px).Build()).Error(); err != nil {
		return err
	}
	s.own.wrote(k, v)
	return nil
}
