package rueidisbackend

import (
	"cmp"
	"context"
	"strconv"
)

// Each round of a cleaning pass starts by reading the oldest entries of
// the session index: from the one index, or from every part of an index
// that Options.Spread splits, merged into the order one index would give.

// oldestSessions returns, as token, stamp pairs, the oldest index entries
// with stamps below ARGV[3] (the pass's start): as many as lie beyond the
// newest ARGV[1] or have stamps below ARGV[4] (idle-expired), whichever is
// more, and at most ARGV[2].
//
// KEYS: the index, whole (a Spread of 1).
var oldestSessions = newScript(`
local n = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[1])
local expired = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. ARGV[4])
if expired > n then n = expired end
if n <= 0 then return {} end
n = math.min(n, tonumber(ARGV[2]))
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3], 'WITHSCORES', 'LIMIT', 0, n)
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
// oldestSessions), oldest first: from the one index in one script, or from
// every part of a split one, whose counts are added up and whose entries
// are merged by stamp, then token, as one sorted set would order them.
func (s *store) oldest(ctx context.Context, keep, limit int, start float64, idleBound string) ([]indexEntry, error) {
	args := []string{itoa(keep), itoa(limit), formatStamp(start), idleBound}
	if s.k.spread == 1 {
		pairs, err := s.do(ctx, s.scriptCall(oldestSessions, []string{s.k.indexPart(0)}, args))[0].AsStrSlice()
		if err != nil {
			return nil, err
		}
		entries := make([]indexEntry, 0, len(pairs)/2)
		for i := 0; i+1 < len(pairs); i += 2 {
			entries = append(entries, indexEntry{token: pairs[i], stamp: pairs[i+1]})
		}
		return entries, nil
	}
	var n int64
	var parts [][]indexEntry
	var err error
	if s.cluster {
		n, parts, err = s.oldestInCluster(ctx, keep, limit, start, idleBound)
	} else {
		n, parts, err = s.oldestOnServer(ctx, args)
	}
	if err != nil || n <= 0 {
		return nil, err
	}
	return mergeFirst(parts, int(min(n, int64(limit))), func(a, b indexEntry) int {
		return cmp.Or(cmp.Compare(a.score, b.score), cmp.Compare(a.token, b.token))
	}), nil
}

// oldestOnServer reads the index parts on a single server with one
// oldestOfParts script, and returns how many entries the round takes and
// each part's oldest entries.
func (s *store) oldestOnServer(ctx context.Context, args []string) (int64, [][]indexEntry, error) {
	reply, err := s.do(ctx, s.scriptCall(oldestOfParts, s.k.indexParts, args))[0].ToArray()
	if err != nil {
		return 0, nil, err
	}
	if len(reply) == 0 {
		return 0, nil, errShortReply
	}
	n, err := reply[0].AsInt64()
	if err != nil || n <= 0 {
		return 0, nil, err
	}
	if len(reply) != 1+s.k.spread {
		return 0, nil, errShortReply
	}
	parts := make([][]indexEntry, s.k.spread)
	for p := range parts {
		pairs, err := reply[1+p].AsStrSlice()
		if err != nil {
			return 0, nil, err
		}
		parts[p] = make([]indexEntry, 0, len(pairs)/2)
		for i := 0; i+1 < len(pairs); i += 2 {
			score, err := strconv.ParseFloat(pairs[i+1], 64)
			if err != nil {
				return 0, nil, err
			}
			parts[p] = append(parts[p], indexEntry{token: pairs[i], stamp: pairs[i+1], score: score, part: p})
		}
	}
	return n, parts, nil
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
