package rueidisbackend

import (
	"context"
	"strconv"
	"time"

	"github.com/retailkit/retail"
)

// cleanBatch bounds the sessions one round of a pass reads and deletes, so
// that no script holds the server for long.
const cleanBatch = 1000

// CleanSessions implements retail.Sessions. Each round of the pass reads
// the oldest index entries with their stamps, deletes every session whose
// stamp is still the one read (one script per session in a cluster, where
// sessions live on different slots; one script for the round on a single
// server), then removes the index entries of the deleted sessions whose
// stamps are still the ones read. A session refreshed at any point after
// the read has a new stamp and survives; one refreshed after its keys were
// deleted is a new session whose index entry the last step leaves alone.
// Sessions refreshed after the pass began have stamps above its start and
// are never read.
func (s *Store) CleanSessions(ctx context.Context, keep, max int) (int, error) {
	if err := s.begin(ctx, retail.ValidateCleanSessions(keep, max)); err != nil {
		return 0, err
	}
	start := s.nextStamp()
	removed := 0
	for removed < max {
		n, done, err := s.cleanRound(ctx, keep, min(max-removed, cleanBatch), start)
		removed += n
		if err != nil {
			return removed, wrap("CleanSessions", err)
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

// cleanRound removes up to limit sessions and reports whether the pass is
// done: nothing left to read, or every session read was refreshed.
func (s *Store) cleanRound(ctx context.Context, keep, limit int, start float64) (removed int, done bool, err error) {
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
		case o == 1:
			removed++
		case o == 2 && stale(stamps[i], start):
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

// deleteSessions runs the cleanSessions script over the sessions and returns
// its answer for each.
func (s *Store) deleteSessions(ctx context.Context, tokens, stamps []string) ([]int64, error) {
	keysOf := make([][]string, len(tokens))
	for i, t := range tokens {
		keysOf[i] = s.k.sessionKeys(t)
	}
	var out []int64
	if s.cluster {
		calls := make([]call, len(tokens))
		for i := range tokens {
			calls[i] = s.scriptCall(cleanSessions, keysOf[i], stamps[i:i+1])
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
		for _, k := range keysOf {
			all = append(all, k...)
		}
		var err error
		if out, err = s.do(ctx, s.scriptCall(cleanSessions, all, stamps))[0].AsIntSlice(); err != nil {
			return nil, err
		}
	}
	for i, o := range out {
		if o == 1 {
			s.forgetSession(keysOf[i])
		}
	}
	return out, nil
}
