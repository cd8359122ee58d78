package rueidisbackend

import (
	"context"
	"strconv"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail/driver"
)

// The view counts are the sorted set item -> minus its count (see
// keys.viewed). Redis orders a sorted set by score, then by member in byte
// order, which is exactly the order of ranks: most viewed first, ties by
// name ascending, so ranks and the top items are read from it directly.

// countViews adds the views to the counts, KEYS[1], unless they are a
// flush of a process whose last counted flush, KEYS[2], is this one or a
// later one: ARGV[1] is the flush's number (0: not a flush, always
// counted), ARGV[2] the ms the process's last flush is kept, then each
// item and its views, negated. It answers 1 if it counted them, else 0.
var countViews = newScript(`
local seq = tonumber(ARGV[1])
if seq > 0 then
	local last = redis.call('GET', KEYS[2])
	if last and tonumber(last) >= seq then return 0 end
end
for i = 3, #ARGV, 2 do
	redis.call('ZINCRBY', KEYS[1], ARGV[i + 1], ARGV[i])
end
if seq > 0 then redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2]) end
return 1
`)

// CountViews implements driver.Store: one script on the counts' slot,
// which counts a flush once (see driver.ViewFlush) by keeping the number
// of the process's last counted flush beside the counts.
func (s *store) CountViews(ctx context.Context, flush driver.ViewFlush, views []driver.ItemViews) error {
	args := make([]string, 0, 2+2*len(views))
	args = append(args, strconv.FormatUint(flush.Seq, 10), i64(driver.ViewFlushMemory.Milliseconds()))
	for _, v := range views {
		args = append(args, v.Item, strconv.FormatFloat(-v.Views, 'f', -1, 64))
	}
	keys := []string{s.k.viewed(), s.k.viewFlushes(flush.Process)}
	return s.do(ctx, s.scriptCall(countViews, keys, args))[0].Error()
}

// ItemRank implements driver.Store. Counts change on every view, so ranks
// are read from the server.
func (s *store) ItemRank(ctx context.Context, item string) (int, bool, error) {
	rank, err := s.do(ctx, call{cmd: s.c.B().Zrank().Key(s.k.viewed()).Member(item).Build()})[0].AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return int(rank), true, nil
}

// TopItems implements driver.Store.
func (s *store) TopItems(ctx context.Context, n int) ([]driver.ItemViews, error) {
	if n == 0 {
		return []driver.ItemViews{}, nil // ZRANGE 0 -1 would be everything
	}
	zs, err := s.do(ctx, call{cmd: s.c.B().Zrange().Key(s.k.viewed()).Min("0").Max(itoa(n - 1)).Withscores().Build()})[0].AsZScores()
	if err != nil {
		return nil, err
	}
	top := make([]driver.ItemViews, len(zs))
	for i, z := range zs {
		top[i] = driver.ItemViews{Item: z.Member, Views: -z.Score}
	}
	return top, nil
}

// rescaleViews keeps the ARGV[1] most viewed items and multiplies the
// counts by ARGV[2]. ZINTERSTORE of the set with itself is the book's way to
// scale every score at once on the server. Keeping none deletes the set
// and stops: a trim that emptied it would delete it too, and the
// ZINTERSTORE after it would then touch a deleted key (see readsFirst).
//
// KEYS: the view counts.
var rescaleViews = newScript(`
if ARGV[1] == '0' then
  redis.call('DEL', KEYS[1])
  return 1
end
redis.call('ZREMRANGEBYRANK', KEYS[1], ARGV[1], -1)
if ARGV[2] ~= '1' then
  redis.call('ZINTERSTORE', KEYS[1], 1, KEYS[1], 'WEIGHTS', ARGV[2])
end
return 1
`)

// RescaleViews implements driver.Store: one script.
func (s *store) RescaleViews(ctx context.Context, keep int, factor float64) error {
	return s.do(ctx, s.scriptCall(rescaleViews, []string{s.k.viewed()},
		[]string{itoa(keep), strconv.FormatFloat(factor, 'g', -1, 64)}))[0].Error()
}
