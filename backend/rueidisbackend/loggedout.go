package rueidisbackend

import (
	"context"
	"strconv"

	"github.com/redis/rueidis"
)

// Log out everywhere does not rest on the user's index alone. A session
// that the index misses, because a RenewSession or StartSession indexed it
// after LogoutUser read the index, or because a failover lost its entry,
// would otherwise outlive the call. So LogoutUser first records, in the
// user's loggedOut key, the millisecond it began in, and every call that
// finds a session of that user logged in at or before it (its created ms,
// which a login resets and a renewal keeps) treats the session as absent.
//
// The key sits on the user's slot beside the index, so that recording the
// instant and reading the index are one step. It changes only when the user
// logs out everywhere, so reads of it are served from the client-side
// cache; a process that did not write it sees it within the cache's
// invalidation delay. It expires at least a lifetime (plus the TTL slack)
// after it was written: by then every session it ends has expired anyway.
//
// Most users never log out everywhere, and in a busy shop few of their
// loggedOut keys stay in the client-side cache, so that reading the key on
// every call would cost a round trip on most. So LogoutUser first raises
// the mark of the user's bucket, one of logoutBuckets that a hash of the
// user picks: the latest instant any user of the bucket logged out
// everywhere at. A session logged in after its user's mark was not logged
// out everywhere, and only the others read the user's key. The marks are
// few and change only with a LogoutUser, so they stay in the cache; a
// LogoutUser invalidates the cached copies of its mark as it does those of
// the user's key. A mark only rises, and its TTL only grows, so it outlives
// every user key of its bucket. (In a cluster, UpdateToken passes its
// script the user's instant whenever the bucket has a mark, see
// loggedOutArg.)
//
// The marks add a key that must survive for a logout everywhere to reach
// the sessions the index missed. A LogoutUser made by a release before the
// marks raises none, and a mark can be evicted, or lost in a failover of a
// cluster (on a single server the replica has it if it has the user's key,
// written after it): the sessions that index missed then stay, for this
// release, until they end, a later LogoutUser of their bucket raises its
// mark past them, or RepairSessions raises it again from the users'
// instants it finds (repair.go).
//
// So in a cluster a logged-in session needs the node of its user's mark,
// and, once its user's bucket has a mark, the node of its user's key.
// While one of those is unreachable and the key is not in the client-side
// cache, the session's calls fail (with the caller's deadline) rather than
// risk serving a session its user logged out of.

// loggedOut is the key of the instant of user's last LogoutUser, Unix ms.
func (k keys) loggedOut(user string) string { return k.prefix + "loggedout:{" + tag(user) + "}" }

// logoutBuckets is how many logout marks the users are spread over: enough
// that one LogoutUser sends few other users' sessions to their own keys,
// few enough that every process keeps them all in its cache.
const logoutBuckets = 1024

// logoutBucket is the bucket of user's logout mark.
func logoutBucket(user string) int {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(user); i++ {
		h = (h ^ uint32(user[i])) * 16777619
	}
	return int(h % logoutBuckets)
}

// logoutMark is the key of the mark of bucket b: the latest instant, Unix
// ms, at which a user of the bucket logged out everywhere.
func (k keys) logoutMark(b int) string { return k.prefix + "logoutmark:{" + itoa(b) + "}" }

// raiseMark raises a logout mark to now, unless it is later already, and
// its TTL to the one given, unless it is longer already: a Store with a
// shorter Lifetime must not shorten what another's LogoutUser recorded.
//
// KEYS: the mark. ARGV: now (Unix ms), the key's TTL in ms.
// It answers 1 if it raised the mark, 0 if the mark was there already.
var raiseMark = newScript(`
local now, old = tonumber(ARGV[1]), tonumber(redis.call('GET', KEYS[1]))
local raised = 1
if old and old >= now then now, raised = old, 0 end
local ttl = math.max(tonumber(ARGV[2]), redis.call('PTTL', KEYS[1]))
redis.call('SET', KEYS[1], string.format('%d', now), 'PX', ttl)
return raised
`)

// raiseMarkCall is the call of raiseMark that raises user's mark to at
// (Unix ms) with at least ttl ms to live.
func (s *store) raiseMarkCall(user string, at, ttl int64) call {
	return s.scriptCall(raiseMark, []string{s.k.logoutMark(logoutBucket(user))}, []string{i64(at), i64(ttl)})
}

// userOfLoggedOut returns the user whose loggedOut key is key; ok is false
// if key is no such key of this prefix.
func (k keys) userOfLoggedOut(key string) (user string, ok bool) { return k.tagOf(key, "loggedout") }

