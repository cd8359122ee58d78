package rueidisbackend

import (
	"cmp"
	"context"
	_ "embed"
	"slices"
	"strconv"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail/driver"
)

//go:embed end.lua
var endSrc string

var endSession = sessionScript(endSrc)

// ended is what endSession reports of a session it deleted.
type ended struct {
	token, seen string
	cstamp      string // the created stamp
	created     int64  // the created ms
	user        string
	wasLive     bool
}

// endCall returns the endSession call for token; onlyUser, if not empty,
// spares a session of another user.
func (s *store) endCall(now int64, token, onlyUser string) call {
	keys := []string{s.k.session(token)}
	if !s.cluster {
		keys = append(keys, s.k.index())
	}
	return s.scriptCall(endSession, keys, s.sessionArgs(now, token, onlyUser))
}

// endReply parses endSession's answer; ok is false if no session was
// deleted.
func endReply(token string, r rueidis.RedisResult) (e ended, ok bool, err error) {
	reply, err := r.ToArray()
	if err != nil {
		return ended{}, false, err
	}
	st, err := status(reply)
	if err != nil || st != driver.OK {
		return ended{}, false, err
	}
	if len(reply) < 4 {
		return ended{}, false, errShortReply
	}
	login, err := reply[1].ToString()
	if err != nil {
		return ended{}, false, err
	}
	e.token = token
	l, _ := parseLogin(login)
	e.cstamp, e.created, e.user = l.cstamp, l.created, l.user
	if e.seen, _, err = optString(reply[2]); err != nil {
		return ended{}, false, err
	}
	live, err := reply[3].AsInt64()
	e.wasLive = live == 1
	return e, err == nil, err
}

// unindexEnded returns the calls that remove deleted sessions from the
// indexes: from the session index in a cluster (on a single server
// endSession did it), and each from its user's index.
func (s *store) unindexEnded(gone []ended) []call {
	var pairs []string
	var users []call
	for _, e := range gone {
		if s.cluster && e.seen != "" {
			pairs = append(pairs, e.token, stampOf(e.seen))
		}
		if e.user != "" {
			users = append(users, s.unindexUserCall(e.user, []string{e.token, e.cstamp}))
		}
	}
	if len(pairs) == 0 {
		return users
	}
	return append([]call{s.unindexCall(pairs)}, users...)
}

// Logout implements driver.Store: a script deletes the session (and,
// on a single server, its index entry), then its entries in the indexes on
// other slots are removed if no newer session has replaced them. A guest's
// Logout on a single server is one round trip; otherwise two.
func (s *store) Logout(ctx context.Context, token string) error {
	res := s.do(ctx, s.endCall(s.nowMs(), token, ""))[0]
	s.sessionWritten(s.k.session(token), true)
	e, ok, err := endReply(token, res)
	if !ok {
		return err
	}
	return s.send(ctx, s.unindexEnded([]ended{e}))
}

