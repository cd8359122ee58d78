package rueidisbackend

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// cleanBatch bounds the sessions one round of a pass reads and deletes, so
// that no script holds the server for long.
const cleanBatch = 1000

// CleanSessions implements driver.Store. Each round of the pass reads the
// oldest index entries with their stamps (as many as are idle-expired, or
// beyond the newest keep, whichever is more; from every part of the index
// if Options.Spread splits it, merged so that the parts give the entries
// one index would), deletes every session whose stamp is still the one
// read (one script per session in a cluster, where sessions live on
// different slots; one script for the round on a single server), then
// settles the index, each entry in the part it was read from: entries of
// deleted sessions and old strays go, and entries that lag behind their
// session's stamp (a refresh moves the index only now and then, see
// refreshSession) are moved up to it, so that the next round reads the
// sessions in their true order. A
// session refreshed at any point after the read has a new stamp and
// survives; one created again after its keys were deleted has a new stamp
// that the last step leaves alone. Sessions refreshed after the pass began
// have stamps above its start and are never read, nor deleted.
func (s *store) CleanSessions(ctx context.Context, keep, max int) (int, error) {
	start, now := s.nextStamp()
	removed := 0
	for removed < max {
		n, progress, err := s.cleanRound(ctx, keep, min(max-removed, cleanBatch), start, now)
		removed += n
		if err != nil || !progress {
			return removed, err
		}
	}
	return removed, nil
}

// strayGrace is how old an index entry without session keys must be before
// a pass removes it. In a cluster an update's index write can land a moment
// before its session write, so a young stray is an update in flight; an old
// one was left by a write that failed, or by keys that expired by their TTL.
const strayGrace = time.Minute

// reindex settles index entries read by a pass: each whose stamp is still
// the one read is removed (new stamp "") or moved to the new stamp. It
// answers how many it removed.
//
// KEYS: the index part the entries were read from. ARGV: token, stamp
// read, new stamp triples.
var reindex = newScript(`
local removed = 0
for i = 1, #ARGV, 3 do
  local s = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if s and tonumber(s) == tonumber(ARGV[i + 1]) then
    if ARGV[i + 2] == '' then
      removed = removed + redis.call('ZREM', KEYS[1], ARGV[i])
    else
      redis.call('ZADD', KEYS[1], ARGV[i + 2], ARGV[i])
    end
  end
end
return removed
`)

// cleanRound removes up to limit sessions and reports whether it changed
// anything; a round that changed nothing ends the pass.
func (s *store) cleanRound(ctx context.Context, keep, limit int, start float64, now int64) (removed int, progress bool, err error) {
	idleBound := i64(now - s.idle + 1) // stamps below it are idle-expired
	entries, err := s.oldest(ctx, keep, limit, start, idleBound)
	if err != nil || len(entries) == 0 {
		return 0, false, err
	}
	if !s.cluster {
		return s.cleanAt(ctx, entries, start)
	}
	tokens := make([]string, len(entries))
	stamps := make([]string, len(entries))
	for i, e := range entries {
		tokens[i], stamps[i] = e.token, e.stamp
	}
	outcome, err := s.deleteSessions(ctx, tokens, stamps)
	if err != nil {
		return 0, false, err
	}
	// The settles of each part of the index, in the order the parts come.
	settle := map[int][]string{}
	var parts []int
	add := func(e indexEntry, newStamp string) {
		if _, ok := settle[e.part]; !ok {
			parts = append(parts, e.part)
		}
		settle[e.part] = append(settle[e.part], e.token, e.stamp, newStamp)
	}
	var gone []ended
	for i, o := range outcome {
		switch {
		case o.code == cleanDeleted:
			removed++
			add(entries[i], "")
			if l, ok := parseLogin(o.extra); ok && l.user != "" {
				gone = append(gone, ended{token: tokens[i], user: l.user, cstamp: l.cstamp})
			}
		case o.code == cleanNoSession && stale(stamps[i], start):
			// A stray index entry: nothing else would ever remove it, but
			// it was no session.
			add(entries[i], "")
		case o.code == cleanKept && o.extra != "":
			add(entries[i], o.extra)
		}
	}
	if len(parts) == 0 {
		return 0, false, nil
	}
	calls := make([]call, 0, len(parts)+1)
	for _, p := range parts {
		calls = append(calls, s.scriptCall(reindex, []string{s.k.indexPart(p)}, settle[p]))
	}
	calls = append(calls, s.unindexEnded(gone)...)
	return removed, true, s.send(ctx, calls)
}

// stale reports whether an index stamp is older than strayGrace before the
// pass's start.
func stale(stamp string, start float64) bool {
	f, err := strconv.ParseFloat(stamp, 64)
	return err == nil && f < start-float64(strayGrace.Milliseconds())
}

