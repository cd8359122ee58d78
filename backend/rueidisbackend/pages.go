package rueidisbackend

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail/internal/settings"
)

// A cached page is stored as its expiry (Unix ms by the Store's clock, 8
// bytes big-endian) followed by the body. The Store's clock decides expiry,
// as in every backend; the key's own TTL, TTLSlack beyond that expiry, only
// lets Redis free a page nobody reads again.
//
// A page stored with SetItemPage has the top bit of its expiry set, and its
// owner between the expiry and the body: the item's length (2 bytes
// big-endian) and the item. PurgeItemPages deletes a page only if it still
// names the item, so that a page replaced by SetPage, or stored since for
// another item, survives the purge.
const (
	pageHeader  = 8
	itemPageBit = uint64(1) << 63
)

var errShortPage = errors.New("rueidisbackend: cached page shorter than its header")

// Page implements driver.Store, reading through the client-side cache.
func (s *store) Page(ctx context.Context, key string) ([]byte, bool, error) {
	v, ok, err := s.cachedString(ctx, s.k.page(key))
	if !ok {
		return nil, false, err
	}
	if len(v) < pageHeader {
		return nil, false, errShortPage
	}
	h := binary.BigEndian.Uint64([]byte(v[:pageHeader]))
	body := v[pageHeader:]
	if h&itemPageBit != 0 {
		if len(body) < 2 {
			return nil, false, errShortPage
		}
		n := 2 + int(binary.BigEndian.Uint16([]byte(body[:2])))
		if len(body) < n {
			return nil, false, errShortPage
		}
		body = body[n:]
	}
	if s.nowMs() >= int64(h&^itemPageBit) {
		return nil, false, nil
	}
	return []byte(body), true, nil // the caller's copy
}

// SetPage implements driver.Store. The key's TTL is ttl plus TTLSlack of
// real time, so that Redis never drops a page the Store's clock still
// considers live (see Options.TTLSlack).
func (s *store) SetPage(ctx context.Context, key string, body []byte, ttl time.Duration) error {
	v := s.pageValue(s.nowMs(), "", body, ttl)
	k := s.k.page(key)
	px := settings.Millis(ttl) + s.ttlSlack.Milliseconds()
	if err := s.c.Do(ctx, s.c.B().Set().Key(k).Value(rueidis.BinaryString(v)).PxMilliseconds(px).Build()).Error(); err != nil {
		return err
	}
	s.own.wrote(recordOf(k), v)
	return nil
}

// pageValue encodes a page of item ("" for none) that expires ttl after
// now (Unix ms).
func (s *store) pageValue(now int64, item string, body []byte, ttl time.Duration) []byte {
	h := uint64(now + settings.Millis(ttl)) // whole ms, rounded up: never sooner than ttl
	if item == "" {
		v := make([]byte, pageHeader+len(body))
		binary.BigEndian.PutUint64(v, h)
		copy(v[pageHeader:], body)
		return v
	}
	v := make([]byte, pageHeader, pageHeader+len(ownerTag(item))+len(body))
	binary.BigEndian.PutUint64(v, h|itemPageBit)
	v = append(v, ownerTag(item)...)
	return append(v, body...)
}

// ownerTag is how an item page names its item, after the expiry.
func ownerTag(item string) string {
	var n [2]byte
	binary.BigEndian.PutUint16(n[:], uint16(len(item)))
	return string(n[:]) + item
}

// addItemPage adds the page key ARGV[1] to item's index KEYS[1], scored
// with ARGV[2], the Unix ms (by the Store's clock) at which the page
// expires, and drops the pages that expired at or before ARGV[3]; it makes the
// index live at least ARGV[4] ms, never shortening it, so that it outlives
// every page it lists.
var addItemPage = newScript(`
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
local px = tonumber(ARGV[4])
if redis.call('PTTL', KEYS[1]) < px then
	redis.call('PEXPIRE', KEYS[1], px)
end
return 1
`)

// purgeItemPage deletes the page KEYS[1] if it is still the page of the
// item whose owner tag is ARGV[1]. It returns 0 if it kept it, 1 if it
// deleted a page that had expired by the Store's clock (ARGV[2], Unix ms),
// and 2 if it deleted a live page.
var purgeItemPage = newScript(`
local v = redis.call('GET', KEYS[1])
local owner = ARGV[1]
if not v or #v < 8 + #owner or string.byte(v, 1) < 128 or string.sub(v, 9, 8 + #owner) ~= owner then
	return 0
end
redis.call('DEL', KEYS[1])
local e = string.byte(v, 1) - 128
for i = 2, 8 do e = e * 256 + string.byte(v, i) end
if e > tonumber(ARGV[2]) then return 2 end
return 1
`)

// SetItemPage implements driver.Store: the page and its entry in item's
// index are written in one round trip. The index's TTL is the longest TTL
// of the pages added to it, plus TTLSlack; the entries of pages that
// expired TTLSlack ago or more are dropped, so that an item whose pages
// are many (one a query parameter value, say) keeps an index no larger
// than its live pages.
func (s *store) SetItemPage(ctx context.Context, item, key string, body []byte, ttl time.Duration) error {
	now := s.nowMs()
	v := s.pageValue(now, item, body, ttl)
	k := s.k.page(key)
	slack := s.ttlSlack.Milliseconds()
	px := settings.Millis(ttl) + slack
	res := s.do(ctx,
		call{cmd: s.c.B().Set().Key(k).Value(rueidis.BinaryString(v)).PxMilliseconds(px).Build()},
		s.scriptCall(addItemPage, []string{s.k.itemPages(item)}, []string{key, i64(now + px), i64(now - slack), i64(px)}),
	)
	if err := res[0].Error(); err != nil {
		return err
	}
	s.own.wrote(recordOf(k), v)
	return res[1].Error()
}

// DeletePage implements driver.Store.
func (s *store) DeletePage(ctx context.Context, key string) error {
	k := s.k.page(key)
	if err := s.c.Do(ctx, s.c.B().Del().Key(k).Build()).Error(); err != nil {
		return err
	}
	s.own.deleted(recordOf(k))
	return nil
}

// maxPurge bounds the members ZPOPMIN takes at once; an index holding more
// is emptied by further rounds.
const maxPurge = 10_000

// PurgeItemPages implements driver.Store. It takes every member of item's
// index at once (ZPOPMIN, which deletes the emptied index), then deletes
// each page that still belongs to item, each on its own slot. A
// SetItemPage for item that lands after the ZPOPMIN adds its page to a new
// index and may survive the purge.
func (s *store) PurgeItemPages(ctx context.Context, item string) (int, error) {
	idx := s.k.itemPages(item)
	owner := ownerTag(item)
	n := 0
	for {
		popped, err := s.c.Do(ctx, s.c.B().Zpopmin().Key(idx).Count(maxPurge).Build()).AsZScores()
		if rueidis.IsRedisNil(err) || err == nil && len(popped) == 0 {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		members := make([]string, len(popped))
		for i, z := range popped {
			members[i] = z.Member
		}
		now := i64(s.nowMs())
		calls := make([]call, len(members))
		for i, m := range members {
			calls[i] = s.scriptCall(purgeItemPage, []string{s.k.page(m)}, []string{owner, now})
		}
		var errs []error
		for i, r := range s.do(ctx, calls...) {
			got, err := r.AsInt64()
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if got > 0 {
				s.own.deleted(recordOf(s.k.page(members[i])))
			}
			if got == 2 {
				n++
			}
		}
		if err := errors.Join(errs...); err != nil {
			return n, err
		}
		if len(members) < maxPurge {
			return n, nil
		}
	}
}
