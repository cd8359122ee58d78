package rueidisbackend

import (
	"cmp"
	"context"
	"strconv"

	"github.com/redis/rueidis"
)

// Each round of a cleaning pass starts by reading the oldest entries of
// the session index: from the one index, or from every part of an index
// that Options.Spread splits, merged into the order one index would give.

// oldestSessions returns the oldest index entries with stamps below ARGV[3]
// (the pass's start): as many as lie beyond the newest ARGV[1] or have
// stamps below ARGV[4] (idle-expired), whichever is more, n, and at most
// ARGV[2]. It answers the stamp of the n-th oldest entry (the reach, see
// cleanOnServer; +inf if the pass may take every entry), then the entries
// as token, stamp pairs; or nothing if n is 0.
//
// KEYS: the index, whole (a Spread of 1).
var oldestSessions = newScript(`
local size = redis.call('ZCARD', KEYS[1])
local n = size - tonumber(ARGV[1])
local expired = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. ARGV[4])
if expired > n then n = expired end
if n <= 0 then return {} end
local reach = '+inf'
if n < size then reach = redis.call('ZRANGE', KEYS[1], n - 1, n - 1, 'WITHSCORES')[2] end
local out = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3], 'WITHSCORES', 'LIMIT', 0, math.min(n, tonumber(ARGV[2])))
table.insert(out, 1, reach)
return out
`)

// indexEntry is an entry of the session index as a pass read it, with the
// part it was read from, where the pass settles it.
type indexEntry struct {
	token, stamp string // the stamp as the index holds it, for the scripts to compare
	score        float64
	part         int
}

// oldestOfParts is oldestSessions over an index split in parts, for a
// single server, where one script may read them all: it adds up the parts'
// sizes and idle-expired entries to find how many entries the round takes,
// n, and answers n, then each part's oldest n entries below the pass's
// start as token, stamp pairs, for the caller to merge.
//
// KEYS: the index parts. ARGV: as oldestSessions'.
var oldestOfParts = newScript(`
local n, expired = -tonumber(ARGV[1]), 0
for i = 1, #KEYS do
  n = n + redis.call('ZCARD', KEYS[i])
  expired = expired + redis.call('ZCOUNT', KEYS[i], '-inf', '(' .. ARGV[4])
end
if expired > n then n = expired end
if n <= 0 then return {0} end
n = math.min(n, tonumber(ARGV[2]))
local out = {n}
for i = 1, #KEYS do
  out[i + 1] = redis.call('ZRANGEBYSCORE', KEYS[i], '-inf', '(' .. ARGV[3], 'WITHSCORES', 'LIMIT', 0, n)
end
return out
`)

// oldest returns the entries a round of a pass works on (see
// oldestSessions), oldest first: on a single server from one script (see
// oldestCall), in a cluster from every part of the index, whose counts are
// added up and whose entries are merged (see oldestInCluster).
func (s *store) oldest(ctx context.Context, keep, limit int, start float64, idleBound string) ([]indexEntry, error) {
	if !s.cluster {
		entries, _, err := s.oldestFrom(s.do(ctx, s.oldestCall(keep, limit, start, idleBound))[0])
		return entries, err
	}
	n, parts, err := s.oldestInCluster(ctx, keep, limit, start, idleBound)
	if err != nil || n <= 0 {
		return nil, err
	}
	return mergeOldest(parts, int(min(n, int64(limit)))), nil
}

// oldestCall is the read of a round on a single server: oldestSessions
// over the one index, or oldestOfParts over its parts. Its reply goes to
// oldestFrom.
func (s *store) oldestCall(keep, limit int, start float64, idleBound string) call {
	args := []string{itoa(keep), itoa(limit), formatStamp(start), idleBound}
	if s.k.spread == 1 {
		return s.scriptCall(oldestSessions, []string{s.k.indexPart(0)}, args)
	}
	return s.scriptCall(oldestOfParts, s.k.indexParts, args)
}

