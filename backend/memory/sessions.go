package memory

import (
	"context"
	"slices"
	"strings"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
	"github.com/retailkit/retail/internal/settings"
)

// A session owns its recent items, cart and values, so they go wherever it
// goes: to a new token with RenewSession, away with Logout, expiry and
// cleaning.
type session struct {
	token    string
	user     string // "" for a guest
	created  int64  // Unix ms: started, or last logged in (RenewSession, or UpdateToken with another user)
	life     int64  // its own lifetime in ms (StartSessionFor, RenewSessionFor), or 0 for the Store's
	label    string // as the login gave it, or ""
	lastSeen int64  // Unix ms; it never goes back
	touched  int64  // Unix ms: when a refresh last wrote it in full (see RefreshSession)
	seq      uint64 // its shard's seq when lastSeen was last set
	moved    bool   // seen since it was put in byAge (see sessionList)
	recent   []string
	cart     map[string]int
	values   map[string][]byte

	older, newer           *session // in its shard's byAge
	prevOfUser, nextOfUser *session // among user's sessions (see users.go)
}

// live reports whether x is live at now: seen within the idle timeout,
// started within the lifetime and not logged in at or before its user's
// last LogoutUser.
func (s *store) live(x *session, now int64) bool {
	return now < x.lastSeen+s.idle && now < x.created+s.lifeOf(x) && !s.revoked(x)
}

// lifeOf returns x's lifetime in ms.
func (s *store) lifeOf(x *session) int64 {
	if x.life != 0 {
		return x.life
	}
	return s.lifetime
}

// revoked reports whether x was logged in at or before the millisecond in
// which its user's last LogoutUser began. LogoutUser drops every session it
// finds; this catches those it could not, in the same millisecond, so that
// every backend draws the line where the Redis one must.
func (s *store) revoked(x *session) bool {
	if x.user == "" || !s.anyLoggedOut.Load() {
		return false
	}
	at, ok := s.loggedOut.Load(x.user)
	return ok && x.created <= at.(int64)
}

// liveSession returns token's session if it is live at now, or nil. An
// expired session it finds it drops. sh must be token's shard, locked.
func (s *store) liveSession(sh *sessionShard, token string, now int64) *session {
	x := sh.sessions[token]
	if x != nil && !s.live(x, now) {
		s.dropSession(sh, x)
		return nil
	}
	return x
}

// readSession calls read with token's session, under its shard's lock, if
// the session is live, and reports whether it was.
func (s *store) readSession(token string, read func(x *session)) bool {
	now := s.now()
	sh := s.shard(token)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	x := s.liveSession(sh, token, now)
	if x != nil {
		read(x)
	}
	return x != nil
}

// newSession creates an empty session for token, started and seen at now.
// token must have no session; sh must be its shard, locked.
func (s *store) newSession(sh *sessionShard, token, user string, now int64) *session {
	// Every request reads the token and the user together: one copy of
	// both keeps them in one allocation, and most often one cache line.
	both := token + user
	x := &session{token: both[:len(token)], user: both[len(token):], created: now, touched: now}
	sh.see(x, now)
	sh.add(x)
	s.index(x)
	s.count.Add(1)
	return x
}

// setUser logs x in as user at now, which starts its lifetime again, the
// Store's, if the user changes. x's shard must be locked.
func (s *store) setUser(x *session, user string, now int64) {
	if x.user == user {
		return
	}
	s.unindex(x)
	x.user = strings.Clone(user)
	x.created, x.life = now, 0
	s.index(x)
}

// dropSession deletes x, held in sh, with everything it owns. sh must be
// locked.
func (s *store) dropSession(sh *sessionShard, x *session) {
	sh.remove(x)
	s.unindex(x)
	s.count.Add(-1)
}

// StartSession implements driver.Store.
func (s *store) StartSession(ctx context.Context, token, user string, opts driver.SessionOptions) (driver.Status, error) {
	values := cloneValues(opts.Values)
	now := s.now()
	sh := s.shard(token)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s.liveSession(sh, token, now) != nil {
		return driver.Exists, nil
	}
	x := s.newSession(sh, token, user, now)
	x.life, x.label = settings.Millis(opts.Lifetime), strings.Clone(opts.Label)
	setValues(x, values)
	return driver.OK, nil
}

