package rueidisbackend

import (
	"context"
	_ "embed"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail/driver"
	"github.com/retailkit/retail/internal/settings"
)

// CheckToken implements driver.Store, reading the session from process
// memory (see cachedSession): while the coarse deadline its login holds
// lies ahead, the session is surely live (its lifetime permitting) and no
// round trip is made; past it, the exact last-seen time is read from the
// server.
func (s *store) CheckToken(ctx context.Context, token string) (string, bool, error) {
	l, _, live, err := s.liveSession(ctx, token)
	return l.user, live, err
}

//go:embed start.lua
var startSrc string

var startSession = sessionScript(startSrc)

// StartSession implements driver.Store: one script on the session's slot
// and, unless that indexed the session already (on a single server), the
// index writes in a second round trip and a check in a third (see
// indexNew).
func (s *store) StartSession(ctx context.Context, token, user string, opts driver.SessionOptions) (driver.Status, error) {
	stamp, now := s.nextStamp()
	login := loginValue(withLife(createdField(stamp, now), settings.Millis(opts.Lifetime)), now+s.idle, user)
	var fields []string
	if opts.Label != "" {
		fields = []string{"label", opts.Label}
	}
	if opts.Values != nil {
		fields, _ = withValues(fields, opts.Values)
	}
	st, dropped, err := s.start(ctx, token, user, seenValue(stamp, now), login, fields)
	if err != nil || st != driver.OK {
		return st, err
	}
	calls := s.unindexDropped(token, dropped, user)
	if !s.cluster {
		return driver.OK, s.send(ctx, calls)
	}
	if user != "" {
		calls = append(calls, s.addUserCall(user, token, formatStamp(stamp)))
	}
	return driver.OK, s.indexNew(ctx, token, stamp, user, formatStamp(stamp), calls)
}

// start runs start.lua for token's new session of user with the seen value
// and login given and the fields to copy, and returns its status and the
// login of the session it dropped, if any. On a single server the script
// indexes the session too.
func (s *store) start(ctx context.Context, token, user, seen, login string, fields []string) (driver.Status, string, error) {
	key := s.k.session(token)
	keys := []string{key}
	if !s.cluster {
		keys = append(keys, s.k.index())
		if user != "" {
			keys = append(keys, s.k.user(user))
		}
	}
	args := append(s.sessionArgs(s.nowMs(), token, seen, login), fields...)
	res, err := s.do(ctx, s.scriptCall(startSession, keys, args))[0].ToArray()
	if err != nil {
		s.sessionWritten(key, false) // the script may have run all the same
		return 0, "", err
	}
	st, err := status(res)
	if err == nil && st == driver.Exists {
		// The script cannot tell a session that its user logged out of
		// everywhere (the instant is under the user's key): such a one is
		// absent, and goes, and the script runs again.
		if out, err := s.endTokenIfRevoked(ctx, token); !out || err != nil {
			return driver.Exists, "", err
		}
		if res, err = s.do(ctx, s.scriptCall(startSession, keys, args))[0].ToArray(); err != nil {
			s.sessionWritten(key, false)
			return 0, "", err
		}
		st, err = status(res)
	}
	if err != nil || st != driver.OK {
		return st, "", err
	}
	s.sessionWritten(key, false)
	if len(res) < 2 {
		return 0, "", errShortReply
	}
	dropped, _, err := optString(res[1])
	return driver.OK, dropped, err
}

// unindexDropped returns the call that removes a session that a new one
// under token replaced from its user's index, if it had a user other than
// user (whose index the new session's entry replaces).
func (s *store) unindexDropped(token, droppedLogin, user string) []call {
	l, ok := parseLogin(droppedLogin)
	if !ok || l.user == "" || l.user == user {
		return nil
	}
	return []call{s.unindexUserCall(l.user, []string{token, l.cstamp})}
}

//go:embed refresh.lua
var refreshSrc string

var refreshSession = sessionScript(refreshSrc)