// oldestFrom returns the entries that the reply to an oldestCall holds,
// oldest first, and their reach: the stamp of the newest entry that the
// pass may take (for an index of one part), or of the newest entry read.
func (s *store) oldestFrom(r rueidis.RedisResult) (entries []indexEntry, reach string, err error) {
	if s.k.spread == 1 {
		reply, err := r.AsStrSlice()
		if err != nil || len(reply) == 0 {
			return nil, "", err
		}
		pairs := reply[1:]
		entries := make([]indexEntry, 0, len(pairs)/2)
		for i := 0; i+1 < len(pairs); i += 2 {
			entries = append(entries, indexEntry{token: pairs[i], stamp: pairs[i+1]})
		}
		return entries, reply[0], nil
	}
	reply, err := r.ToArray()
	if err != nil {
		return nil, "", err
	}
	if len(reply) == 0 {
		return nil, "", errShortReply
	}
	n, err := reply[0].AsInt64()
	if err != nil || n <= 0 {
		return nil, "", err
	}
	if len(reply) != 1+s.k.spread {
		return nil, "", errShortReply
	}
	parts := make([][]indexEntry, s.k.spread)
	for p := range parts {
		pairs, err := reply[1+p].AsStrSlice()
		if err != nil {
			return nil, "", err
		}
		parts[p] = make([]indexEntry, 0, len(pairs)/2)
		for i := 0; i+1 < len(pairs); i += 2 {
			score, err := strconv.ParseFloat(pairs[i+1], 64)
			if err != nil {
				return nil, "", err
			}
			parts[p] = append(parts[p], indexEntry{token: pairs[i], stamp: pairs[i+1], score: score, part: p})
		}
	}
	entries = mergeOldest(parts, int(n))
	if len(entries) == 0 {
		return nil, "", nil
	}
	return entries, entries[len(entries)-1].stamp, nil
}

// mergeOldest merges the oldest entries of the index parts into the first
// n of the order one sorted set would give: by stamp, then token.
func mergeOldest(parts [][]indexEntry, n int) []indexEntry {
	return mergeFirst(parts, n, func(a, b indexEntry) int {
		return cmp.Or(cmp.Compare(a.score, b.score), cmp.Compare(a.token, b.token))
	})
}

// oldestInCluster reads the index parts in a cluster, where they live on
// different slots: each part's size, number of idle-expired entries and
// oldest entries below the pass's start, at most limit, with plain
// commands, all in one round trip. It returns how many entries the round
// takes and each part's oldest entries. The parts are read at slightly
// different moments; as the pass reads the sessions after the index anyway,
// a count that a concurrent update makes stale only changes how many this
// round removes.
func (s *store) oldestInCluster(ctx context.Context, keep, limit int, start float64, idleBound string) (int64, [][]indexEntry, error) {
	calls := make([]call, 0, 3*s.k.spread)
	below := "(" + formatStamp(start)
	for _, key := range s.k.indexParts {
		calls = append(calls,
			call{cmd: s.c.B().Zcard().Key(key).Build()},
			call{cmd: s.c.B().Zcount().Key(key).Min("-inf").Max("(" + idleBound).Build()},
			call{cmd: s.c.B().Zrangebyscore().Key(key).Min("-inf").Max(below).Withscores().Limit(0, int64(limit)).Build()})
	}
	res := s.do(ctx, calls...)
	var size, expired int64
	parts := make([][]indexEntry, s.k.spread)
	for p := range parts {
		n, err1 := res[3*p].AsInt64()
		e, err2 := res[3*p+1].AsInt64()
		zs, err3 := res[3*p+2].AsZScores()
		if err := cmp.Or(err1, err2, err3); err != nil {
			return 0, nil, err
		}
		size, expired = size+n, expired+e
		parts[p] = make([]indexEntry, len(zs))
		for i, z := range zs {
			parts[p][i] = indexEntry{token: z.Member, stamp: formatStamp(z.Score), score: z.Score, part: p}
		}
	}
	return max(size-int64(keep), expired), parts, nil
}
