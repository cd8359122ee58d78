package rueidisbackend

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail/driver"
)

// A session is one hash on its own slot, session:{TOKEN} (see session.lua
// for its fields). Its login field holds "CREATED DEADLINE USER" and its
// seen field the last-seen stamp (see seenValue). CREATED is the stamp the
// session was created (or last logged in) with, formatted as createdField,
// followed by "+LIFE" if the session has a lifetime of its own (LIFE ms,
// see withLife; Lifetime stands for it below); DEADLINE is Unix ms by the
// Store's clock. A session is live at now iff
//
//	now < lastSeen + IdleTimeout  and  now < created + Lifetime.
//
// A refresh and a renewal copy CREATED as it is, so the session keeps its
// lifetime; a login writes a new one.
//
// DEADLINE is lastSeen + IdleTimeout as it was when the login was last
// written: a lower bound of the real idle deadline, since lastSeen only
// grows. A refresh rewrites the login only once TouchEvery has passed since
// it was written (DEADLINE - IdleTimeout); in between, a visit that views no
// new item writes nothing at all, so that the session's hash stays in the
// client-side cache and the visit costs no round trip (see quiet).
//
// The key's TTL follows from the same rule: a refresh that leaves DEADLINE
// alone happens within TouchEvery of the login's write, so the session
// cannot outlive keyEnd = min(DEADLINE + TouchEvery, created + Lifetime).
// Every write of the login sets the key's TTL to keyEnd - now + TTLSlack;
// other writes keep it.
//
// A user's index scores each token with its session's CREATED stamp rather
// than its creation time: stamps are unique within a process, so removing
// an entry "if it is still the one of the session just deleted" cannot
// remove the entry of a session created again under the same token in the
// same millisecond.

//go:embed session.lua
var sessionLua string

// statusLua defines the statuses the session scripts answer with.
var statusLua = fmt.Sprintf("local OK, NO_SESSION, EXISTS, FULL, TOO_MANY = %d, %d, %d, %d, %d\n",
	driver.OK, driver.NoSession, driver.Exists, driver.Full, driver.TooMany)

// sessionScript is a script that reads or writes sessions: session.lua's
// functions, then src.
func sessionScript(src string) *script { return newScript(statusLua + sessionLua + src) }

// login is the content of a session's login field.
type login struct {
	raw      string // the field as it was read
	created  int64  // Unix ms
	cstamp   string // the created stamp, as the user's index scores it
	deadline int64  // the coarse idle deadline, Unix ms
	user     string
	life     int64 // the session's own lifetime in ms, or 0 for the Store's
}

// withLife returns a created field for a session whose own lifetime is
// life ms: created itself if life is 0 (the Store's lifetime).
func withLife(created string, life int64) string {
	if life == 0 {
		return created
	}
	return created + "+" + i64(life)
}

// lifeOf returns the lifetime in ms of the session whose login is l.
func (s *store) lifeOf(l login) int64 {
	if l.life != 0 {
		return l.life
	}
	return s.life
}

// createdField formats a session's created stamp for its login field: the
// stamp, followed by "/MS" if the stamp is not within the millisecond the
// clock read (see nextStamp).
func createdField(stamp float64, now int64) string {
	if int64(math.Floor(stamp)) == now {
		return formatStamp(stamp)
	}
	return formatStamp(stamp) + "/" + i64(now)
}

// loginValue formats a login field.
func loginValue(created string, deadline int64, user string) string {
	return created + " " + i64(deadline) + " " + user
}

// parseLogin parses a login field; ok is false if it was not written
// by this version.
func parseLogin(v string) (l login, ok bool) {
	c, rest, ok1 := strings.Cut(v, " ")
	d, user, ok2 := strings.Cut(rest, " ")
	c, lf, own := strings.Cut(c, "+")
	st, ms, two := strings.Cut(c, "/")
	created, ok3 := stampFloor(st)
	deadline, err := strconv.ParseInt(d, 10, 64)
	if !ok1 || !ok2 || !ok3 || err != nil {
		return login{}, false
	}
	l = login{raw: v, created: created, cstamp: st, deadline: deadline, user: user}
	if own {
		if l.life, err = strconv.ParseInt(lf, 10, 64); err != nil || l.life <= 0 {
			return login{}, false
		}
	}
	if two {
		var err error
		if l.created, err = strconv.ParseInt(ms, 10, 64); err != nil {
			return login{}, false
		}
	}
	return l, true
}

// stampFloor returns the whole milliseconds of a stamp: for one as
// formatStamp writes it (digits, then perhaps a point and more digits) with
// at most 15 digits before the point, its integer part, read without
// converting the fraction, as CheckToken reads a login on every page view;
// for anything else, the floor of its value as a float. (Beyond 15 digits
// formatStamp's digits are the float's shortest form, not its value.)
func stampFloor(st string) (int64, bool) {
	whole, frac, point := strings.Cut(st, ".")
	if len(whole) <= 15 && digits(whole) && (!point || digits(frac)) {
		n, err := strconv.ParseInt(whole, 10, 64)
		return n, err == nil
	}
	f, err := strconv.ParseFloat(st, 64)
	return int64(math.Floor(f)), err == nil
}