// RefreshSession implements driver.Store. A visit that the script would
// write nothing for (see quiet) is answered from process memory (see
// cachedSession), without a round trip. One that views a new item within
// TouchEvery of the login's last write is one call of view.lua, which
// writes what the process decided if the session still holds what it read
// (see viewed). Otherwise it is one script; on a single server that writes
// the index entry too when it moves, in a cluster the index lives on
// another slot, and is written in a second round trip, made only when the
// entry moves.
func (s *store) RefreshSession(ctx context.Context, token, item string) (string, bool, error) {
	key := s.k.session(token)
	if l, recent, found, err := s.cachedSession(ctx, key); err != nil {
		return "", false, err
	} else if found {
		if out, err := s.endIfRevoked(ctx, token, l.user, l.created); out || err != nil {
			return "", false, err
		}
		if s.quiet(l, recent, item) {
			return l.user, true, nil
		}
		if ok, err := s.viewed(ctx, key, l, recent, item); err != nil {
			return "", false, err
		} else if ok {
			return l.user, true, nil
		}
	}
	stamp, now := s.nextStamp()
	msg, err := s.runBatched(ctx, s.batches.refresh, refreshSession, s.sessionCall(now, key,
		token, seenValue(stamp, now), item))
	if err != nil {
		// The script may have run all the same (see updateToken).
		s.sessionWritten(key, false)
		return "", false, err
	}
	reply, err := msg.ToArray()
	if err != nil {
		return "", false, err
	}
	if st, err := status(reply); err != nil || st != driver.OK {
		return "", false, err
	}
	if len(reply) != 5 {
		return "", false, errShortReply
	}
	user, err := reply[1].ToString()
	if err != nil {
		return "", false, err
	}
	entry, moved, err := optString(reply[4])
	if err != nil {
		return "", false, err
	}
	s.sessionHolds(key, reply[2:4], item != "" || moved)
	if s.cluster && moved {
		// The session is refreshed: a failed move of the index entry is
		// left to cleaning, which moves lagging entries up.
		s.withDeferred(ctx, s.bumpCall(token, entry))
	}
	return user, true, nil
}

// sessionCall is the call of refresh.lua or update.lua for the session in
// key: on a single server, the session index is its shared key, which the
// argument after the settings says.
func (s *store) sessionCall(now int64, key string, args ...string) batchCall {
	if s.cluster {
		return batchCall{head: s.sessionArgs(now, "0", s.limitArg), keys: []string{key}, args: args}
	}
	return batchCall{shared: []string{s.k.index()}, head: s.sessionArgs(now, "1", s.limitArg), keys: []string{key}, args: args}
}

// quiet reports whether a visit of the session whose login is l and
// recent items recent, viewing item, would be written by nothing: the
// session is surely live (before its coarse deadline and within its
// lifetime), its login was written less than TouchEvery ago, and item is
// "" or its newest recent item.
func (s *store) quiet(l login, recent, item string) bool {
	return s.untouched(l, s.nowMs()) && (item == "" || newest(recent) == item)
}

// newest returns the newest of the recent items recent (as a session's
// recent field holds them, see withItem), "" if there are none.
func newest(recent string) string {
	rest := strings.TrimSuffix(recent, "\n")
	return rest[strings.LastIndexByte(rest, '\n')+1:]
}

// untouched reports whether the session whose login is l is surely live
// at now (before its coarse deadline and within its lifetime) and its
// login was written less than TouchEvery before: a visit then writes the
// login, the key's TTL and the index entries nothing.
func (s *store) untouched(l login, now int64) bool {
	return now < l.deadline && now < l.created+s.lifeOf(l) && now-(l.deadline-s.idle) < s.touch
}

//go:embed view.lua
var viewSrc string

var viewSession = sessionScript(viewSrc)

