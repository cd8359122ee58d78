package rueidisbackend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
)

// In a cluster a session, the session index and the users' indexes
// live on different slots, so a call writes them in separate steps, and a
// master that fails before its replica received its last writes loses
// some steps but not the others (Redis replicates asynchronously). What
// that leaves:
//
//   - a session without its index entry, which SessionCount does not count
//     and CleanSessions never reads: lost with the index's master;
//   - a session missing from its user's index, which LogoutUser would not
//     end: lost with the user index's master;
//   - an index entry without a session: its removal, or the session's
//     creation, lost with the session's master;
//   - a user's logout instant without its bucket's mark (loggedout.go), so
//     that sessions the user's index missed outlive LogoutUser: the mark
//     lost with its master.
//
// RepairSessions finds and mends all four by reading every master; the
// SessionCleaner runs it every RepairEvery. Cleaning removes the third kind
// too, once an entry is among the oldest it reads.

// repairBatch is how many keys one SCAN step asks for, and so about how
// many sessions one round trip of a repair checks.
const repairBatch = 1000

// RepairSessions implements driver.Store. On a single server every call
// writes a session and its index entries in one script, so there is nothing
// to repair and it returns at once. In a cluster it first sends the index
// and view writes this process deferred while their node was unreachable
// (see deferred.go), then scans the sessions of every master and indexes
// each session that its index or its user's index misses, at the session's
// own stamps, and raises the mark of each user's logout instant it finds
// (see loggedout.go) if the mark is behind; then it scans the index and
// removes each entry that has had no session for longer than strayGrace.
// It returns how many entries and marks it wrote or removed, the deferred
// writes that created an entry included.
//
// A session deleted while the repair reads it may be indexed again; its
// entry is then a stray that the next repair or cleaning pass removes. A
// session that logs in again while the repair reads it may get its former
// created stamp back in its user's index; the entry still names it, so
// LogoutUser ends it, but its later logout leaves that entry for the
// index's lifetime pruning. Entries of users' indexes whose session is gone
// are left to that pruning too: they are never returned. Sessions whose
// reads fail, and masters that cannot be scanned, are skipped and the first
// error returned, after the others are repaired.
func (s *store) RepairSessions(ctx context.Context) (int, error) {
	if !s.cluster {
		return 0, nil
	}
	// What fails goes back to the buffer; an entry the buffer creates is
	// a session's lost entry mended, and counted as such.
	_, repaired := s.sendDeferred(ctx)
	masters, err := s.masters(ctx)
	if err != nil {
		return repaired, err
	}
	var errs []error
	for addr, node := range masters {
		n, err := s.repairNode(ctx, node)
		repaired += n
		if err != nil {
			errs = append(errs, fmt.Errorf("repairing the sessions on %s: %w", addr, err))
			if ctx.Err() != nil {
				return repaired, errors.Join(errs...)
			}
		}
		n, err = s.repairMarks(ctx, node)
		repaired += n
		if err != nil {
			errs = append(errs, fmt.Errorf("repairing the logout marks of the users on %s: %w", addr, err))
			if ctx.Err() != nil {
				return repaired, errors.Join(errs...)
			}
		}
	}
	n, err := s.removeStrays(ctx)
	repaired += n
	if err != nil {
		errs = append(errs, fmt.Errorf("removing stray index entries: %w", err))
	}
	return repaired, errors.Join(errs...)
}