// logoutEverywhere records that the user's sessions logged in at or before
// now are over, keeping a later instant already recorded (and a longer
// TTL, as raiseMark does), and returns the user's index and the instant
// recorded before, if any: {{token, created stamp, token, created
// stamp...}, before or false}. The sessions logged in at or before the one
// before were over already.
//
// KEYS: the user's loggedOut key, the user's index. ARGV: now (Unix ms),
// the key's TTL in ms.
var logoutEverywhere = newScript(`
local now, before = tonumber(ARGV[1]), redis.call('GET', KEYS[1])
local at = tonumber(before)
if not at or at < now then at = now end
local ttl = math.max(tonumber(ARGV[2]), redis.call('PTTL', KEYS[1]))
redis.call('SET', KEYS[1], string.format('%d', at), 'PX', ttl)
return {redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES'), before}
`)

// revoked reports whether a session of user created at the created ms is
// over because user logged out everywhere at or after that instant.
func (s *store) revoked(ctx context.Context, user string, created int64) (bool, error) {
	if user == "" {
		return false, nil
	}
	if marked, err := s.marked(ctx, user, created); !marked || err != nil {
		return false, err
	}
	v, ok, err := s.cachedString(ctx, s.k.loggedOut(user))
	if !ok || err != nil {
		return false, err
	}
	at, err := strconv.ParseInt(v, 10, 64)
	return err == nil && created <= at, nil
}

// marked reports whether a user of user's bucket logged out everywhere at
// or after the created ms (see logoutMark): only then may user have.
func (s *store) marked(ctx context.Context, user string, created int64) (bool, error) {
	at, err := s.mark(ctx, logoutBucket(user))
	return created <= at, err
}

// mark returns the logout mark of bucket b, noMark if it has none, from
// the tracker's table of marks (see tracker.go), or else through the
// client-side cache.
func (s *store) mark(ctx context.Context, b int) (int64, error) {
	if at, ok := s.tracker.mark(b); ok {
		s.hits.Add(1)
		return at, nil
	}
	if at, ok := s.tracker.readMark(ctx, b); ok {
		s.misses.Add(1)
		return at, nil
	}
	v, ok, err := s.cachedString(ctx, s.k.logoutMark(b))
	if !ok || err != nil {
		return noMark, err
	}
	return parseMark(v), nil
}

// markWritten records that this process raised bucket b's mark, so that
// it reads the mark from the server until its cache and its table have
// heard (see ownWrites).
func (s *store) markWritten(b int) {
	s.own.changed(recordOf(s.k.logoutMark(b)))
	s.tracker.forgetMark(b)
}

// loggedOutArg is the instant of user's last LogoutUser, in Unix ms, as a
// script takes it in a cluster, read through the client-side cache: "" if
// there was none (or user is "").
func (s *store) loggedOutArg(ctx context.Context, user string) (string, error) {
	if user == "" {
		return "", nil
	}
	// No mark: no session of the bucket's users is to end (see
	// logoutMark).
	if at, err := s.mark(ctx, logoutBucket(user)); at == noMark || err != nil {
		return "", err
	}
	v, _, err := s.cachedString(ctx, s.k.loggedOut(user))
	return v, err
}

// endTokenIfRevoked reports whether token names a session whose user
// logged out everywhere after it was logged in (see revoked), reading its
// login through the client-side cache, and if so ends it (see
// endIfRevoked). Every call treats such a session as absent: the reads and
// RenewSession ask before they act; UpdateToken's script, which reads the
// instant on a single server and is passed it in a cluster, replaces such
// a session; the cart and value writes ask after their script, which
// answers the session's user and login, and then report that there was no
// session.
func (s *store) endTokenIfRevoked(ctx context.Context, token string) (bool, error) {
	l, _, found, err := s.cachedSession(ctx, s.k.session(token))
	if !found || err != nil {
		return false, err
	}
	return s.endIfRevoked(ctx, token, l.user, l.created)
}

// endIfRevoked reports whether token's session, of user and logged in at
// the created ms, is revoked (see revoked), and if so ends it (Logout), as
// calls remove an expired session they meet: so that SessionCount stops
// counting it, whether or not the user's index found it.
func (s *store) endIfRevoked(ctx context.Context, token, user string, created int64) (bool, error) {
	out, err := s.revoked(ctx, user, created)
	if !out || err != nil {
		return false, err
	}
	return true, s.Logout(ctx, token)
}

// loggedOutAt parses a reply to GET of a user's loggedout key (read from the
// server by its callers, not the cache): ok is false if there is none.
func loggedOutAt(r rueidis.RedisResult) (at int64, ok bool, err error) {
	v, err := r.ToString()
	if rueidis.IsRedisNil(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	at, err = strconv.ParseInt(v, 10, 64)
	return at, err == nil, err
}
