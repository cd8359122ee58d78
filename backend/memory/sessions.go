package memory

import (
	"context"
	"slices"
	"strings"

	"github.com/retailkit/retail/driver"
)

// A session owns its recent items, cart and values, so they go wherever it
// goes: to a new token with RenewSession, away with Logout, expiry and
// cleaning.
type session struct {
	token    string
	user     string // "" for a guest
	created  int64  // Unix ms: started, or last logged in by RenewSession
	lastSeen int64  // Unix ms; it never goes back
	seq      uint64 // Store.seq when lastSeen was last set
	recent   []string
	cart     map[string]int
	values   map[string][]byte

	older, newer           *session // in byAge
	prevOfUser, nextOfUser *session // among user's sessions (see users.go)
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

// live reports whether x is live at now: seen within the idle timeout and
// started within the lifetime.
func (s *store) live(x *session, now int64) bool {
	return now < x.lastSeen+s.idle && now < x.created+s.lifetime
}

// liveSession returns token's session if it is live at now, or nil. An
// expired session it finds it drops. sessMu must be held for writing.
func (s *store) liveSession(token string, now int64) *session {
	x := s.sessions[token]
	if x != nil && !s.live(x, now) {
		s.dropSession(x)
		return nil
	}
	return x
}

// readSession calls read with token's session under the read lock, if the
// session is live, and reports whether it was. An expired session it finds
// is dropped afterwards, under the write lock; expiry is rare next to
// reads, which share the lock.
func (s *store) readSession(token string, read func(x *session)) bool {
	now := s.now()
	s.sessMu.RLock()
	x := s.sessions[token]
	live := x != nil && s.live(x, now)
	if live {
		read(x)
	}
	s.sessMu.RUnlock()
	if x != nil && !live {
		s.dropExpired(token, x, now)
	}
	return live
}

// dropExpired drops x, found under token and expired at now, unless it has
// gone or been refreshed meanwhile.
func (s *store) dropExpired(token string, x *session, now int64) {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	if s.sessions[token] == x && !s.live(x, now) {
		s.dropSession(x)
	}
}

// newSession creates an empty session for token, started and seen at now.
// token must have no session. sessMu must be held for writing.
func (s *store) newSession(token, user string, now int64) *session {
	x := &session{token: strings.Clone(token), user: strings.Clone(user), created: now, lastSeen: now}
	s.sessions[x.token] = x
	s.seq++
	x.seq = s.seq
	s.byAge.insert(x)
	s.index(x)
	return x
}

// touch records that x was seen at now: it becomes the youngest session,
// out of reach of the cleaning passes that began before. sessMu must be
// held for writing.
func (s *store) touch(x *session, now int64) {
	s.byAge.remove(x)
	x.lastSeen = max(x.lastSeen, now) // a call that read the clock earlier may come second
	s.seq++
	x.seq = s.seq
	s.byAge.insert(x)
}

// setUser logs x in as user. sessMu must be held for writing.
func (s *store) setUser(x *session, user string) {
	if x.user == user {
		return
	}
	s.unindex(x)
	x.user = strings.Clone(user)
	s.index(x)
}

// dropSession deletes a session with everything it owns. sessMu must be held
// for writing.
func (s *store) dropSession(x *session) {
	s.byAge.remove(x)
	s.unindex(x)
	delete(s.sessions, x.token)
}

// StartSession implements driver.Store.
func (s *store) StartSession(ctx context.Context, token, user string) (driver.Status, error) {
	now := s.now()
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	if s.liveSession(token, now) != nil {
		return driver.Exists, nil
	}
	s.newSession(token, user, now)
	return driver.OK, nil
}

// CheckToken implements driver.Store. It is readSession written out: it
// runs on every request.
func (s *store) CheckToken(ctx context.Context, token string) (string, bool, error) {
	now := s.now()
	s.sessMu.RLock()
	x := s.sessions[token]
	if x != nil && s.live(x, now) {
		user := x.user
		s.sessMu.RUnlock()
		return user, true, nil
	}
	s.sessMu.RUnlock()
	if x != nil {
		s.dropExpired(token, x, now)
	}
	return "", false, nil
}

// RefreshSession implements driver.Store. The view is counted after the
// session is refreshed, outside the session lock, so that refreshes do not
// wait for the view ranking; a view is counted only for a refresh that
// happened.
func (s *store) RefreshSession(ctx context.Context, token, item string) (string, bool, error) {
	now := s.now()
	var name string
	if item != "" {
		name = s.viewName(item)
	}
	s.sessMu.Lock()
	x := s.liveSession(token, now)
	if x == nil {
		s.sessMu.Unlock()
		return "", false, nil
	}
	s.touch(x, now)
	if item != "" {
		x.recent = pushRecent(x.recent, name, s.recentLimit)
	}
	user := x.user
	s.sessMu.Unlock()
	if item != "" {
		s.countView(item)
	}
	return user, true, nil
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
	x := s.liveSession(token, now)
	if x == nil {
		x = s.newSession(token, user, now)
	} else {
		s.setUser(x, user)
		s.touch(x, now)
	}
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

// RenewSession implements driver.Store. The session moves as a whole under
// one lock, so no call sees neither token live.
func (s *store) RenewSession(ctx context.Context, token, newToken, user string) (driver.Status, error) {
	now := s.now()
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	x := s.liveSession(token, now)
	if x == nil {
		return driver.NoSession, nil
	}
	if s.liveSession(newToken, now) != nil {
		return driver.Exists, nil
	}
	delete(s.sessions, x.token)
	x.token = strings.Clone(newToken)
	s.sessions[x.token] = x
	if user != "" {
		s.setUser(x, user)
		x.created = now
	}
	s.touch(x, now)
	return driver.OK, nil
}

// RecentItems implements driver.Store.
func (s *store) RecentItems(ctx context.Context, token string) ([]string, error) {
	var items []string
	s.readSession(token, func(x *session) {
		if len(x.recent) > 0 {
			items = slices.Clone(x.recent)
		}
	})
	return items, nil
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

// SessionCount implements driver.Store.
func (s *store) SessionCount(ctx context.Context) (int, error) {
	s.sessMu.RLock()
	defer s.sessMu.RUnlock()
	return len(s.sessions), nil
}
