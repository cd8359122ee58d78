package memory

import "context"

// cleanChunk bounds how long one pass holds the session lock at a time.
const cleanChunk = 1024

// CleanSessions implements driver.Store. The least recently seen session is
// at the old end of byAge, so a pass removes from there: first the sessions
// that expired by the idle timeout (they are the oldest), then the oldest
// while more than keep remain. A long pass works in chunks so that requests
// are not held up behind it; a session seen after the pass began has a
// higher seq and stops the pass before it is reached.
//
// Sessions that expired by their lifetime but not by the idle timeout are
// not removed early: no call can refresh them, so they become idle-expired
// within the idle timeout.
func (s *store) CleanSessions(ctx context.Context, keep, max int) (int, error) {
	now := s.now()
	removed := 0
	var passSeq uint64
	for removed < max {
		if removed > 0 {
			if err := ctx.Err(); err != nil {
				return removed, err
			}
		}
		s.sessMu.Lock()
		if removed == 0 {
			passSeq = s.seq
		}
		n := min(max-removed, cleanChunk)
		i := 0
		for ; i < n; i++ {
			x := s.byAge.oldest
			if x == nil || x.seq > passSeq || (now < x.lastSeen+s.idle && len(s.sessions) <= keep) {
				break
			}
			s.dropSession(x)
		}
		s.sessMu.Unlock()
		removed += i
		if i < n {
			break // nothing more this pass may remove
		}
	}
	return removed, nil
}
