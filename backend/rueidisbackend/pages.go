package rueidisbackend

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
)

// A cached page is stored as its expiry (Unix ms by the Store's clock, 8
// bytes big-endian) followed by the body. The Store's clock decides expiry,
// as in every backend; the key's own TTL only lets Redis free it.
const pageHeader = 8

var errShortPage = errors.New("cached page shorter than its header")

// Page implements retail.Pages, reading through the client-side cache.
func (s *Store) Page(ctx context.Context, key string) ([]byte, bool, error) {
	if err := s.begin(ctx, retail.ValidatePage(key)); err != nil {
		return nil, false, err
	}
	msg, err := s.cachedGet(ctx, s.k.page(key))
	if rueidis.IsRedisNil(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, wrap("Page", err)
	}
	v, err := msg.AsBytes()
	if err != nil {
		return nil, false, wrap("Page", err)
	}
	if len(v) < pageHeader {
		return nil, false, wrap("Page", errShortPage)
	}
	if s.nowMs() >= int64(binary.BigEndian.Uint64(v)) {
		return nil, false, nil
	}
	// AsBytes may share memory with the client-side cache: copy.
	return bytes.Clone(v[pageHeader:]), true, nil
}

// SetPage implements retail.Pages.
func (s *Store) SetPage(ctx context.Context, key string, body []byte, ttl time.Duration) error {
	if err := s.begin(ctx, retail.ValidateSetPage(key, body, ttl)); err != nil {
		return err
	}
	v := make([]byte, pageHeader+len(body))
	binary.BigEndian.PutUint64(v, uint64(s.nowMs()+ttl.Milliseconds()))
	copy(v[pageHeader:], body)
	k := s.k.page(key)
	err := s.c.Do(ctx, s.c.B().Set().Key(k).Value(rueidis.BinaryString(v)).PxMilliseconds(ttl.Milliseconds()).Build()).Error()
	if err != nil {
		return wrap("SetPage", err)
	}
	s.own.wrote(k, v)
	return nil
}
