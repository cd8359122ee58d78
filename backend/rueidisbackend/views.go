package rueidisbackend

import (
	"cmp"
	"context"
	"errors"
	"strconv"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail/driver"
)

// The view counts are split into Options.Spread parts (see keys.go), each a
// sorted set item -> minus its count. Redis orders a sorted set by score,
// then by member in byte order, which is exactly the order of ranks: most
// viewed first, ties by name ascending. With one part, ranks and the top
// items are read from it directly. With several, the calls below read
// every part and give the answers one set would: TopItems merges each
// part's top, ItemRank adds up the members that rank before the item in
// each part, and RescaleViews finds the last item kept across the parts
// and trims each part after it.

// CountViews implements driver.Store: one ZINCRBY an item, in one round
// trip.
func (s *store) CountViews(ctx context.Context, views []driver.ItemViews) error {
	calls := make([]call, len(views))
	for i, v := range views {
		calls[i] = call{cmd: s.c.B().Zincrby().Key(s.k.viewed(v.Item)).Increment(-v.Views).Member(v.Item).Build()}
	}
	for _, r := range s.do(ctx, calls...) {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}

// ItemRank implements driver.Store. Counts change on every view, so ranks
// are read from the server: with one part, its ZRANK; with several, the
// item's score and rank in its own part (one script, so that they agree),
// then the number of members ranked before it in each of the other parts:
// two ZCOUNTs a part, and for the parts that hold members of the item's
// very score a third round trip with a script that counts those whose
// names sort before it (see rankedBefore).
func (s *store) ItemRank(ctx context.Context, item string) (int, bool, error) {
	if s.k.spread == 1 {
		rank, err := s.withDeferred(ctx, call{cmd: s.c.B().Zrank().Key(s.k.viewedPart(0)).Member(item).Build()})[0].AsInt64()
		if rueidis.IsRedisNil(err) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
		return int(rank), true, nil
	}
	own := s.k.partOf(item)
	reply, err := s.withDeferred(ctx, s.scriptCall(scoreAndRank, []string{s.k.viewedPart(own)}, []string{item}))[0].ToArray()
	if rueidis.IsRedisNil(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if len(reply) < 2 {
		return 0, false, errShortReply
	}
	score, err := reply[0].ToString()
	if err != nil {
		return 0, false, err
	}
	rank, err := reply[1].AsInt64()
	if err != nil {
		return 0, false, err
	}
	// Each other part's members of lower score and of lower or equal
	// score, as plain commands (a script call costs several times a
	// ZCOUNT); only the parts that hold members of equal score need a
	// script, which counts those whose names sort before item.
	calls := make([]call, 0, 2*(s.k.spread-1))
	others := make([]string, 0, s.k.spread-1)
	for p := range s.k.spread {
		if p != own {
			key := s.k.viewedPart(p)
			others = append(others, key)
			calls = append(calls,
				call{cmd: s.c.B().Zcount().Key(key).Min("-inf").Max("(" + score).Build()},
				call{cmd: s.c.B().Zcount().Key(key).Min("-inf").Max(score).Build()})
		}
	}
	var ties []call
	res := s.do(ctx, calls...)
	for i := 0; i < len(res); i += 2 {
		below, err1 := res[i].AsInt64()
		upTo, err2 := res[i+1].AsInt64()
		if err := errors.Join(err1, err2); err != nil {
			return 0, false, err
		}
		if upTo == below {
			rank += below
			continue
		}
		ties = append(ties, s.scriptCall(rankedBefore, []string{others[i/2]}, []string{score, item}))
	}
	for _, r := range s.do(ctx, ties...) {
		n, err := r.AsInt64()
		if err != nil {
			return 0, false, err
		}
		rank += n
	}
	return int(rank), true, nil
}

// viewsLua holds the Lua functions of the scripts that compare members of
// the view counts' parts with an item of another part.
const viewsLua = `
-- before reports whether a sorts before b in byte order, the order Redis
-- keeps the members of equal score in. (Lua's own < compares by the
-- server's locale.)
local function before(a, b)
  if a == b then return false end
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- ranked returns how many members of key sort before the given score (a
-- string, as ZSCORE answers it) and member, or, if inclusive, at or before
-- them: those of lower score, counted by ZCOUNT, then those of equal score
-- before member, found by a binary search of their ranks (they are stored
-- in byte order), so O(log n) calls whatever the ties.
local function ranked(key, score, member, inclusive)
  local lo = redis.call('ZCOUNT', key, '-inf', '(' .. score)
  local hi = redis.call('ZCOUNT', key, '-inf', score)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', key, mid, mid)[1]
    if before(m, member) or (inclusive and m == member) then lo = mid + 1 else hi = mid end
  end
  return lo
end
`

// scoreAndRank answers item ARGV[1]'s score (as a string) and rank in its
// part of the view counts, or nil if it has none.
//
// KEYS: the item's viewed part.
var scoreAndRank = newScript(`
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s then return false end
return {s, redis.call('ZRANK', KEYS[1], ARGV[1])}
`)

// rankedBefore answers how many members of a part of the view counts rank
// before item ARGV[2] with score ARGV[1].
//
// KEYS: a viewed part.
var rankedBefore = newScript(viewsLua + `
return ranked(KEYS[1], ARGV[1], ARGV[2], false)
`)

// TopItems implements driver.Store: with several parts, the first n of each
// part (read in one round trip) merged by score, then name.
func (s *store) TopItems(ctx context.Context, n int) ([]driver.ItemViews, error) {
	if n == 0 {
		return []driver.ItemViews{}, nil // ZRANGE 0 -1 would be everything
	}
	calls := make([]call, s.k.spread)
	for p := range calls {
		calls[p] = call{cmd: s.c.B().Zrange().Key(s.k.viewedPart(p)).Min("0").Max(itoa(n - 1)).Withscores().Build()}
	}
	parts, err := s.zscores(s.withDeferred(ctx, calls...))
	if err != nil {
		return nil, err
	}
	zs := mergeFirst(parts, n, compareZScores)
	top := make([]driver.ItemViews, len(zs))
	for i, z := range zs {
		top[i] = driver.ItemViews{Item: z.Member, Views: -z.Score}
	}
	return top, nil
}

// zscores parses the replies to ZRANGE WITHSCORES of the parts.
func (s *store) zscores(replies []rueidis.RedisResult) ([][]rueidis.ZScore, error) {
	parts := make([][]rueidis.ZScore, len(replies))
	for i, r := range replies {
		zs, err := r.AsZScores()
		if err != nil {
			return nil, err
		}
		parts[i] = zs
	}
	return parts, nil
}

// compareZScores orders members as a sorted set does: by score, then by
// name in byte order (which Go's string comparison is).
func compareZScores(a, b rueidis.ZScore) int {
	return cmp.Or(cmp.Compare(a.Score, b.Score), cmp.Compare(a.Member, b.Member))
}

// rescaleViews keeps the ARGV[1] most viewed items and multiplies the
// counts by ARGV[2]. ZINTERSTORE of the set with itself is the book's way to
// scale every score at once on the server.
//
// KEYS: a viewed part.
var rescaleViews = newScript(`
redis.call('ZREMRANGEBYRANK', KEYS[1], ARGV[1], -1)
if ARGV[2] ~= '1' then
  redis.call('ZINTERSTORE', KEYS[1], 1, KEYS[1], 'WEIGHTS', ARGV[2])
end
return 1
`)

// rescalePart keeps the items of a part of the view counts that rank at
// or before the item ARGV[2] with score ARGV[1], the last item kept across
// the parts, and multiplies the counts by ARGV[3], as rescaleViews.
//
// KEYS: a viewed part.
var rescalePart = newScript(viewsLua + `
redis.call('ZREMRANGEBYRANK', KEYS[1], ranked(KEYS[1], ARGV[1], ARGV[2], true), -1)
if ARGV[3] ~= '1' then
  redis.call('ZINTERSTORE', KEYS[1], 1, KEYS[1], 'WEIGHTS', ARGV[3])
end
return 1
`)

// RescaleViews implements driver.Store. With one part it is one script.
// With several, it reads the size of every part; if they hold no more than
// keep items in all, each part is scaled; otherwise the first keep items of
// each part are read and merged to find the last item kept across the
// parts, and each part drops the items ranked after that one and is
// scaled, one script a part. That takes three round trips, and views
// counted between the reads and the trims can move the boundary: counts
// only grow between rescales, so every item among the keep read is kept,
// but so is an item whose count rose past the last one kept meanwhile. A
// pass racing views may thus keep a few more than keep items, as a single
// set trimmed a moment earlier would have.
func (s *store) RescaleViews(ctx context.Context, keep int, factor float64) error {
	f := strconv.FormatFloat(factor, 'g', -1, 64)
	if s.k.spread == 1 {
		return s.withDeferred(ctx, s.scriptCall(rescaleViews, []string{s.k.viewedPart(0)},
			[]string{itoa(keep), f}))[0].Error()
	}
	// each sends sc, or cmd if sc is nil, to every part, in one round
	// trip, preceded by the views still buffered (see deferred.go).
	each := func(sc *script, args []string, cmd func(key string) rueidis.Completed) []rueidis.RedisResult {
		calls := make([]call, s.k.spread)
		for p := range calls {
			if sc != nil {
				calls[p] = s.scriptCall(sc, []string{s.k.viewedPart(p)}, args)
			} else {
				calls[p] = call{cmd: cmd(s.k.viewedPart(p))}
			}
		}
		return s.withDeferred(ctx, calls...)
	}
	trim := func(sc *script, args ...string) error {
		for _, r := range each(sc, args, nil) {
			if err := r.Error(); err != nil {
				return err
			}
		}
		return nil
	}
	if keep == 0 {
		return trim(rescaleViews, "0", f)
	}
	total := 0
	for _, r := range each(nil, nil, func(key string) rueidis.Completed { return s.c.B().Zcard().Key(key).Build() }) {
		n, err := r.AsInt64()
		if err != nil {
			return err
		}
		total += int(n)
	}
	if total <= keep {
		return trim(rescaleViews, itoa(keep), f)
	}
	parts, err := s.zscores(each(nil, nil, func(key string) rueidis.Completed {
		return s.c.B().Zrange().Key(key).Min("0").Max(itoa(keep - 1)).Withscores().Build()
	}))
	if err != nil {
		return err
	}
	kept := mergeFirst(parts, keep, compareZScores)
	if len(kept) < keep {
		// Items were dropped since the sizes were read (by another
		// rescale): nothing is beyond keep.
		return trim(rescaleViews, itoa(keep), f)
	}
	last := kept[len(kept)-1]
	return trim(rescalePart, strconv.FormatFloat(last.Score, 'g', -1, 64), last.Member, f)
}