// digits reports whether s is one or more ASCII digits.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// parseSeen parses a seen field's value (see seenValue) into its stamp and
// the last-seen time in Unix ms.
func parseSeen(v string) (stamp float64, lastSeen int64, ok bool) {
	st, ms, two := strings.Cut(v, " ")
	stamp, err := strconv.ParseFloat(st, 64)
	if err != nil {
		return 0, 0, false
	}
	if !two {
		return stamp, int64(math.Floor(stamp)), true
	}
	lastSeen, err = strconv.ParseInt(ms, 10, 64)
	return stamp, lastSeen, err == nil
}

// stampOf returns the stamp of a seen value, as the index holds it.
func stampOf(seen string) string {
	st, _, _ := strings.Cut(seen, " ")
	return st
}

// recentOf returns the recently viewed items of a session's recent field,
// newest first. The field holds the items oldest first, each followed by
// "\n" (items hold no control characters), so that a script adds or moves
// the newest and drops the oldest with plain string searches.
func recentOf(recent string) []string {
	if recent == "" {
		return nil
	}
	items := strings.Split(strings.TrimSuffix(recent, "\n"), "\n")
	slices.Reverse(items)
	return items
}

// sessionArgs returns the arguments every session script starts with (see
// settings in session.lua): the clock's ms, the idle timeout, TouchEvery,
// the lifetime and the TTL slack; then extra.
func (s *store) sessionArgs(now int64, extra ...string) []string {
	args := make([]string, 0, 5+len(extra))
	args = append(args, i64(now), s.idleArg, s.touchArg, s.lifeArg, s.slackArg)
	return append(args, extra...)
}

// cachedSession reads the login and recent items of token's session from
// the tracker's table (see sessiontable.go) or through the client-side
// cache: HMGET key login recent, which changes only when the session is
// written. found is false if there is no session.
func (s *store) cachedSession(ctx context.Context, key string) (l login, recent string, found bool, err error) {
	r := recordOf(key)
	if e, ok := s.tracker.session(r); ok {
		s.hits.Add(1)
		return e.l, e.recent, true, nil
	}
	if e, found, ok, err := s.tracker.readSession(ctx, key, r); ok {
		s.misses.Add(1)
		return e.l, e.recent, found, err
	}
	msg, err := s.cachedRead(ctx, r, s.c.B().Hmget().Key(key).Field("login", "recent").Cache(),
		func() rueidis.Completed { return s.c.B().Hmget().Key(key).Field("login", "recent").Build() })
	if err != nil {
		return login{}, "", false, err
	}
	f, err := msg.ToArray()
	if err != nil {
		return login{}, "", false, err
	}
	e, found, err := sessionEntryOf(f)
	return e.l, e.recent, found, err
}

// sessionEntryOf parses a reply to HMGET key login recent into a table
// entry (but for its until); found is false if there is no session, or
// one this version did not write.
func sessionEntryOf(f []rueidis.RedisMessage) (e sessionEntry, found bool, err error) {
	if len(f) != 2 {
		return sessionEntry{}, false, errShortReply
	}
	v, ok, err := optString(f[0])
	if !ok || err != nil {
		return sessionEntry{}, false, err
	}
	if e.l, ok = parseLogin(v); !ok {
		return sessionEntry{}, false, nil // not written by this version: no session
	}
	if e.recent, _, err = optString(f[1]); err != nil {
		return sessionEntry{}, false, err
	}
	e.bytes = sessionEntryBytes + len(v) + len(e.recent)
	return e, true, nil
}

// cachedFields reads all of the session's hash (its cart and values among
// them) through the client-side cache.
func (s *store) cachedFields(ctx context.Context, key string) (map[string]string, error) {
	msg, err := s.cachedRead(ctx, recordOf(key).all(), s.c.B().Hgetall().Key(key).Cache(),
		func() rueidis.Completed { return s.c.B().Hgetall().Key(key).Build() })
	if err != nil {
		return nil, err
	}
	return msg.AsStrMap()
}

// sessionWritten records that this process wrote the session in key (or
// deleted it), so that its reads go to the server until the client-side
// cache has heard (see ownWrites).
func (s *store) sessionWritten(key string, deleted bool) {
	hmget := recordOf(key)
	s.tracker.forgetSession(hmget)
	for _, r := range []record{hmget, hmget.all()} {
		if deleted {
			s.own.deleted(r)
		} else {
			s.own.changed(r)
		}
	}
}

// cartOrValuesWritten records that this process wrote (or may have written)
// the cart or the values of the session in key: until the client-side
// cache has heard, Cart and Value read the session's hash from the server.
// The login and recent items stay, and so do their cached reads and the
// tracker's table.
func (s *store) cartOrValuesWritten(key string) { s.own.changed(recordOf(key).all()) }

