package rueidisbackend

import (
	"context"

	"github.com/retailkit/retail/internal/sessionid"
)

// SetRenewHook makes s run hook between the two steps of RenewSession (see
// renew.go); an error it returns fails the second step, as a crash or a
// lost connection would.
func SetRenewHook(s *Store, hook func() error) { s.d.renewHook = hook }

// SetBatchHook makes s run hook before it sends a batch of group-committed
// calls (see batch.go), with the batch's number of calls. It must be set
// before s is used.
func SetBatchHook(s *Store, hook func(calls int)) { s.d.batchHook = hook }

// SetViewHook makes hook run whenever view.lua wrote a visit of s.
func SetViewHook(s *Store, hook func()) { s.d.viewHook = hook }

// MaxInFlight is how many batches of one script are on their way at once.
const MaxInFlight = maxInFlight

// Queued returns how many group-committed calls of s wait to be sent.
func Queued(s *Store) int {
	n := 0
	for _, b := range []*batcher{s.d.batches.refresh, s.d.batches.update, s.d.batches.view, s.d.batches.cart} {
		if b != nil {
			b.mu.Lock()
			n += len(b.queue)
			b.mu.Unlock()
		}
	}
	return n
}

// Sending returns how many batches of group-committed calls of s are on
// their way.
func Sending(s *Store) int {
	n := 0
	for _, b := range []*batcher{s.d.batches.refresh, s.d.batches.update, s.d.batches.view, s.d.batches.cart} {
		if b != nil {
			b.mu.Lock()
			n += b.sending
			b.mu.Unlock()
		}
	}
	return n
}

// Settle runs one round's cleanSettle on the sessions of tokens, as if a
// pass that started now had read their entries and found reach (see
// cleanOnServer), and returns its answer for each: cleanDeleted,
// cleanNoSession, cleanLeft or cleanYoung as those numbers, or, for a
// session kept whose entry was moved up, the stamp it was moved to.
func Settle(s *Store, tokens []string, reach string) ([]any, error) {
	start, now := s.d.nextStamp()
	entries := make([]indexEntry, len(tokens))
	ids := make([]string, len(tokens))
	for i, t := range tokens {
		ids[i] = sessionid.Of(t)
		entries[i] = indexEntry{token: ids[i]}
	}
	outcome, err := s.d.outcomes(s.d.do(context.Background(), s.d.settleCall(entries, reach, start, now-s.d.idle+1)), ids)
	if err != nil {
		return nil, err
	}
	answers := make([]any, len(outcome))
	for i, o := range outcome {
		answers[i] = o.code
		if o.stamp != "" {
			answers[i] = o.stamp
		}
	}
	return answers, nil
}

// Settle's answers.
const (
	CleanDeleted   = cleanDeleted
	CleanNoSession = cleanNoSession
	CleanLeft      = cleanLeft
	CleanYoung     = cleanYoung
)

// LogoutMark is the key of the logout mark of user's bucket (see
// loggedout.go) under prefix.
func LogoutMark(prefix, user string) string { return newKeys(prefix).logoutMark(logoutBucket(user)) }

// RetryDeferredNow makes s send its buffered index writes with its next
// call that writes the index, without waiting out retryAfter.
func RetryDeferredNow(s *Store) { s.d.deferred.retry.Store(0) }

// MarkTracking returns the CLIENT ID of the connection that keeps s's table
// of logout marks fresh (see tracker.go), and whether it is tracking.
func MarkTracking(s *Store) (id int64, tracking bool) {
	t := s.d.tracker
	if t == nil {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.id, t.conn != nil
}

// MarkHeld reports whether s's table of logout marks holds the mark of
// user's bucket.
func MarkHeld(s *Store, user string) bool {
	_, ok := s.d.tracker.mark(logoutBucket(user))
	return ok
}

// SetMarkRedialHook makes s run hook before it dials its marks' tracking
// connection again.
func SetMarkRedialHook(s *Store, hook func()) {
	if s.d.tracker == nil {
		panic("SetMarkRedialHook: the Store has no table of marks")
	}
	s.d.tracker.mu.Lock()
	defer s.d.tracker.mu.Unlock()
	s.d.tracker.redialHook = hook
}

// MarkTrackingStopped reports whether s has stopped tracking its logout
// marks for good.
func MarkTrackingStopped(s *Store) bool {
	if s.d.tracker == nil {
		return true
	}
	select {
	case <-s.d.tracker.done:
		return true
	default:
		return false
	}
}

// WaitCleanups waits for the work s's calls left behind (see cleanups in
// store.go), as Close does, without closing s.
func WaitCleanups(s *Store) { s.d.cleanups.wg.Wait() }

// RunUnindex, RunUnindexUser, RunReindex and RunClearDropped send one call
// of the script of that name with args (see each), as the Store does.
func RunUnindex(s *Store, args ...string) error {
	return s.d.send(context.Background(), []call{s.d.unindexCall(args)})
}

func RunUnindexUser(s *Store, user string, args ...string) error {
	return s.d.send(context.Background(), []call{s.d.unindexUserCall(user, args)})
}

func RunReindex(s *Store, args ...string) error {
	return s.d.send(context.Background(), []call{s.d.scriptCall(reindex, []string{s.d.k.index()}, args)})
}

func RunClearDropped(s *Store, args ...string) error {
	return s.d.send(context.Background(), []call{s.d.scriptCall(clearDropped, []string{s.d.k.dropped()}, args)})
}

// SessionHeld reports whether s's tracker holds token's session in its
// table (see sessiontable.go).
func SessionHeld(s *Store, token string) bool {
	_, ok := s.d.tracker.session(recordOf(s.d.k.session(sessionid.Of(token))))
	return ok
}

// SessionStored reports whether s's tracker has token's session in its
// table, served or not.
func SessionStored(s *Store, token string) bool {
	r := recordOf(s.d.k.session(sessionid.Of(token)))
	sh := s.d.tracker.sessions.shard(r)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	_, ok := sh.m[r]
	return ok
}

// DeafToSessions makes s's tracker leave the server's messages of session
// changes unheard (see tracker.deaf).
func DeafToSessions(s *Store) { s.d.tracker.deaf.Store(true) }
