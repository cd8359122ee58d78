package rueidisbackend

import (
	"context"

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
	start := formatStamp(s.nextStamp())
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

// cleanRound removes up to limit sessions and reports whether the pass is
// done: nothing left to read, or every session read was refreshed.
func (s *Store) cleanRound(ctx context.Context, keep, limit int, start string) (removed int, done bool, err error) {
	pairs, err := s.do(ctx, s.scriptCall(oldestSessions, []string{s.k.index()},
		[]string{itoa(keep), itoa(limit), start}))[0].AsStrSlice()
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
		// 2: an index entry without keys, left by an update whose index
		// write landed but whose session write failed. Nothing else would
		// ever remove it, so it goes too, but it was no session.
		if o == 1 || o == 2 {
			unindexArgs = append(unindexArgs, tokens[i], stamps[i])
		}
		if o == 1 {
			removed++
		}
	}
	if len(unindexArgs) == 0 {
		return 0, true, nil
	}
	err = s.do(ctx, s.scriptCall(unindex, []string{s.k.index()}, unindexArgs))[0].Error()
	return removed, false, err
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