// CheckToken implements driver.Store. It is readSession written out: it
// runs on every request.
func (s *store) CheckToken(ctx context.Context, token string) (string, bool, error) {
	now := s.now()
	sh := s.shard(token)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if x := s.liveSession(sh, token, now); x != nil {
		return x.user, true, nil
	}
	return "", false, nil
}

// RefreshSession implements driver.Store.
func (s *store) RefreshSession(ctx context.Context, token, item string) (string, bool, error) {
	now := s.now()
	var name string
	if item != "" {
		name = s.views.name(item)
	}
	sh := s.shard(token)
	sh.mu.Lock()
	x := s.liveSession(sh, token, now)
	if x == nil {
		sh.mu.Unlock()
		return "", false, nil
	}
	newItem := item != "" && (len(x.recent) == 0 || x.recent[0] != item)
	if newItem || now-x.touched >= s.touch {
		// Otherwise the visit changes nothing: it is not written, as the
		// Redis backend answers it from its client-side cache.
		s.visit(sh, x, now)
		if newItem {
			x.recent = pushRecent(x.recent, name, s.recentLimit)
		}
	}
	user := x.user
	sh.mu.Unlock()
	return user, true, nil
}

// UpdateToken implements driver.Store.
func (s *store) UpdateToken(ctx context.Context, token, user, item string) error {
	now := s.now()
	if item != "" {
		// The view counters hold one copy of every item name; the recent
		// lists share it instead of keeping the caller's string.
		item = s.views.name(item)
	}

	sh := s.shard(token)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	x := s.liveSession(sh, token, now)
	if x == nil {
		x = s.newSession(sh, token, user, now)
	} else {
		if x.user != user {
			x.touched = now // a login writes the session in full
		}
		s.setUser(x, user, now)
		s.visit(sh, x, now)
	}
	if item != "" {
		x.recent = pushRecent(x.recent, item, s.recentLimit)
	}
	return nil
}

// visit records a visit of x at now: it is last seen now, and written in
// full (touched) if TouchEvery has passed since it last was, as the Redis
// backend rewrites a session's login then. sh must be x's shard, locked.
func (s *store) visit(sh *sessionShard, x *session, now int64) {
	sh.see(x, now)
	if now-x.touched >= s.touch {
		x.touched = now
	}
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

// RenewSession implements driver.Store. The session moves as a whole with
// the shards of both tokens locked, so no call sees neither token live. The
// shards are locked in index order, so two renewals between the same two
// shards cannot each hold one and wait for the other.
func (s *store) RenewSession(ctx context.Context, token, newToken, user string, opts driver.SessionOptions) (driver.Status, error) {
	values := cloneValues(opts.Values)
	now := s.now()
	from, to := shardOf(s.seed, token), shardOf(s.seed, newToken)
	first, second := &s.shards[min(from, to)], &s.shards[max(from, to)]
	first.mu.Lock()
	defer first.mu.Unlock()
	if second != first {
		second.mu.Lock()
		defer second.mu.Unlock()
	}

	x := s.liveSession(&s.shards[from], token, now)
	if x == nil {
		return driver.NoSession, nil
	}
	if valuesAfter(x.values, values) > retail.MaxSessionValues {
		return driver.Full, nil
	}
	if s.liveSession(&s.shards[to], newToken, now) != nil {
		return driver.Exists, nil
	}
	s.shards[from].remove(x)
	x.token = strings.Clone(newToken)
	if user != "" {
		s.setUser(x, user, now)
		x.created, x.life = now, settings.Millis(opts.Lifetime)
	}
	if opts.Label != "" {
		x.label = strings.Clone(opts.Label)
	}
	setValues(x, values)
	s.shards[to].see(x, now)
	x.touched = now
	s.shards[to].add(x)
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
	sh := s.shard(token)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if x := sh.sessions[token]; x != nil {
		s.dropSession(sh, x)
	}
	return nil
}

// SessionCount implements driver.Store. The count changes with the shard's
// map, under the shard's lock, so it is exact at every moment, with no
// need to lock the shards to add them up.
func (s *store) SessionCount(ctx context.Context) (int, error) {
	return int(s.count.Load()), nil
}
