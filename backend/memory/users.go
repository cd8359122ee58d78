package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/retailkit/retail/driver"
)

// The sessions of each user are a doubly linked list through the sessions
// themselves, headed in the byUser map of the user's shard: adding and
// removing one is O(1) and costs no allocation, where a set per user would
// cost a map for every user, most of whom have one session. The list
// changes with the session, under its session shard's lock, whenever one is
// created, logged in as another user or dropped, so the index never holds a
// session the Store does not, nor misses one it does. Guests are not
// indexed.
//
// A user's sessions may sit in any session shard, so the lists are guarded
// by locks of their own, one per user shard, always taken after the
// session shard's. Every change holds a session shard too, so a call
// holding all of them (lockShards) may walk the lists without the user
// shard's lock.

// A userShard heads the session lists of the users that hash to it.
type userShard struct {
	mu     sync.Mutex
	byUser map[string]*session // user -> one of its sessions, linked to the others
	_      cacheLinePad
}

// userShard returns the shard that heads user's sessions.
func (s *store) userShard(user string) *userShard {
	return &s.users[shardOf(s.seed, user)]
}

// index adds x to the sessions of its user. x's session shard must be
// locked.
func (s *store) index(x *session) {
	if x.user == "" {
		return
	}
	us := s.userShard(x.user)
	us.mu.Lock()
	us.link(x)
	us.mu.Unlock()
}

// unindex removes x from the sessions of its user. x's session shard must
// be locked.
func (s *store) unindex(x *session) {
	if x.user == "" {
		return
	}
	us := s.userShard(x.user)
	us.mu.Lock()
	us.unlink(x)
	us.mu.Unlock()
}

// link adds x, logged in, to the sessions of its user. us.mu must be held,
// or every session shard.
func (us *userShard) link(x *session) {
	head := us.byUser[x.user]
	x.nextOfUser = head
	if head != nil {
		head.prevOfUser = x
	}
	us.byUser[x.user] = x
}

// unlink removes x, logged in, from the sessions of its user. us.mu must
// be held, or every session shard.
func (us *userShard) unlink(x *session) {
	switch {
	case x.prevOfUser != nil:
		x.prevOfUser.nextOfUser = x.nextOfUser
	case x.nextOfUser != nil:
		us.byUser[x.user] = x.nextOfUser
	default:
		delete(us.byUser, x.user)
	}
	if x.nextOfUser != nil {
		x.nextOfUser.prevOfUser = x.prevOfUser
	}
	x.prevOfUser, x.nextOfUser = nil, nil
}

// userSessions returns the first of user's sessions, linked to the others.
// Every session shard must be locked.
func (s *store) userSessions(user string) *session {
	return s.userShard(user).byUser[user]
}

// UserSessions implements driver.Store. It locks every session shard, for
// a user's sessions may be in any of them, and so lists them as they are
// at one moment; it drops the expired ones it meets. Listing a user's
// sessions is rare next to requests.
func (s *store) UserSessions(ctx context.Context, user string) ([]driver.SessionInfo, error) {
	now := s.now()
	s.lockShards()
	var infos []driver.SessionInfo
	for x := s.userSessions(user); x != nil; {
		next := x.nextOfUser
		if s.live(x, now) {
			infos = append(infos, driver.SessionInfo{
				ID:       x.token,
				User:     x.user,
				Created:  time.UnixMilli(x.created),
				LastSeen: time.UnixMilli(x.lastSeen),
				Label:    x.label,
			})
		} else {
			s.dropSession(s.shard(x.token), x)
		}
		x = next
	}
	s.unlockShards()
	slices.SortFunc(infos, func(a, b driver.SessionInfo) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
	return infos, nil
}

// LogoutUser implements driver.Store. Like UserSessions it locks every
// session shard, so a session of user cannot escape it by moving to a new
// token meanwhile. It records the millisecond it ran in, which ends the
// user's sessions logged in within it later too (see revoked). Expired sessions of user go too, but only live ones are
// counted: the others had already ended.
func (s *store) LogoutUser(ctx context.Context, user string) (int, error) {
	now := s.now()
	s.lockShards()
	defer s.unlockShards()
	n := 0
	for x := s.userSessions(user); x != nil; {
		next := x.nextOfUser
		if s.live(x, now) {
			n++
		}
		s.dropSession(s.shard(x.token), x)
		x = next
	}
	if at, ok := s.loggedOut.Load(user); !ok || at.(int64) < now {
		s.loggedOut.Store(strings.Clone(user), now)
		s.anyLoggedOut.Store(true)
	}
	return n, nil
}