// viewed writes a visit of the session in key, viewing item, with
// view.lua, if this process can decide it: the session was read
// as holding the login l and the recent items recent, and is untouched. It
// writes the seen stamp and the recent items with item only if the session
// still holds what was read. ok is false if nothing was written: the visit
// is not such a one, or the session holds something else, and refresh.lua
// must decide on the server. This moves most of a visit's work from the
// server, which every process shares, to the process (see
// docs/performance.md).
func (s *store) viewed(ctx context.Context, key string, l login, recent, item string) (ok bool, err error) {
	// One reading of the clock decides and stamps, so that the visit is
	// written within TouchEvery of the login it was decided on.
	stamp, now := s.nextStamp()
	if !s.untouched(l, now) {
		return false, nil
	}
	newRecent, changed := withItem(recent, item, s.limit)
	if !changed {
		newRecent = ""
	}
	msg, err := s.runBatched(ctx, s.batches.view, viewSession, s.viewCall(now, key, l.raw, recent, seenValue(stamp, now), newRecent))
	if err != nil {
		// The script may have run all the same (see updateToken).
		s.sessionWritten(key, false)
		return false, err
	}
	if n, err := msg.AsInt64(); n != 1 || err != nil {
		return false, err
	}
	if s.viewHook != nil {
		s.viewHook()
	}
	if changed {
		recent = newRecent
	}
	r := recordOf(key)
	s.tracker.forgetSession(r)
	s.own.wroteStrings(r, l.raw, recent)
	s.own.changed(r.all())
	return true, nil
}

// viewCall is the call of view.lua, at the clock's ms now, for the
// session in key read as holding login and recent, writing seen and
// newRecent ("" to leave the recent items).
func (s *store) viewCall(now int64, key, login, recent, seen, newRecent string) batchCall {
	return batchCall{head: s.sessionArgs(now), keys: []string{key}, args: []string{login, recent, seen, newRecent}}
}

// withItem returns the recent items recent (as a session's recent field
// holds them: oldest first, each followed by "\n") with item added or
// moved last, keeping at most limit, as withItem in session.lua does;
// changed is false if they stay as they are: item is "" or their newest.
func withItem(recent, item string, limit int) (string, bool) {
	if item == "" || newest(recent) == item {
		return recent, false
	}
	var items []string
	if recent != "" {
		items = strings.Split(strings.TrimSuffix(recent, "\n"), "\n")
	}
	if i := slices.Index(items, item); i >= 0 {
		items = slices.Delete(items, i, i+1)
	}
	items = append(items[max(len(items)-(limit-1), 0):], item)
	return strings.Join(items, "\n") + "\n", true
}

//go:embed update.lua
var updateSrc string

var updateToken = sessionScript(updateSrc)

// UpdateToken implements driver.Store: on a single server one script,
// which also writes the indexes, or, for a visit of the session's own user
// within TouchEvery that the tracker's table holds, one call of view.lua
// (see viewed). It reads nothing first: a read would cost a round trip
// more than the script does (docs/performance.md). In a cluster the script
// runs on the session's slot, and the indexes, on slots of their own, are
// written in a second round trip when they change: the session index when
// the login was written (the session is new, changed user, or was last
// written TouchEvery ago), the user's when the session is new or changed
// user. So most calls leave the index's master alone, and a cluster
// spreads them. A call that changes a live session's user then reads the
// old user's last LogoutUser through the client-side cache.
func (s *store) UpdateToken(ctx context.Context, token, user, item string) error {
	was, err := s.updateToken(ctx, token, user, item)
	if was.user == "" {
		return err
	}
	// The call changed the user of a live session, which the script could
	// not tell was over: one that its old user logged out of everywhere
	// (the instant is under that user's key, which the script cannot name
	// beforehand). What such a session held is not the new user's: it
	// goes, and the call starts a new session instead. (A read of token in
	// the round trips between may still see what it held.) This is checked
	// even if the index writes after the script failed: the session has its
	// new user already, and a retry would not change it again.
	out, rerr := s.revoked(ctx, was.user, was.created)
	if !out || rerr != nil {
		return errors.Join(err, rerr)
	}
	if lerr := s.Logout(ctx, token); lerr != nil {
		return errors.Join(err, lerr)
	}
	_, err = s.updateToken(ctx, token, user, item)
	return err
}

