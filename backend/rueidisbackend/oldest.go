package rueidisbackend

import (
	"cmp"
	"context"

	"github.com/redis/rueidis"
)

// Each round of a cleaning pass starts by reading the oldest entries of
// the session index.

// indexEntry is an entry of the session index as a pass read it.
type indexEntry struct {
	token string
	stamp string // as the index holds it, for the scripts to compare ("" if read without, see tokensOnly)
}

// oldest returns the entries a round of a pass works on, oldest first
// (see oldestCalls).
func (s *store) oldest(ctx context.Context, keep, limit int, start float64, idleBound string) ([]indexEntry, error) {
	calls := s.oldestCalls(keep, limit, start, idleBound)
	entries, _, err := s.oldestFrom(s.do(ctx, calls...), keep, limit)
	return entries, err
}

// oldestCalls are the plain commands that read a round of a pass, all sent
// in one round trip: the index's size, its number of idle-expired entries
// (stamps below idleBound) and its oldest entries below the pass's start,
// at most limit, with their stamps unless tokensOnly. The round takes as
// many entries as are idle-expired, or lie beyond the newest keep,
// whichever is more, and at most limit (see oldestFrom). On a single
// server, a last command reads the newest entry the pass may take by the
// count, the reach (see cleanOnServer), which is the keep+1-th from the top
// whatever the index's size.
//
// The commands may see the index at slightly different moments; as the
// pass reads the sessions after the index anyway, a count that a
// concurrent write makes stale only changes how many the round removes,
// and the reach is the keep+1-th newest entry of the moment it was read.
func (s *store) oldestCalls(keep, limit int, start float64, idleBound string) []call {
	key := s.k.index()
	below := "(" + formatStamp(start)
	calls := []call{
		{cmd: s.c.B().Zcard().Key(key).Build()},
		{cmd: s.c.B().Zcount().Key(key).Min("-inf").Max("(" + idleBound).Build()},
	}
	if s.tokensOnly() {
		top := itoa(-keep - 1)
		return append(calls,
			call{cmd: s.c.B().Zrangebyscore().Key(key).Min("-inf").Max(below).Limit(0, int64(limit)).Build()},
			call{cmd: s.c.B().Zrange().Key(key).Min(top).Max(top).Withscores().Build()})
	}
	return append(calls, call{cmd: s.c.B().Zrangebyscore().Key(key).Min("-inf").Max(below).Withscores().Limit(0, int64(limit)).Build()})
}

// oldestFrom returns the entries of a round from the replies to its
// oldestCalls, oldest first, and their reach: on a single server, the
// stamp of the newest entry the pass may take by the count (+inf if keep
// is 0 and it may take every one, "" if it takes only idle-expired ones);
// otherwise the stamp of the newest entry read.
func (s *store) oldestFrom(res []rueidis.RedisResult, keep, limit int) (entries []indexEntry, reach string, err error) {
	size, err1 := res[0].AsInt64()
	expired, err2 := res[1].AsInt64()
	if err := cmp.Or(err1, err2); err != nil {
		return nil, "", err
	}
	if s.tokensOnly() {
		tokens, err := res[2].AsStrSlice()
		if err != nil {
			return nil, "", err
		}
		entries = make([]indexEntry, len(tokens))
		for i, t := range tokens {
			entries[i] = indexEntry{token: t}
		}
	} else {
		zs, err := res[2].AsZScores()
		if err != nil {
			return nil, "", err
		}
		entries = make([]indexEntry, len(zs))
		for i, z := range zs {
			// The stamps of the sessions' seen fields are formatted alike, so the
			// scripts that compare them mostly find equal strings.
			entries[i] = indexEntry{token: z.Member, stamp: formatStamp(z.Score)}
		}
	}
	n := max(size-int64(keep), expired)
	if n <= 0 {
		return nil, "", nil
	}
	entries = entries[:min(n, int64(limit), int64(len(entries)))]
	if len(entries) == 0 {
		return nil, "", nil
	}
	if !s.tokensOnly() {
		return entries, entries[len(entries)-1].stamp, nil
	}
	switch {
	case keep <= 0:
		// Every entry may go by the count. (With keep > 0, entries that
		// only look idle-expired, as entries lag behind their sessions'
		// stamps, may not: their sessions go only if truly expired.)
		reach = "+inf"
	case n == size-int64(keep):
		zs, err := res[3].AsZScores()
		if err != nil {
			return nil, "", err
		}
		if len(zs) == 1 {
			reach = formatStamp(zs[0].Score)
		}
	}
	return entries, reach, nil
}

// tokensOnly reports whether a pass reads the index's tokens without their
// stamps: on a single server, where cleanSettle needs no stamps, so the
// server formats no scores.
func (s *store) tokensOnly() bool { return !s.cluster }
