package memory

import (
	"context"
	"slices"
	"strings"
)

type session struct {
	token    string
	user     string
	lastSeen int64  // Unix ms
	seq      uint64 // Store.seq at the last UpdateToken
	recent   []string
	cart     map[string]int

	older, newer *session
}

// sessionList orders sessions by last-seen time, oldest first; sessions seen
// at the same time keep the order they were seen in.
type sessionList struct{ oldest, newest *session }

func (l *sessionList) remove(x *session) {
	if x.older != nil {
		x.older.newer = x.newer
	} else {
		l.oldest = x.newer
	}
	if x.newer != nil {
		x.newer.older = x.older
	} else {
		l.newest = x.older
	}
	x.older, x.newer = nil, nil
}

// insert links x by its lastSeen. With a clock that does not go back this is
// an append; otherwise it walks back to x's place.
func (l *sessionList) insert(x *session) {
	after := l.newest
	for after != nil && after.lastSeen > x.lastSeen {
		after = after.older
	}
	x.older = after
	if after == nil {
		x.newer = l.oldest
		l.oldest = x
	} else {
		x.newer = after.newer
		after.newer = x
	}
	if x.newer != nil {
		x.newer.older = x
	} else {
		l.newest = x
	}
}

// CheckToken implements driver.Store.
func (s *store) CheckToken(ctx context.Context, token string) (string, bool, error) {
	s.sessMu.RLock()
	defer s.sessMu.RUnlock()
	if x := s.sessions[token]; x != nil {
		return x.user, true, nil
	}
	return "", false, nil
}

// UpdateToken implements driver.Store.
func (s *store) UpdateToken(ctx context.Context, token, user, item string) error {
	now := s.now()
	if item != "" {
		// The views map holds one copy of every item name; the recent
		// lists share it instead of keeping the caller's string.
		item = s.countView(item)
	}

	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	x := s.sessions[token]
	if x == nil {
		x = &session{token: strings.Clone(token)}
		s.sessions[x.token] = x
	} else {
		s.byAge.remove(x)
	}
	if x.user != user {
		x.user = strings.Clone(user)
	}
	s.seq++
	x.seq = s.seq
	x.lastSeen = now
	s.byAge.insert(x)
	if item != "" {
		x.recent = pushRecent(x.recent, item, s.recentLimit)
	}
	return nil
}

// pushRecent moves item to the front of recent, keeping at most limit items.
func pushRecent(recent []string, item string, limit int) []string {
	i := slices.Index(recent, item)
	switch {
	case i == 0:
		return recent
	case i < 0 && len(recent) < limit:
		recent = append(recent, "")
		i = len(recent) - 1
	case i < 0:
		i = len(recent) - 1 // drop the oldest
	}
	copy(recent[1:i+1], recent[:i])
	recent[0] = item
	return recent
}

// RecentItems implements driver.Store.
func (s *store) RecentItems(ctx context.Context, token string) ([]string, error) {
	s.sessMu.RLock()
	defer s.sessMu.RUnlock()
	if x := s.sessions[token]; x != nil && len(x.recent) > 0 {
		return append([]string(nil), x.recent...), nil
	}
	return nil, nil
}

// Logout implements driver.Store.
func (s *store) Logout(ctx context.Context, token string) error {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	if x := s.sessions[token]; x != nil {
		s.dropSession(x)
	}
	return nil
}

// dropSession deletes a session with everything it owns. sessMu must be held.
func (s *store) dropSession(x *session) {
	s.byAge.remove(x)
	delete(s.sessions, x.token)
}

// SessionCount implements driver.Store.
func (s *store) SessionCount(ctx context.Context) (int, error) {
	s.sessMu.RLock()
	defer s.sessMu.RUnlock()
	return len(s.sessions), nil
}

// cleanChunk bounds how long one pass holds the session lock at a time.
const cleanChunk = 1024

// CleanSessions implements driver.Store. A long pass works in chunks so
// that requests are not held up behind it; a session seen after the pass
// began has a higher seq and stops the pass before it is reached.
func (s *store) CleanSessions(ctx context.Context, keep, max int) (int, error) {
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
		n := min(len(s.sessions)-keep, max-removed, cleanChunk)
		done := n <= 0
		for ; n > 0; n-- {
			x := s.byAge.oldest
			if x == nil || x.seq > passSeq {
				done = true
				break
			}
			s.dropSession(x)
			removed++
		}
		s.sessMu.Unlock()
		if done {
			break
		}
	}
	return removed, nil
}