// updateToken is UpdateToken's script and index writes. If the script
// changed the user of a live session, was is that session's login before,
// whether or not the index writes after it failed.
func (s *store) updateToken(ctx context.Context, token, user, item string) (was login, err error) {
	key := s.k.session(token)
	if ok, err := s.viewHeld(ctx, key, user, item); ok || err != nil {
		return login{}, err
	}
	// A session of user logged in before user's last LogoutUser is
	// absent: the script replaces it by a new one, as an expired one. (A
	// session of another user, this call logs in again.) On a single
	// server the script reads the instant itself; a cluster keeps it on
	// the user's slot, so it is read here, through the client-side cache.
	out := ""
	if s.cluster {
		var err error
		if out, err = s.loggedOutArg(ctx, user); err != nil {
			return login{}, err
		}
	}
	msg, err := s.runBatched(ctx, s.batches.update, updateToken, s.updateCall(key, token, user, item, out))
	reply, err := arrayOf(msg, err, 6)
	if err != nil {
		// The script may have run all the same (a call that gave up
		// waiting, say): until the cache has heard, read the server.
		s.sessionWritten(key, false)
		return login{}, err
	}
	s.sessionHolds(key, reply[1:3], true)
	u, err := updatedOf(reply)
	if err != nil {
		return login{}, err
	}
	if !u.fresh && u.replaced != "" {
		was, _ = parseLogin(u.replaced)
	}
	var more []call
	if u.fresh || u.replaced != "" {
		more = s.unindexDropped(token, u.replaced, user)
	}
	if !s.cluster {
		return was, s.send(ctx, more)
	}
	return was, s.indexUpdated(ctx, token, user, u, more)
}

// viewHeld writes, with view.lua (see viewed), UpdateToken's visit of the
// session in key by user, viewing item, if the tracker's table holds that
// session, of user, and user did not log out of it everywhere: the book's
// request calls CheckToken first, so the process can decide the visit
// without a round trip more. ok is false if nothing was written.
func (s *store) viewHeld(ctx context.Context, key, user, item string) (ok bool, err error) {
	e, held := s.tracker.session(recordOf(key))
	if !held || e.l.user != user {
		return false, nil
	}
	if revoked, err := s.revoked(ctx, user, e.l.created); revoked || err != nil {
		return false, err
	}
	return s.viewed(ctx, key, e.l, e.recent, item)
}

// updated is what update.lua answers for a call, but for the login and
// recent items.
type updated struct {
	fresh    bool   // the session is new
	cstamp   string // its created stamp
	replaced string // the login of the session it replaced or changed the user of; "" if none
	stamp    string // its stamp if the login was written (its index entry is due to move), else ""
}

func updatedOf(reply []rueidis.RedisMessage) (u updated, err error) {
	fresh, err1 := reply[0].AsInt64()
	cstamp, err2 := reply[3].ToString()
	replaced, _, err3 := optString(reply[4])
	stamp, _, err4 := optString(reply[5])
	return updated{fresh: fresh == 1, cstamp: cstamp, replaced: replaced, stamp: stamp}, errors.Join(err1, err2, err3, err4)
}

// indexUpdated writes, in a cluster, what an UpdateToken's script could not,
// as it lives on other slots: with the calls more, the user's index entry
// when the session is new or changed user, and the session index's entry
// when the login was written (so most calls leave the index's master
// alone). A login on a live session may then have to list it again (see
// relist).
func (s *store) indexUpdated(ctx context.Context, token, user string, u updated, more []call) error {
	if (u.fresh || u.replaced != "") && user != "" {
		more = append([]call{s.addUserCall(user, token, u.cstamp)}, more...)
	}
	switch {
	case u.stamp == "":
		if err := s.send(ctx, more); err != nil {
			return err
		}
	case u.fresh:
		e, err := strconv.ParseFloat(u.stamp, 64)
		if err != nil {
			return err
		}
		return s.indexNew(ctx, token, e, user, u.cstamp, more)
	default:
		// The session was live: its entry is only raised, never created
		// (see bumpCall), so that a Logout landing in between leaves none;
		// a failed raise is left to cleaning, which moves lagging entries
		// up.
		res := s.withDeferred(ctx, append([]call{s.bumpCall(token, u.stamp)}, more...)...)
		for _, r := range res[1:] {
			if err := r.Error(); err != nil {
				return err
			}
		}
	}
	if u.replaced == "" || user == "" {
		return nil
	}
	// A login on a live session wrote the user's index entry as a new
	// session does, and may have landed as late (see indexNew).
	v, found, err := s.loginOf(ctx, token)
	if !found || err != nil {
		return err
	}
	return s.relist(ctx, token, user, u.cstamp, v)
}