// cleanSessions deletes each given session whose last-seen stamp is still
// the one the pass read from the index: a session refreshed since is kept.
// It answers, per session, a pair: cleanDeleted and the session's login
// (nil if it had none), cleanKept and the session's stamp, or
// cleanNoSession and nil (whatever was left of a session is deleted).
//
// KEYS: the keys of each session, in the order of sessionKeys.all. ARGV:
// the stamp read for each session.
var cleanSessions = newScript(`
local DELETED, KEPT, NO_SESSION = 1, 0, 2
local out = {}
for i = 1, #ARGV do
  local b = (i - 1) * 4
  local seen = redis.call('GET', KEYS[b + 2])
  local stamp = seen and string.match(seen, '^%S+')
  if stamp and tonumber(stamp) ~= tonumber(ARGV[i]) then
    out[#out + 1] = KEPT
    out[#out + 1] = stamp
  else
    local login = redis.call('GET', KEYS[b + 1])
    redis.call('DEL', KEYS[b + 1], KEYS[b + 2], KEYS[b + 3], KEYS[b + 4])
    out[#out + 1] = stamp and DELETED or NO_SESSION
    out[#out + 1] = stamp and login or false
  end
end
return out
`)

// cleanSettle is cleanSessions and reindex in one step, for a single server,
// where a script may write the sessions and the index together: each
// session whose stamp is still the one read is deleted with its index
// entry, the entry of one refreshed since is moved up to its stamp, and an
// entry without a session is removed if its stamp is below ARGV[1] (see
// stale). It answers as cleanSessions.
//
// KEYS: the index part the entries were read from, then the keys of each
// session in the order of sessionKeys.all. ARGV: the stray bound, then the token and the stamp read
// of each session.
var cleanSettle = newScript(`
local DELETED, KEPT, NO_SESSION = 1, 0, 2
local bound, n = tonumber(ARGV[1]), (#ARGV - 1) / 2
-- each calls cmd with key followed by args, at most 1000 at once.
local function each(cmd, key, args)
  for i = 1, #args, 1000 do
    if key then
      redis.call(cmd, key, unpack(args, i, math.min(i + 999, #args)))
    else
      redis.call(cmd, unpack(args, i, math.min(i + 999, #args)))
    end
  end
end
local logins, seens = {}, {}
for j = 1, n do
  logins[j], seens[j] = KEYS[4 * j - 2], KEYS[4 * j - 1]
end
logins, seens = redis.call('MGET', unpack(logins)), redis.call('MGET', unpack(seens))
local out, dels, unindexed = {}, {}, {}
for j = 1, n do
  local token, read = ARGV[2 * j], tonumber(ARGV[2 * j + 1])
  local stamp = seens[j] and string.match(seens[j], '^%S+')
  if stamp and tonumber(stamp) ~= read then
    redis.call('ZADD', KEYS[1], 'XX', 'GT', stamp, token)
    out[#out + 1] = KEPT
    out[#out + 1] = stamp
  else
    for k = 4 * j - 2, 4 * j + 1 do dels[#dels + 1] = KEYS[k] end
    if stamp or read < bound then unindexed[#unindexed + 1] = token end
    out[#out + 1] = stamp and DELETED or NO_SESSION
    out[#out + 1] = stamp and logins[j] or false
  end
end
each('DEL', nil, dels)
each('ZREM', KEYS[1], unindexed)
return out
`)

// cleanSettleParts is cleanSettle for an index split in parts: each
// session's entry is settled in the part it was read from.
//
// KEYS: for each session, the index part its entry was read from, then its
// keys in the order of sessionKeys.all. ARGV: as cleanSettle's.
var cleanSettleParts = newScript(`
local DELETED, KEPT, NO_SESSION = 1, 0, 2
local bound, n = tonumber(ARGV[1]), (#ARGV - 1) / 2
local logins, seens = {}, {}
for j = 1, n do
  logins[j], seens[j] = KEYS[5 * j - 3], KEYS[5 * j - 2]
end
logins, seens = redis.call('MGET', unpack(logins)), redis.call('MGET', unpack(seens))
local out, dels, unindexed, parts = {}, {}, {}, {}
for j = 1, n do
  local index, token, read = KEYS[5 * j - 4], ARGV[2 * j], tonumber(ARGV[2 * j + 1])
  local stamp = seens[j] and string.match(seens[j], '^%S+')
  if stamp and tonumber(stamp) ~= read then
    redis.call('ZADD', index, 'XX', 'GT', stamp, token)
    out[#out + 1] = KEPT
    out[#out + 1] = stamp
  else
    for k = 5 * j - 3, 5 * j do dels[#dels + 1] = KEYS[k] end
    if stamp or read < bound then
      if not unindexed[index] then
        unindexed[index] = {}
        parts[#parts + 1] = index
      end
      table.insert(unindexed[index], token)
    end
    out[#out + 1] = stamp and DELETED or NO_SESSION
    out[#out + 1] = stamp and logins[j] or false
  end
end
for i = 1, #dels, 1000 do
  redis.call('DEL', unpack(dels, i, math.min(i + 999, #dels)))
end
for _, index in ipairs(parts) do
  local tokens = unindexed[index]
  for i = 1, #tokens, 1000 do
    redis.call('ZREM', index, unpack(tokens, i, math.min(i + 999, #tokens)))
  end
end
return out
`)