// sessionHolds records that the session in key holds the login and
// recent items view (as HMGET key login recent answers), as a script that
// read or wrote it answered, and, if wrote, that its other fields may have
// changed too (see ownWrites).
func (s *store) sessionHolds(key string, view []rueidis.RedisMessage, wrote bool) {
	r := recordOf(key)
	s.tracker.forgetSession(r)
	s.own.wroteArray(r, view)
	if wrote {
		s.own.changed(r.all())
	}
}

// liveSession reports whether token's session is live, and returns its
// login and recent items, read from process memory (see cachedSession and
// stillLive).
func (s *store) liveSession(ctx context.Context, token string) (l login, recent string, live bool, err error) {
	key := s.k.session(token)
	l, recent, found, err := s.cachedSession(ctx, key)
	if !found || err != nil {
		return login{}, "", false, err
	}
	if live, err := s.stillLive(ctx, token, key, l); !live || err != nil {
		return login{}, "", false, err
	}
	return l, recent, true, nil
}

// liveFields returns all of token's session hash, read through the
// client-side cache, or nil if the session is not live (see stillLive):
// one cached read for the cart and the values, which the hash holds beside
// the login.
func (s *store) liveFields(ctx context.Context, token string) (map[string]string, error) {
	key := s.k.session(token)
	fields, err := s.cachedFields(ctx, key)
	if err != nil {
		return nil, err
	}
	l, found := parseLogin(fields["login"])
	if !found {
		return nil, nil
	}
	if live, err := s.stillLive(ctx, token, key, l); !live || err != nil {
		return nil, err
	}
	return fields, nil
}

// stillLive reports whether the session in key, whose login l was read
// through the client-side cache, is live: before the login's coarse
// deadline the session is surely live (within its lifetime), and only past
// it is the exact last-seen time read from the server. A session its user
// logged out of everywhere is not live, and goes (see endIfRevoked).
func (s *store) stillLive(ctx context.Context, token, key string, l login) (bool, error) {
	now := s.nowMs()
	if now >= l.created+s.lifeOf(l) {
		return false, nil
	}
	if now >= l.deadline {
		seen, err := s.c.Do(ctx, s.c.B().Hget().Key(key).Field("seen").Build()).ToString()
		if rueidis.IsRedisNil(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if _, last, ok := parseSeen(seen); !ok || !s.live(now, l.created, s.lifeOf(l), last) {
			return false, nil
		}
	}
	if out, err := s.endIfRevoked(ctx, token, l.user, l.created); out || err != nil {
		return false, err
	}
	return true, nil
}

// sessionInfo is a session's state as its login and seen fields hold it.
type sessionInfo struct {
	user              string
	created, lastSeen int64
	life              int64 // its own lifetime in ms, or 0 for the Store's
	label             string
}

// infoFrom parses a reply to HMGET key login seen label; ok is false if
// there is no session.
func infoFrom(r rueidis.RedisResult) (sessionInfo, bool, error) {
	f, err := r.ToArray()
	if err != nil {
		return sessionInfo{}, false, err
	}
	if len(f) != 3 {
		return sessionInfo{}, false, errShortReply
	}
	v, ok, err := optString(f[0])
	if !ok || err != nil {
		return sessionInfo{}, false, err
	}
	l, ok := parseLogin(v)
	if !ok {
		return sessionInfo{}, false, nil
	}
	info := sessionInfo{user: l.user, created: l.created, lastSeen: l.created, life: l.life}
	sv, ok, err := optString(f[1])
	if err != nil {
		return sessionInfo{}, false, err
	}
	if _, last, parsed := parseSeen(sv); ok && parsed {
		info.lastSeen = last
	}
	if info.label, _, err = optString(f[2]); err != nil {
		return sessionInfo{}, false, err
	}
	return info, true, nil
}

// arrayOf reads a script's answer that is an array of n elements.
func arrayOf(msg rueidis.RedisMessage, err error, n int) ([]rueidis.RedisMessage, error) {
	if err != nil {
		return nil, err
	}
	a, err := msg.ToArray()
	if err == nil && len(a) != n {
		err = errShortReply
	}
	return a, err
}

// status reads the driver.Status a session script answers with first.
func status(reply []rueidis.RedisMessage) (driver.Status, error) {
	if len(reply) == 0 {
		return 0, errShortReply
	}
	n, err := reply[0].AsInt64()
	return driver.Status(n), err
}

// optString reads a reply that is a string or nil.
func optString(m rueidis.RedisMessage) (string, bool, error) {
	if m.IsNil() {
		return "", false, nil
	}
	v, err := m.ToString()
	return v, err == nil, err
}

// live reports whether a session created at created, with its own
// lifetime life ms (0 for the Store's), and last seen at lastSeen is live
// at now.
func (s *store) live(now, created, life, lastSeen int64) bool {
	if life == 0 {
		life = s.life
	}
	return now < lastSeen+s.idle && now < created+life
}