// updateCall is UpdateToken's call of update.lua for token's session, in
// key, with the instant of user's last LogoutUser read in a cluster (see
// UpdateToken).
func (s *store) updateCall(key, token, user, item, loggedOut string) batchCall {
	stamp, now := s.nextStamp()
	c := s.sessionCall(now, key, token, seenValue(stamp, now), user, item, loggedOut)
	if !s.cluster {
		c.keys = append(c.keys, s.k.user(user), s.k.loggedOut(user))
	}
	return c
}

// indexNew writes, in a cluster, the index entry of token's session, just
// created with stamp, with the calls more, then checks that the session
// still exists. A Logout or cleaning pass that deleted it before the entry
// was written found no entry to remove; the entry is then removed again,
// so that it is no stray. (One that deletes it after the check finds the
// entry, and removes it itself.) If the index's node fails, the entry is
// kept for later (deferred.go), and the user's index is checked all the
// same.
//
// more writes the session's entry in user's index too, with created stamp
// cstamp, unless user is "". That write replaces whatever entry token had
// there: landing late, after a Logout ended this session and another
// login under token wrote its own session's entry, it puts this session's
// back, which the Logout's removal, landing after it, then takes away,
// and the live session is listed nowhere. So the check reads the login,
// and lists again a session of user that token holds since (see relist).
func (s *store) indexNew(ctx context.Context, token string, stamp float64, user, cstamp string, more []call) error {
	res := s.withDeferred(ctx, append([]call{s.indexCall(token, stamp)}, more...)...)
	failed := res[0].Error() != nil
	if failed {
		// Kept whether or not the calls more failed too: the session
		// exists, whatever the caller is told.
		s.deferred.keep(map[string]float64{token: stamp})
	}
	for _, r := range res[1:] {
		if err := r.Error(); err != nil {
			return err
		}
	}
	if failed && user == "" {
		return nil
	}
	v, found, err := s.loginOf(ctx, token)
	if err != nil {
		return err
	}
	if !found {
		if failed {
			return nil // the kept entry, written later, is a stray that cleaning removes
		}
		return s.send(ctx, []call{s.unindexCall([]string{token, formatStamp(stamp)})})
	}
	return s.relist(ctx, token, user, cstamp, v)
}

// loginOf reads the login of token's session from the server; found is
// false if there is none.
func (s *store) loginOf(ctx context.Context, token string) (v string, found bool, err error) {
	v, err = s.c.Do(ctx, s.c.B().Hget().Key(s.k.session(token)).Field("login").Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "", false, nil
	}
	return v, err == nil, err
}

// relist follows a write of token's entry in user's index with created
// stamp cstamp (nothing to do if user is ""), given the login v that
// token's session held after it. If that is another session of user,
// created since, the write may have replaced its entry: the entry is
// written again with that session's created stamp, and the session read
// again, until a read after the last write finds the session it wrote.
// Sessions created after that read write their own entry after it, so that
// no write of this call lands after theirs.
func (s *store) relist(ctx context.Context, token, user, cstamp, v string) error {
	for user != "" {
		l, ok := parseLogin(v)
		if !ok || l.user != user || l.cstamp == cstamp {
			return nil
		}
		cstamp = l.cstamp
		if err := s.send(ctx, []call{s.addUserCall(user, token, cstamp)}); err != nil {
			return err
		}
		var found bool
		var err error
		if v, found, err = s.loginOf(ctx, token); !found || err != nil {
			return err
		}
	}
	return nil
}

// RecentItems implements driver.Store, reading the session through the
// client-side cache: with TouchEvery, it changes only on a new item or a
// touch.
func (s *store) RecentItems(ctx context.Context, token string) ([]string, error) {
	_, recent, live, err := s.liveSession(ctx, token)
	if !live || err != nil {
		return nil, err
	}
	return recentOf(recent), nil
}

// SessionCount implements driver.Store: the size of the index.
func (s *store) SessionCount(ctx context.Context) (int, error) {
	n, err := s.c.Do(ctx, s.c.B().Zcard().Key(s.k.index()).Build()).AsInt64()
	return int(n), err
}
