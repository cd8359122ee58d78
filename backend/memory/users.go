package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/retailkit/retail/driver"
)

// The sessions of each user are a doubly linked list through the sessions
// themselves, headed in byUser: adding and removing one is O(1) and costs
// no allocation, where a set per user would cost a map for every user, most
// of whom have one session. The list changes with the session, under
// sessMu, whenever one is created, logged in as another user or dropped, so
// the index never holds a session the Store does not, nor misses one it
// does. Guests are not indexed.

// index adds x to the sessions of its user. sessMu must be held for writing.
func (s *store) index(x *session) {
	if x.user == "" {
		return
	}
	head := s.byUser[x.user]
	x.nextOfUser = head
	if head != nil {
		head.prevOfUser = x
	}
	s.byUser[x.user] = x
}

// unindex removes x from the sessions of its user. sessMu must be held for
// writing.
func (s *store) unindex(x *session) {
	if x.user == "" {
		return
	}
	switch {
	case x.prevOfUser != nil:
		x.prevOfUser.nextOfUser = x.nextOfUser
	case x.nextOfUser != nil:
		s.byUser[x.user] = x.nextOfUser
	default:
		delete(s.byUser, x.user)
	}
	if x.nextOfUser != nil {
		x.nextOfUser.prevOfUser = x.prevOfUser
	}
	x.prevOfUser, x.nextOfUser = nil, nil
}

// UserSessions implements driver.Store. It drops the expired sessions of
// user it meets, so it takes the write lock; listing a user's sessions is
// rare next to requests.
func (s *store) UserSessions(ctx context.Context, user string) ([]driver.SessionInfo, error) {
	now := s.now()
	s.sessMu.Lock()
	var infos []driver.SessionInfo
	for x := s.byUser[user]; x != nil; {
		next := x.nextOfUser
		if s.live(x, now) {
			infos = append(infos, driver.SessionInfo{
				Token:    x.token,
				User:     x.user,
				Created:  time.UnixMilli(x.created),
				LastSeen: time.UnixMilli(x.lastSeen),
			})
		} else {
			s.dropSession(x)
		}
		x = next
	}
	s.sessMu.Unlock()
	slices.SortFunc(infos, func(a, b driver.SessionInfo) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Token, b.Token))
	})
	return infos, nil
}

// LogoutUser implements driver.Store. Expired sessions of user go too, but
// only live ones are counted: the others had already ended.
func (s *store) LogoutUser(ctx context.Context, user string) (int, error) {
	now := s.now()
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	n := 0
	for x := s.byUser[user]; x != nil; {
		next := x.nextOfUser
		if s.live(x, now) {
			n++
		}
		s.dropSession(x)
		x = next
	}
	return n, nil
}