// masters returns a client for each master of the cluster, as the
// cluster's slot map (CLUSTER SLOTS, which needs no admin rights, unlike
// ROLE) names them.
func (s *store) masters(ctx context.Context) (map[string]rueidis.Client, error) {
	// Asked of each node in turn: the client may still know a node that
	// failed.
	nodes := s.c.Nodes()
	var ranges []rueidis.RedisMessage
	var errs []error
	for _, node := range nodes {
		r, err := node.Do(ctx, node.B().ClusterSlots().Build()).ToArray()
		if err == nil {
			ranges, errs = r, nil
			break
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	masters := map[string]rueidis.Client{}
	for _, r := range ranges {
		// [start, end, [host, port, id, ...] of the master, replicas...]
		f, err := r.ToArray()
		if err != nil || len(f) < 3 {
			return nil, errShortReply
		}
		m, err := f[2].ToArray()
		if err != nil || len(m) < 2 {
			return nil, errShortReply
		}
		host, _ := m[0].ToString()
		port, err := m[1].AsInt64()
		if err != nil {
			return nil, errShortReply
		}
		addr := net.JoinHostPort(host, strconv.FormatInt(port, 10))
		node, ok := nodes[addr]
		if !ok {
			return nil, fmt.Errorf("the master %s that CLUSTER SLOTS names is not among the client's nodes yet", addr)
		}
		masters[addr] = node
	}
	return masters, nil
}

// scanRepair scans the keys of one master that start with the prefix
// and then from and have type typ, and passes each batch to repair. A
// batch that fails does not stop the scan: its error is returned, the
// first one, after the others are repaired.
func (s *store) scanRepair(ctx context.Context, node rueidis.Client, from, typ string, repair func([]string) (int, error)) (int, error) {
	pattern := globEscape.Replace(s.k.prefix+from) + "*"
	repaired := 0
	var firstErr error // of a batch; the scan goes on
	var cursor uint64
	for {
		e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(pattern).Count(repairBatch).Type(typ).Build()).AsScanEntry()
		if err != nil {
			return repaired, err
		}
		n, err := repair(e.Elements)
		repaired += n
		if err != nil && ctx.Err() != nil {
			return repaired, err
		}
		if firstErr == nil {
			firstErr = err
		}
		if cursor = e.Cursor; cursor == 0 {
			return repaired, firstErr
		}
	}
}

// repairNode scans the sessions of one master and repairs the indexes of
// the sessions they name.
func (s *store) repairNode(ctx context.Context, node rueidis.Client) (int, error) {
	return s.scanRepair(ctx, node, "session:{", "hash", func(keys []string) (int, error) {
		tokens := make([]string, 0, len(keys))
		for _, key := range keys {
			if token, ok := s.k.tokenOf(key); ok {
				tokens = append(tokens, token)
			}
		}
		return s.repairSessions(ctx, tokens)
	})
}

// repairMarks scans the users' logout instants on one master and raises
// each user's mark to the instant, for as long as the instant has to live,
// where the mark is behind.
func (s *store) repairMarks(ctx context.Context, node rueidis.Client) (int, error) {
	return s.scanRepair(ctx, node, "loggedout:{", "string", func(keys []string) (int, error) {
		var users []string
		reads := make(rueidis.Commands, 0, 2*len(keys))
		for _, key := range keys {
			if user, ok := s.k.userOfLoggedOut(key); ok {
				users = append(users, user)
				reads = append(reads, node.B().Get().Key(key).Build(), node.B().Pttl().Key(key).Build())
			}
		}
		if len(users) == 0 {
			return 0, nil
		}
		res := node.DoMulti(ctx, reads...)
		var calls []call
		var marked []string // the users of calls
		for i, user := range users {
			at, found, err := loggedOutAt(res[2*i])
			if err != nil {
				return 0, err
			}
			ttl, err := res[2*i+1].AsInt64()
			if err != nil {
				return 0, err
			}
			if found && ttl > 0 { // gone since the scan, or without a TTL: not one LogoutUser wrote
				calls = append(calls, s.raiseMarkCall(user, at, ttl))
				marked = append(marked, user)
			}
		}
		raised := 0
		var firstErr error
		for i, r := range s.do(ctx, calls...) {
			s.markWritten(logoutBucket(marked[i]))
			n, err := r.AsInt64()
			raised += int(n)
			if firstErr == nil {
				firstErr = err
			}
		}
		return raised, firstErr
	})
}

// globEscape escapes the characters that SCAN's MATCH patterns give a
// meaning to, so that a prefix matches itself.
var globEscape = strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`)

// repairSessions indexes each of the sessions of tokens that the session
// index or its user's index misses. A session whose reads fail is skipped
// and the first error returned, after the others are mended.
func (s *store) repairSessions(ctx context.Context, tokens []string) (int, error) {
	if len(tokens) == 0 {
		return 0, nil
	}
	// Each session's login and seen, and the scores of all in the index.
	calls := make([]call, 0, len(tokens)+1)
	for _, t := range tokens {
		calls = append(calls, call{cmd: s.c.B().Hmget().Key(s.k.session(t)).Field("login", "seen").Build()})
	}
	calls = append(calls, call{cmd: s.c.B().Zmscore().Key(s.k.index()).Member(tokens...).Build()})
	res := s.do(ctx, calls...)
	scores, err := res[len(tokens)].ToArray()
	if err == nil && len(scores) != len(tokens) {
		err = errShortReply
	}
	if err != nil {
		return 0, err
	}
	var errs []error
	var fix []call
	byUser := map[string][]int{} // user -> positions in tokens of its sessions
	logins := make([]login, len(tokens))
	now := s.nowMs()
	for i, t := range tokens {
		f, err := res[i].ToArray()
		if err == nil && len(f) != 2 {
			err = errShortReply
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		lv, okLogin, err1 := optString(f[0])
		sv, okSeen, err2 := optString(f[1])
		if err := errors.Join(err1, err2); err != nil {
			errs = append(errs, err)
			continue
		}
		l, parsed := parseLogin(lv)
		stamp, _, seenParsed := parseSeen(sv)
		if !okLogin || !okSeen || !parsed || !seenParsed {
			continue // gone since the scan, or not a session of this layout
		}
		if scores[i].IsNil() {
			fix = append(fix, s.indexCall(t, stamp))
		}
		// A user's index drops the sessions past their lifetime as soon
		// as it is written (see indexUser), so those are not mended.
		if l.user != "" && l.created+s.lifeOf(l) > now {
			logins[i] = l
			byUser[l.user] = append(byUser[l.user], i)
		}
	}
	// Each user's index's entries for its sessions found.
	users := make([]string, 0, len(byUser))
	calls = calls[:0]
	for u, at := range byUser {
		users = append(users, u)
		calls = append(calls, s.scoresCall(s.k.user(u), tokens, at))
	}
	for j, r := range s.do(ctx, calls...) {
		got, err := r.ToArray()
		at := byUser[users[j]]
		if err == nil && len(got) != len(at) {
			err = errShortReply
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for k, i := range at {
			c, err := got[k].AsFloat64()
			if want, _ := strconv.ParseFloat(logins[i].cstamp, 64); got[k].IsNil() || err != nil || c != want {
				fix = append(fix, s.addUserCall(users[j], tokens[i], logins[i].cstamp))
			}
		}
	}
	fixed := 0
	for _, r := range s.do(ctx, fix...) {
		if err := r.Error(); err != nil {
			errs = append(errs, err)
		} else {
			fixed++
		}
	}
	if len(errs) > 0 {
		return fixed, errs[0]
	}
	return fixed, nil
}

// scoresCall reads the scores in the sorted set key of the tokens at the
// positions at.
func (s *store) scoresCall(key string, tokens []string, at []int) call {
	members := make([]string, len(at))
	for j, i := range at {
		members[j] = tokens[i]
	}
	return call{cmd: s.c.B().Zmscore().Key(key).Member(members...).Build()}
}

// removeStrays scans the session index and removes, with reindex, each
// entry older than strayGrace whose session is gone, unless it
// changed since the scan read it.
func (s *store) removeStrays(ctx context.Context) (int, error) {
	bound := float64(s.nowMs() - strayGrace.Milliseconds())
	index := s.k.index()
	removed := 0
	var cursor uint64
	for {
		e, err := s.c.Do(ctx, s.c.B().Zscan().Key(index).Cursor(cursor).Count(repairBatch).Build()).AsScanEntry()
		if err != nil {
			return removed, err
		}
		var tokens, stamps []string
		var calls []call
		for i := 0; i+1 < len(e.Elements); i += 2 {
			if f, err := strconv.ParseFloat(e.Elements[i+1], 64); err != nil || f >= bound {
				continue
			}
			tokens = append(tokens, e.Elements[i])
			stamps = append(stamps, e.Elements[i+1])
			calls = append(calls, call{cmd: s.c.B().Exists().Key(s.k.session(e.Elements[i])).Build()})
		}
		var settle []string
		for i, r := range s.do(ctx, calls...) {
			n, err := r.AsInt64()
			if err != nil {
				return removed, err
			}
			if n == 0 {
				settle = append(settle, tokens[i], stamps[i], "")
			}
		}
		if len(settle) > 0 {
			n, err := s.do(ctx, s.scriptCall(reindex, []string{index}, settle))[0].AsInt64()
			removed += int(n)
			if err != nil {
				return removed, err
			}
		}
		if cursor = e.Cursor; cursor == 0 {
			return removed, nil
		}
	}
}