// cleanAt is cleanRound's second step on a single server: one script
// deletes the sessions read and settles their index entries (in the parts
// they were read from, if Options.Spread splits the index), and one
// removes the deleted sessions from their users' indexes.
func (s *store) cleanAt(ctx context.Context, entries []indexEntry, start float64) (removed int, progress bool, err error) {
	tokens := make([]string, len(entries))
	stamps := make([]string, len(entries))
	args := make([]string, 1, 1+2*len(entries))
	args[0] = formatStamp(start - float64(strayGrace.Milliseconds()))
	sc, stride := cleanSettle, 4
	if s.k.spread > 1 {
		sc, stride = cleanSettleParts, 5
	}
	keys := make([]string, 0, 1+stride*len(entries))
	if s.k.spread == 1 {
		keys = append(keys, s.k.indexPart(0))
	}
	for i, e := range entries {
		tokens[i], stamps[i] = e.token, e.stamp
		if s.k.spread > 1 {
			keys = append(keys, s.k.indexPart(e.part))
		}
		keys = append(keys, s.k.session(e.token).all()...)
		args = append(args, e.token, e.stamp)
	}
	outcome, err := s.outcomes(s.do(ctx, s.scriptCall(sc, keys, args)), tokens)
	if err != nil {
		return 0, false, err
	}
	var gone []ended
	for i, o := range outcome {
		switch {
		case o.code == cleanDeleted:
			removed++
			if l, ok := parseLogin(o.extra); ok && l.user != "" {
				gone = append(gone, ended{token: tokens[i], user: l.user, cstamp: l.cstamp})
			}
			progress = true
		case o.code == cleanNoSession && stale(stamps[i], start), o.code == cleanKept:
			progress = true
		}
	}
	return removed, progress, s.send(ctx, s.unindexEnded(gone))
}

// cleanSessions' answers, one a session (the script's DELETED, KEPT and
// NO_SESSION).
const (
	cleanKept      = 0 // refreshed since the pass read it: left alone
	cleanDeleted   = 1 // deleted
	cleanNoSession = 2 // no session keys: an index entry that outlived them, or an update in flight
)

// cleanOutcome is cleanSessions' answer for one session.
type cleanOutcome struct {
	code  int64
	extra string // the login of a deleted session, the stamp of a kept one
}

// deleteSessions runs the cleanSessions script over the sessions and returns
// its answer for each.
func (s *store) deleteSessions(ctx context.Context, tokens, stamps []string) ([]cleanOutcome, error) {
	keysOf := make([]sessionKeys, len(tokens))
	for i, t := range tokens {
		keysOf[i] = s.k.session(t)
	}
	var replies []rueidis.RedisResult
	if s.cluster {
		calls := make([]call, len(tokens))
		for i := range tokens {
			calls[i] = s.scriptCall(cleanSessions, keysOf[i].all(), stamps[i:i+1])
		}
		replies = s.do(ctx, calls...)
	} else {
		all := make([]string, 0, 4*len(tokens))
		for _, ks := range keysOf {
			all = append(all, ks.all()...)
		}
		replies = s.do(ctx, s.scriptCall(cleanSessions, all, stamps))
	}
	return s.outcomes(replies, tokens)
}

// outcomes parses the answers of cleanSessions or cleanSettle for the
// sessions of tokens, noting the logins deleted.
func (s *store) outcomes(replies []rueidis.RedisResult, tokens []string) ([]cleanOutcome, error) {
	out := make([]cleanOutcome, 0, len(tokens))
	for _, r := range replies {
		pairs, err := r.ToArray()
		if err != nil {
			return nil, err
		}
		for j := 0; j+1 < len(pairs); j += 2 {
			code, err := pairs[j].AsInt64()
			if err != nil {
				return nil, err
			}
			extra, _, err := optString(pairs[j+1])
			if err != nil {
				return nil, err
			}
			out = append(out, cleanOutcome{code: code, extra: extra})
		}
	}
	if len(out) != len(tokens) {
		return nil, errShortReply
	}
	for i, o := range out {
		if o.code != cleanKept {
			s.own.deleted(s.k.sessionKey(loginKind, tokens[i]))
		}
	}
	return out, nil
}
