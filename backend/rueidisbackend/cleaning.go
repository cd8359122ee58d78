package rueidisbackend

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"
)

// cleanBatch bounds the sessions one round of a pass reads and deletes, so
// that no script holds the server for long.
const cleanBatch = 1000

// CleanSessions implements driver.Store. Each round of the pass reads the
// oldest index entries with their stamps (as many as are idle-expired, or
// beyond the newest keep, whichever is more), deletes every session whose
// stamp is still the one read (on a single server, which reads no stamps:
// every session whose stamp is idle-expired or not above the newest entry
// the pass takes, see cleanSettle), then settles the index: entries of
// deleted sessions and old strays go, and entries that lag behind their
// session's stamp (a refresh moves the index only now and then, see
// refreshSession) are moved up to it, so that a later round reads the
// sessions in their true order. A session refreshed at any point after
// the read has a new stamp and survives; one created again after its key
// was deleted has a new stamp that the last step leaves alone. Sessions
// refreshed after the pass began have stamps above its start and are never
// read, nor deleted.
//
// Users' indexes are left alone: an entry there whose session is gone is
// never returned (UserSessions and LogoutUser check every session they
// find), and goes when UserSessions or LogoutUser reads it, when the user's
// next login comes more than a lifetime after it, or with the index's TTL.
// Settling them took a script a user (one call with a key a user on a single
// server) and the deleted sessions' logins, about a third of a pass's work
// on the server, to free some 50 bytes a session a lifetime early. The price
// is paid by UserSessions and LogoutUser, which read each entry they find,
// and then remove those of sessions gone: for a user who starts many
// sessions a day (a shared account, a client without cookies), the first
// such call after a pass costs in proportion to the sessions the pass
// removed, not to the live ones.
//
// On a single server one script deletes and settles a round, and the
// rounds are pipelined (see cleanOnServer). In a cluster, where sessions
// live on different slots, each session is deleted by a script of its own
// and the index is settled after (see cleanRound).
func (s *store) CleanSessions(ctx context.Context, keep, max int) (int, error) {
	start, now := s.nextStamp()
	if !s.cluster {
		return s.cleanOnServer(ctx, keep, max, start, now)
	}
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

// strayGrace is how old an index entry without a session must be before
// a pass removes it. In a cluster an update's index write can land a moment
// before its session write, so a young stray is an update in flight; an old
// one was left by a write that failed, or by keys that expired by their TTL.
const strayGrace = time.Minute

// reindex settles index entries read by a pass: each whose stamp is still
// the one read is removed (new stamp "") or moved to the new stamp. It
// answers how many it removed.
//
// KEYS: the index. ARGV: token, stamp read, new stamp triples.
var reindex = newScript(readsFirst + `
local tokens = {}
for i = 1, #ARGV, 3 do tokens[#tokens + 1] = ARGV[i] end
local stamps = zmscore(KEYS[1], tokens)
local gone, moved = {}, {}
for i, token in ipairs(tokens) do
  local new = ARGV[3 * i]
  if stamps[i] and tonumber(stamps[i]) == tonumber(ARGV[3 * i - 1]) then
    if new == '' then
      gone[#gone + 1] = token
    else
      moved[#moved + 1], moved[#moved + 2] = new, token
    end
  end
end
inChunks('ZADD', KEYS[1], moved)
inChunks('ZREM', KEYS[1], gone)
return #gone
`)

// cleanRound removes up to limit sessions of a cluster and reports whether
// it changed anything; a round that changed nothing ends the pass.
func (s *store) cleanRound(ctx context.Context, keep, limit int, start float64, now int64) (removed int, progress bool, err error) {
	idleBound := i64(now - s.idle + 1) // stamps below it are idle-expired
	entries, err := s.oldest(ctx, keep, limit, start, idleBound)
	if err != nil || len(entries) == 0 {
		return 0, false, err
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
	var settle []string
	add := func(e indexEntry, newStamp string) {
		settle = append(settle, e.token, e.stamp, newStamp)
	}
	for i, o := range outcome {
		switch {
		case o.code == cleanDeleted:
			removed++
			add(entries[i], "")
		case o.code == cleanNoSession && stale(stamps[i], start):
			// A stray index entry: nothing else would ever remove it, but
			// it was no session.
			add(entries[i], "")
		case o.code == cleanKept && o.stamp != "":
			add(entries[i], o.stamp)
		}
	}
	if len(settle) == 0 {
		return 0, false, nil
	}
	return removed, true, s.send(ctx, []call{s.scriptCall(reindex, []string{s.k.index()}, settle)})
}

// stale reports whether an index stamp is older than strayGrace before the
// pass's start.
func stale(stamp string, start float64) bool {
	f, err := strconv.ParseFloat(stamp, 64)
	return err == nil && f < start-float64(strayGrace.Milliseconds())
}

//go:embed clean.lua
var cleanSrc string

//go:embed settle.lua
var settleSrc string

// cleanLua defines the answers of clean.lua and settle.lua.
var cleanLua = fmt.Sprintf("local DELETED, NO_SESSION, LEFT, YOUNG = %d, %d, %d, %d\n",
	cleanDeleted, cleanNoSession, cleanLeft, cleanYoung)

var (
	cleanSessions = newScript(cleanLua + cleanSrc)
	cleanSettle   = newScript(cleanLua + settleSrc)
)

// cleanOnServer is CleanSessions on a single server. Its rounds are
// pipelined: after the first read of the index, each round trip carries the
// round's cleanSettle and the next round's read, which the server runs after
// the deletions it follows, so a pass of R rounds takes R + 1 round trips,
// not 2R. A read goes with deletions only once the server has run
// cleanSettle for this store: if it did not know the script, the deletions
// would be sent again as EVAL after the read had run, and the next round
// would read the entries just deleted. (A server that loses its scripts
// later, at a restart, can make that happen once, which only ends that pass
// early.)
//
// A round deletes the sessions it read whose stamps lie below the idle
// bound (they are expired) or at or below the reach: the stamp of the
// newest entry the whole pass may take, as the round's read found it
// (capped at the pass's start). A session with a stamp at or below the
// reach has an entry there too (an entry lags behind its session's stamp,
// never ahead), so it is one of the sessions the pass takes, whatever its
// entry lagged behind. Every entry the round read lies there too (unless
// the index changed between the read's commands), so a session not
// refreshed since the read is deleted, and the round needs no stamps from
// the index. Only the others, refreshed beyond the reach, are moved up.
// Without this, every session refreshed since its entry was last written
// would be read twice: once to move its entry up, once to delete it.
func (s *store) cleanOnServer(ctx context.Context, keep, max int, start float64, now int64) (int, error) {
	idle := now - s.idle + 1 // stamps below it are idle-expired
	idleBound := i64(idle)
	first := min(max, cleanBatch)
	entries, reach, readErr := s.oldestFrom(s.do(ctx, s.oldestCalls(keep, first, start, idleBound)...), keep, first)
	removed := 0
	read := false // whether to read without settling (see below)
	for {
		var calls []call
		settling := len(entries) > 0
		limit := 0 // the next round's, if its read goes in this round trip
		switch {
		case settling:
			calls = append(calls, s.settleCall(entries, reach, start, idle))
			if s.settleKnown.Load() {
				limit = min(max-removed-len(entries), cleanBatch)
			}
		case read:
			limit = min(max-removed, cleanBatch)
		}
		reading := 0
		if limit > 0 {
			readCalls := s.oldestCalls(keep, limit, start, idleBound)
			calls, reading = append(calls, readCalls...), len(readCalls)
		}
		if len(calls) == 0 {
			return removed, readErr
		}
		res := s.do(ctx, calls...)
		round := entries
		read, entries = false, nil
		progress := true
		if settling {
			n, p, err := s.settled(res[0], round)
			removed, progress = removed+n, p
			if err != nil {
				return removed, err
			}
			if !s.settleKnown.Load() {
				s.settleKnown.Store(true)
			}
		}
		switch {
		case progress && limit > 0:
			// A failed read ends the pass after this round.
			entries, reach, readErr = s.oldestFrom(res[len(res)-reading:], keep, limit)
		case progress && removed < max:
			// The next round was not read with this one (see above), or
			// was read assuming this one would remove all it read, but
			// this one moved some entries up instead: read it now.
			read = true
		}
	}
}

// settleCall is the cleanSettle of a round's entries, oldest first, with
// the reach the read answered; idle is the idle bound (see cleanOnServer).
func (s *store) settleCall(entries []indexEntry, reach string, start float64, idle int64) call {
	// The delete bound: the later of the idle bound and the reach, which
	// is below the pass's start unless the pass may take every entry below
	// it. Sessions at the reach go, as their entries are at or below it;
	// those at the idle bound or at the start stay: they are live, or were
	// refreshed as the pass began (by a process whose clock agrees with
	// this one's), and every entry read lies below the start.
	bound, at := i64(idle), "0"
	if r, err := strconv.ParseFloat(reach, 64); err == nil && r >= float64(idle) {
		bound, at = formatStamp(r), "1"
		if r >= start {
			bound, at = formatStamp(start), "0"
		}
	}
	args := make([]string, 3, 3+len(entries))
	args[0], args[1], args[2] = formatStamp(start-float64(strayGrace.Milliseconds())), bound, at
	keys := make([]string, 1, 1+len(entries))
	keys[0] = s.k.index()
	for _, e := range entries {
		keys = append(keys, s.k.session(e.token))
		args = append(args, e.token)
	}
	return s.scriptCall(cleanSettle, keys, args)
}

// settled reads the answer of a round's cleanSettle: how many sessions it
// removed, and whether it changed anything.
func (s *store) settled(r rueidis.RedisResult, entries []indexEntry) (removed int, progress bool, err error) {
	tokens := make([]string, len(entries))
	for i, e := range entries {
		tokens[i] = e.token
	}
	outcome, err := s.outcomes([]rueidis.RedisResult{r}, tokens)
	if err != nil {
		return 0, false, err
	}
	for _, o := range outcome {
		switch {
		case o.code == cleanDeleted:
			removed++
			progress = true
		case o.code == cleanNoSession, o.code == cleanKept && o.stamp != "":
			progress = true
		}
	}
	return removed, progress, nil
}

// The answers of clean.lua and settle.lua, one a session (clean.lua
// answers the stamp of a session kept instead of cleanKept).
const (
	cleanKept      = 0 // refreshed since the pass read it: left alone
	cleanDeleted   = 1 // deleted
	cleanNoSession = 2 // no session: an index entry that outlived it, or an update in flight
	cleanLeft      = 3 // cleanSettle only: a session kept whose entry was at its stamp already
	cleanYoung     = 4 // cleanSettle only: no session, and an entry too young to be a stray: left
)

// cleanOutcome is cleanSessions' answer for one session.
type cleanOutcome struct {
	code  int64
	stamp string // the stamp of a kept session
}

// deleteSessions runs clean.lua over the sessions, one call a session
// (they live on different slots), and returns its answer for each.
func (s *store) deleteSessions(ctx context.Context, tokens, stamps []string) ([]cleanOutcome, error) {
	calls := make([]call, len(tokens))
	for i, t := range tokens {
		calls[i] = s.scriptCall(cleanSessions, []string{s.k.session(t)}, stamps[i:i+1])
	}
	return s.outcomes(s.do(ctx, calls...), tokens)
}

// outcomes parses the answers of cleanSessions or cleanSettle for the
// sessions of tokens, noting the sessions deleted (see sessionWritten), or,
// if an answer cannot be read, that every one of them may have changed.
func (s *store) outcomes(replies []rueidis.RedisResult, tokens []string) (_ []cleanOutcome, err error) {
	defer func() {
		if err != nil {
			for _, t := range tokens {
				s.sessionWritten(s.k.session(t), false)
			}
		}
	}()
	out := make([]cleanOutcome, 0, len(tokens))
	for _, r := range replies {
		answers, err := r.ToArray()
		if err != nil {
			return nil, err
		}
		for _, a := range answers {
			if a.IsInt64() {
				code, _ := a.AsInt64()
				out = append(out, cleanOutcome{code: code})
				continue
			}
			stamp, err := a.ToString()
			if err != nil {
				return nil, err
			}
			out = append(out, cleanOutcome{code: cleanKept, stamp: stamp})
		}
	}
	if len(out) != len(tokens) {
		return nil, errShortReply
	}
	for i, o := range out {
		if o.code != cleanKept && o.code != cleanLeft {
			s.sessionWritten(s.k.session(tokens[i]), true)
		}
	}
	return out, nil
}
