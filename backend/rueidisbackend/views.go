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

// CountViews implements driver.Store: one ZINCRBY an item, in one round
// trip.
func (s *store) CountViews(ctx context.Context, views []driver.ItemViews) error {
	calls := make([]call, len(views))
	for i, v := range views {
		calls[i] = call{cmd: s.c.B().Zincrby().Key(s.k.viewed()).Increment(-v.Views).Member(v.Item).Build()}
	}
	for _, r := range s.do(ctx, calls...) {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
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
// scale every score at once on the server.
//
// KEYS: the view counts.
var rescaleViews = newScript(`
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
