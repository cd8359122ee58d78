package rueidisbackend

import (
	"context"
	"strconv"
	"time"
)

// cleanBatch bounds the sessions one round of a pass reads and deletes, so
// that no script holds the server for long.
const cleanBatch = 1000

// CleanSessions implements driver.Store. Each round of the pass reads
// the oldest index entries with their stamps, deletes every session whose
// stamp is still the one read (one script per session in a cluster, where
// sessions live on different slots; one script for the round on a single
// server), then removes the index entries of the deleted sessions whose
// stamps are still the ones read. A session refreshed at any point after
// the read has a new stamp and survives; one refreshed after its keys were
// deleted is a new session whose index entry the last step leaves alone.
// Sessions refreshed after the pass began have stamps above its start and
// are never read.
func (s *store) CleanSessions(ctx context.Context, keep, max int) (int, error) {
	start := s.nextStamp()
	removed := 0
	for removed < max {
		n, done, err := s.cleanRound(ctx, keep, min(max-removed, cleanBatch), start)
		removed += n
		if err != nil {
			return removed, err
		}
		if done {
			break
		}
	}
	return removed, nil
}

// strayGrace is how old an index entry without session keys must be before
// a pass removes it. In a cluster an update's index write can land a moment
// before its session write, so a young stray is an update in flight; an old
// one was left by an update whose session write failed.
const strayGrace = time.Minute

// oldestSessions returns up to ARGV[2] of the oldest index entries beyond
// the newest ARGV[1], with stamps below ARGV[3] (the pass's start), as
// token, stamp pairs.
//
// KEYS: index.
var oldestSessions = newScript(`
local n = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[1])
if n <= 0 then return {} end
n = math.min(n, tonumber(ARGV[2]))
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3], 'WITHSCORES', 'LIMIT', 0, n)
`)

// cleanRound removes up to limit sessions and reports whether the pass is
// done: nothing left to read, or every session read was refreshed.
func (s *store) cleanRound(ctx context.Context, keep, limit int, start float64) (removed int, done bool, err error) {
	pairs, err := s.do(ctx, s.scriptCall(oldestSessions, []string{s.k.index()},
		[]string{itoa(keep), itoa(limit), formatStamp(start)}))[0].AsStrSlice()
	if err != nil || len(pairs) == 0 {
		return 0, true, err
	}
	tokens := make([]string, 0, len(pairs)/2)
	stamps := make([]string, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		tokens = append(tokens, pairs[i])
		stamps = append(stamps, pairs[i+1])
	}
	outcome, err := s.deleteSessions(ctx, tokens, stamps)
	if err != nil {
		return 0, true, err
	}
	var unindexArgs []string
	for i, o := range outcome {
		switch {
		case o == cleanDeleted:
			removed++
		case o == cleanNoSession && stale(stamps[i], start):
			// A stray index entry; nothing else would ever remove it, but
			// it was no session.
		default:
			continue
		}
		unindexArgs = append(unindexArgs, tokens[i], stamps[i])
	}
	if len(unindexArgs) == 0 {
		return 0, true, nil
	}
	err = s.do(ctx, s.scriptCall(unindex, []string{s.k.index()}, unindexArgs))[0].Error()
	return removed, false, err
}

// stale reports whether an index stamp is older than strayGrace before the
// pass's start.
func stale(stamp string, start float64) bool {
	f, err := strconv.ParseFloat(stamp, 64)
	return err == nil && f < start-float64(strayGrace.Milliseconds())
}

// cleanSessions deletes each given session whose last-seen stamp is still
// the one the pass read from the index: a session refreshed since is kept.
// It answers, per session, cleanDeleted, cleanKept or cleanNoSession.
//
// KEYS: login, seen, recent, cart of each session. ARGV: the stamp read for
// each session.
var cleanSessions = newScript(`
local DELETED, KEPT, NO_SESSION = 1, 0, 2
local out = {}
for i = 1, #ARGV do
  local b = (i - 1) * 4
  local seen = redis.call('GET', KEYS[b + 2])
  if not seen then
    out[i] = NO_SESSION
  elseif tonumber(seen) == tonumber(ARGV[i]) then
    redis.call('DEL', KEYS[b + 1], KEYS[b + 2], KEYS[b + 3], KEYS[b + 4])
    out[i] = DELETED
  else
    out[i] = KEPT
  end
end
return out
`)

// cleanSessions' answers, one a session (the script's DELETED, KEPT and
// NO_SESSION).
const (
	cleanKept      = 0 // refreshed since the pass read it: left alone
	cleanDeleted   = 1 // deleted
	cleanNoSession = 2 // no session keys: an index entry that outlived them, or an update in flight
)

// deleteSessions runs the cleanSessions script over the sessions and returns
// its answer for each.
func (s *store) deleteSessions(ctx context.Context, tokens, stamps []string) ([]int64, error) {
	keysOf := make([]sessionKeys, len(tokens))
	for i, t := range tokens {
		keysOf[i] = s.k.session(t)
	}
	var out []int64
	if s.cluster {
		calls := make([]call, len(tokens))
		for i := range tokens {
			calls[i] = s.scriptCall(cleanSessions, keysOf[i].all(), stamps[i:i+1])
		}
		for _, r := range s.do(ctx, calls...) {
			o, err := r.AsIntSlice()
			if err != nil {
				return nil, err
			}
			out = append(out, o...)
		}
	} else {
		all := make([]string, 0, 4*len(tokens))
		for _, ks := range keysOf {
			all = append(all, ks.all()...)
		}
		var err error
		if out, err = s.do(ctx, s.scriptCall(cleanSessions, all, stamps))[0].AsIntSlice(); err != nil {
			return nil, err
		}
	}
	for i, o := range out {
		if o == cleanDeleted {
			s.forgetSession(keysOf[i])
		}
	}
	return out, nil
}
