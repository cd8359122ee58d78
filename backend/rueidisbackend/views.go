package rueidisbackend

import (
	"context"
	"strconv"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
)

// ItemRank implements retail.Views. Counts change on every view, so ranks are
// read from the server.
func (s *Store) ItemRank(ctx context.Context, item string) (int, bool, error) {
	if err := s.begin(ctx, retail.ValidateItemRank(item)); err != nil {
		return 0, false, err
	}
	rank, err := s.c.Do(ctx, s.c.B().Zrank().Key(s.k.viewed()).Member(item).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, wrap("ItemRank", err)
	}
	return int(rank), true, nil
}

// TopItems implements retail.Views.
func (s *Store) TopItems(ctx context.Context, n int) ([]retail.ItemViews, error) {
	if err := s.begin(ctx, retail.ValidateTopItems(n)); err != nil {
		return nil, err
	}
	if n == 0 {
		return []retail.ItemViews{}, nil
	}
	zs, err := s.c.Do(ctx, s.c.B().Zrange().Key(s.k.viewed()).Min("0").Max(itoa(n-1)).Withscores().Build()).AsZScores()
	if err != nil {
		return nil, wrap("TopItems", err)
	}
	top := make([]retail.ItemViews, len(zs))
	for i, z := range zs {
		top[i] = retail.ItemViews{Item: z.Member, Views: -z.Score}
	}
	return top, nil
}

// RescaleViews implements retail.Views.
func (s *Store) RescaleViews(ctx context.Context, keep int, factor float64) error {
	if err := s.begin(ctx, retail.ValidateRescaleViews(keep, factor)); err != nil {
		return err
	}
	err := s.do(ctx, s.scriptCall(rescaleViews, []string{s.k.viewed()},
		[]string{itoa(keep), strconv.FormatFloat(factor, 'g', -1, 64)}))[0].Error()
	return wrap("RescaleViews", err)
}