// UserSessions implements driver.Store in two round trips: the user's index,
// then the state of each session in it. Entries whose session is gone,
// expired or now another user's are skipped. Those whose session is gone
// (cleaning leaves them, see CleanSessions) are removed in a third round
// trip, each only if no newer session has replaced it, so that the next
// call reads them no more; a failure there is not reported, as the answer
// stands and the next call tries again. The others stay: another process,
// its clock behind this one's, may still find an expired session live,
// and a session now another user's may be switched back to this user by
// UpdateToken, which keeps its created stamp; LogoutUser must find both.
func (s *store) UserSessions(ctx context.Context, user string) ([]driver.SessionInfo, error) {
	res := s.c.DoMulti(ctx,
		s.c.B().Zrange().Key(s.k.user(user)).Min("0").Max("-1").Withscores().Build(),
		s.c.B().Get().Key(s.k.loggedOut(user)).Build())
	entries, err := res[0].AsZScores()
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	outAt, loggedOut, err := loggedOutAt(res[1])
	if err != nil {
		return nil, err
	}
	cmds := make(rueidis.Commands, 0, len(entries))
	for _, z := range entries {
		cmds = append(cmds, s.c.B().Hmget().Key(s.k.session(z.Member)).Field("login", "seen", "label").Build())
	}
	res = s.c.DoMulti(ctx, cmds...)
	now := s.nowMs()
	var out []driver.SessionInfo
	var stale []string // token, created stamp pairs of entries whose session is gone
	for i, z := range entries {
		info, ok, err := infoFrom(res[i])
		switch {
		case err != nil:
			return nil, err
		case !ok:
			stale = append(stale, z.Member, formatStamp(z.Score))
		case info.user == user && s.live(now, info.created, info.life, info.lastSeen) && (!loggedOut || info.created > outAt):
			out = append(out, driver.SessionInfo{
				ID: z.Member, User: user, Created: msTime(info.created), LastSeen: msTime(info.lastSeen),
				Label: info.label,
			})
		}
	}
	if len(stale) > 0 {
		_ = s.send(ctx, []call{s.unindexUserCall(user, stale)})
	}
	slices.SortFunc(out, func(a, b driver.SessionInfo) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// LogoutUser implements driver.Store in four round trips: a script that
// raises the user's logout mark; a script that records the instant it
// began in (which ends the user's sessions the index misses, see
// loggedout.go) and reads the user's index; one script per session read,
// deleting it if it is still the user's; then the removal of the index
// entries of those deleted, and of every entry read from the user's index
// that no newer session has replaced.
func (s *store) LogoutUser(ctx context.Context, user string) (int, error) {
	now := s.nowMs()
	out := s.k.loggedOut(user)
	ttl := s.life + s.ttlSlack.Milliseconds()
	// The mark first: until it is raised, calls do not read the user's key.
	// Both keys hold the latest of several writers' instants, which another
	// LogoutUser of this process may be recording at once: until a read of
	// the server, this process reads them there (see ownWrites).
	err := s.do(ctx, s.raiseMarkCall(user, now, ttl))[0].Error()
	s.markWritten(logoutBucket(user))
	if err != nil {
		return 0, err
	}
	reply, err := s.do(ctx, s.scriptCall(logoutEverywhere, []string{out, s.k.user(user)}, []string{i64(now), i64(ttl)}))[0].ToArray()
	s.own.changed(recordOf(out))
	if err != nil {
		return 0, err
	}
	if len(reply) < 2 {
		return 0, errShortReply
	}
	// Sessions logged in at or before an earlier LogoutUser were over
	// already: ending them ends no live session.
	before, over, err := optString(reply[1])
	if err != nil {
		return 0, err
	}
	var overAt int64
	if over {
		if overAt, err = strconv.ParseInt(before, 10, 64); err != nil {
			return 0, err
		}
	}
	flat, err := reply[0].AsStrSlice()
	if err != nil {
		return 0, err
	}
	entries := make([]rueidis.ZScore, 0, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		score, err := strconv.ParseFloat(flat[i+1], 64)
		if err != nil {
			return 0, err
		}
		entries = append(entries, rueidis.ZScore{Member: flat[i], Score: score})
	}
	if len(entries) == 0 {
		return 0, nil
	}
	calls := make([]call, len(entries))
	for i, z := range entries {
		calls[i] = s.endCall(now, z.Member, user)
	}
	var gone []ended
	stale := make([]string, 0, 2*len(entries))
	n := 0
	var firstErr error
	for i, r := range s.do(ctx, calls...) {
		token := entries[i].Member
		s.sessionWritten(s.k.session(token), true)
		e, ok, err := endReply(token, r)
		switch {
		case err != nil:
			firstErr = cmp.Or(firstErr, err)
			continue
		case ok:
			gone = append(gone, ended{token: token, seen: e.seen}) // its user entry goes below
			if e.wasLive && (!over || e.created > overAt) {
				n++
			}
		}
		stale = append(stale, token, formatStamp(entries[i].Score))
	}
	calls = s.unindexEnded(gone)
	calls = append(calls, s.unindexUserCall(user, stale))
	if err := s.send(ctx, calls); err != nil {
		return n, err
	}
	return n, firstErr
}
