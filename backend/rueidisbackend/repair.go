package rueidisbackend

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
)

// In a cluster a session's keys, the session index and the users' indexes
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
//     creation, lost with the session's master.
//
// RepairSessions finds and mends all three by reading every master; the
// SessionCleaner runs it every RepairEvery. Cleaning removes the third kind
// too, once an entry is among the oldest it reads.

// repairBatch is how many keys one SCAN step asks for, and so about how
// many sessions one round trip of a repair checks.
const repairBatch = 1000

// RepairSessions implements driver.Repairer. On a single server every call
// writes a session and its index entries in one script, so there is nothing
// to repair and it returns at once. In a cluster it first sends the index
// and view writes this process deferred while their node was unreachable
// (see deferred.go), then scans the login keys of every master and indexes
// each session that its index or its user's index misses, at the session's
// own stamps; then it scans the index and removes each entry that has had
// no session for longer than strayGrace. It returns how many entries it
// found wrong: written, or removed unless their session came back.
//
// A session deleted while the repair reads it may be indexed again; its
// entry is then a stray that the next repair or cleaning pass removes. A
// master that cannot be read is skipped and its error returned, after the
// others are repaired.
func (s *store) RepairSessions(ctx context.Context) (int, error) {
	if !s.cluster {
		return 0, nil
	}
	if err := firstError(s.withDeferred(ctx)); err != nil {
		return 0, err
	}
	masters, errs := s.masters(ctx)
	repaired := 0
	for addr, node := range masters {
		n, err := s.repairNode(ctx, node)
		repaired += n
		if err != nil {
			errs = append(errs, fmt.Errorf("repairing the sessions on %s: %w", addr, err))
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

// firstError returns the first error among replies.
func firstError(replies []rueidis.RedisResult) error {
	for _, r := range replies {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}

// masters returns a client for each node of the cluster that says it is a
// master, and the errors of the nodes that did not answer.
func (s *store) masters(ctx context.Context) (map[string]rueidis.Client, []error) {
	masters := map[string]rueidis.Client{}
	var errs []error
	for addr, node := range s.c.Nodes() {
		role, err := node.Do(ctx, node.B().Role().Build()).ToArray()
		if err == nil && len(role) == 0 {
			err = errShortReply
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("ROLE on %s: %w", addr, err))
			continue
		}
		if r, _ := role[0].ToString(); r == "master" {
			masters[addr] = node
		}
	}
	return masters, errs
}

// repairNode scans the login keys of one master and repairs the indexes of
// the sessions they name.
func (s *store) repairNode(ctx context.Context, node rueidis.Client) (int, error) {
	pattern := s.k.prefix + loginKind + ":{*"
	repaired := 0
	var cursor uint64
	for {
		e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(pattern).Count(repairBatch).Type("string").Build()).AsScanEntry()
		if err != nil {
			return repaired, err
		}
		tokens := make([]string, 0, len(e.Elements))
		for _, key := range e.Elements {
			if token, ok := s.k.tokenOf(key); ok {
				tokens = append(tokens, token)
			}
		}
		n, err := s.repairSessions(ctx, tokens)
		repaired += n
		if err != nil {
			return repaired, err
		}
		if cursor = e.Cursor; cursor == 0 {
			return repaired, nil
		}
	}
}

// repairSessions indexes each of the sessions of tokens that the session
// index or its user's index misses.
func (s *store) repairSessions(ctx context.Context, tokens []string) (int, error) {
	if len(tokens) == 0 {
		return 0, nil
	}
	// Each session's login and seen keys, and the index's scores of all.
	calls := make([]call, 0, 2*len(tokens)+1)
	for _, t := range tokens {
		ks := s.k.session(t)
		calls = append(calls, call{cmd: s.c.B().Get().Key(ks.login).Build()}, call{cmd: s.c.B().Get().Key(ks.seen).Build()})
	}
	calls = append(calls, call{cmd: s.c.B().Zmscore().Key(s.k.index()).Member(tokens...).Build()})
	res := s.do(ctx, calls...)
	scores, err := res[len(res)-1].ToArray()
	if err != nil {
		return 0, err
	}
	if len(scores) != len(tokens) {
		return 0, errShortReply
	}
	var fix []call
	byUser := map[string][]int{} // user -> positions in tokens of its sessions
	logins := make([]login, len(tokens))
	for i, t := range tokens {
		lv, okLogin, err := optString2(res[2*i])
		if err != nil {
			return 0, err
		}
		sv, okSeen, err := optString2(res[2*i+1])
		if err != nil {
			return 0, err
		}
		l, parsed := parseLogin(lv)
		if !okLogin || !okSeen || !parsed {
			continue // gone since the scan, or not a session of this layout
		}
		stamp, err := strconv.ParseFloat(strings.Fields(sv)[0], 64)
		if err != nil {
			continue
		}
		if scores[i].IsNil() {
			fix = append(fix, s.indexCall(t, stamp))
		}
		if l.user != "" {
			logins[i] = l
			byUser[l.user] = append(byUser[l.user], i)
		}
	}
	// Each user's index's entries for its sessions found.
	users := make([]string, 0, len(byUser))
	calls = calls[:0]
	for u, at := range byUser {
		members := make([]string, len(at))
		for j, i := range at {
			members[j] = tokens[i]
		}
		users = append(users, u)
		calls = append(calls, call{cmd: s.c.B().Zmscore().Key(s.k.user(u)).Member(members...).Build()})
	}
	for j, r := range s.do(ctx, calls...) {
		got, err := r.ToArray()
		if err != nil {
			return 0, err
		}
		at := byUser[users[j]]
		if len(got) != len(at) {
			return 0, errShortReply
		}
		for k, i := range at {
			c, err := got[k].AsFloat64()
			if want, _ := strconv.ParseFloat(logins[i].cstamp, 64); got[k].IsNil() || err != nil || c != want {
				fix = append(fix, s.addUserCall(users[j], tokens[i], logins[i].cstamp))
			}
		}
	}
	return len(fix), s.send(ctx, fix)
}

// optString2 is optString over a reply.
func optString2(r rueidis.RedisResult) (string, bool, error) {
	m, err := r.ToMessage()
	if err != nil {
		if rueidis.IsRedisNil(err) {
			return "", false, nil
		}
		return "", false, err
	}
	return optString(m)
}

// removeStrays scans the session index and removes, with reindex, each
// entry older than strayGrace whose session has no login key.
func (s *store) removeStrays(ctx context.Context) (int, error) {
	bound := float64(s.nowMs() - strayGrace.Milliseconds())
	removed := 0
	var cursor uint64
	for {
		e, err := s.c.Do(ctx, s.c.B().Zscan().Key(s.k.index()).Cursor(cursor).Count(repairBatch).Build()).AsScanEntry()
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
			calls = append(calls, call{cmd: s.c.B().Exists().Key(s.k.sessionKey(loginKind, e.Elements[i])).Build()})
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
			if err := s.send(ctx, []call{s.scriptCall(reindex, []string{s.k.index()}, settle)}); err != nil {
				return removed, err
			}
			removed += len(settle) / 3
		}
		if cursor = e.Cursor; cursor == 0 {
			return removed, nil
		}
	}
}
