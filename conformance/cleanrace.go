package conformance

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// The cleanup race: the book's pass reads the oldest sessions, then deletes
// them, so a request that refreshes one in between loses its session. These
// behaviours race a pass against such requests. A black-box test cannot see
// when a pass reads, so each is built so that a correct store passes
// whichever way the race goes, and a store with the race fails when it
// interleaves badly. Run them under -race, and more than once (-count).

// agedRace creates total sessions a millisecond apart, oldest first, each
// having viewed "old-item", and moves the clock a second past the newest.
func agedRace(h *harness, prefix string, total int) []string {
	h.t.Helper()
	tokens := seq(prefix, total)
	for _, token := range tokens {
		h.update(token, "old-"+token, "old-item")
		h.clock.Advance(time.Millisecond)
	}
	h.clock.Advance(time.Second)
	return tokens
}

// wantRefreshed asserts that every refreshed token kept its refresh, and that
// the session count matches the sessions that exist among tokens.
func wantRefreshed(h *harness, tokens, refreshed []string) int {
	h.t.Helper()
	for _, token := range refreshed {
		h.wantUser(token, "new-"+token)
		if got := h.recent(token); len(got) == 0 || got[0] != "fresh-item" {
			h.t.Errorf("RecentItems(%q) = %q, want \"fresh-item\" first", token, got)
		}
	}
	return h.wantCountOf(tokens)
}

// refresh updates tokens, in order, as "new-TOKEN" viewing "fresh-item".
func refresh(h *harness, tokens []string) {
	for _, token := range tokens {
		if err := h.s.UpdateToken(h.ctx, token, "new-"+token, "fresh-item"); err != nil {
			h.t.Errorf("UpdateToken(%q, %q, \"fresh-item\") during cleaning = %v, want nil", token, "new-"+token, err)
			return
		}
	}
}

// testCleanRefreshDuringPass starts a pass that may remove every session,
// waits until it has removed the oldest (so it has surely begun), and then
// refreshes the youngest sessions, youngest first, which the pass reaches
// last. Each refreshed session must survive the pass. A store whose pass
// finishes before the refreshes start proves nothing, so the race is run
// again, up to a few rounds, until a refresh lands while the pass is running.
func testCleanRefreshDuringPass(h *harness) {
	const total, rounds = 5000, 3
	for round := range rounds {
		h.clean(0, h.sessionCount())
		tokens := agedRace(h, fmt.Sprintf("round%d", round), total)
		var refreshed []string
		for i := total - 1; i >= total/2; i -= 2 {
			refreshed = append(refreshed, tokens[i])
		}

		var (
			wg       sync.WaitGroup
			began    = make(chan struct{})
			finished atomic.Bool
			overlap  bool
			removed  int
			err      error
		)
		wg.Go(func() {
			close(began)
			removed, err = h.s.CleanSessions(h.ctx, 0, total)
			finished.Store(true)
		})
		wg.Go(func() {
			<-began
			if !untilRemoved(h, tokens[0], &finished) {
				return
			}
			refresh(h, refreshed[:1])
			overlap = !finished.Load()
			refresh(h, refreshed[1:])
		})
		wg.Wait()
		if err != nil {
			h.t.Fatalf("CleanSessions(0, %d) = %v, want nil error", total, err)
		}
		if removed < 1 || removed > total {
			h.t.Errorf("CleanSessions(0, %d) = %d, want 1..%d", total, removed, total)
		}
		wantRefreshed(h, tokens, refreshed)
		if h.t.Failed() || overlap {
			return
		}
	}
	h.t.Logf("no refresh landed while a pass ran, in %d rounds: this run could not see the race", rounds)
}

// testCleanRefreshAsPassStarts refreshes half the sessions as a pass starts,
// without waiting for it to remove anything, so the refreshes may land
// before the pass reads the sessions, while it removes them, or after it
// ends. The pass may remove as many sessions as were never refreshed:
// refreshed early, a session is among the youngest, out of the pass's reach;
// refreshed late, the pass must not delete it; refreshed after it was
// removed, it is a new session. The refreshes go youngest first, so that
// they meet a pass working oldest first in the middle.
func testCleanRefreshAsPassStarts(h *harness) {
	const total = 2000
	tokens := agedRace(h, "race", total)
	var refreshed []string
	for i := total - 1; i >= 0; i-- {
		if i%2 == 1 {
			refreshed = append(refreshed, tokens[i])
		}
	}
	max := total - len(refreshed)

	var (
		wg      sync.WaitGroup
		began   = make(chan struct{})
		removed int
		err     error
	)
	wg.Go(func() {
		close(began)
		removed, err = h.s.CleanSessions(h.ctx, 0, max)
	})
	wg.Go(func() {
		<-began
		refresh(h, refreshed)
	})
	wg.Wait()
	if err != nil {
		h.t.Fatalf("CleanSessions(0, %d) = %v, want nil error", max, err)
	}
	// The oldest session was never refreshed, so the pass removed it.
	if removed < 1 || removed > max {
		h.t.Errorf("CleanSessions(0, %d) = %d, want 1..%d", max, removed, max)
	}
	// Only the pass removed sessions, and refreshes only brought some back.
	if found := wantRefreshed(h, tokens, refreshed); found < total-removed {
		h.t.Errorf("%d of %d sessions found after CleanSessions(0, %d) removed %d, want at least %d",
			found, total, max, removed, total-removed)
	}
}

// testCleanRefreshSessionDuringPass is testCleanRefreshDuringPass with the
// refresh a server makes, RefreshSession, which never brings back a session
// the pass removed. Each refresh waits until the pass has begun, so one
// that found its session refreshed it after the pass began, and the pass
// must not remove it; one that missed found it removed already.
func testCleanRefreshSessionDuringPass(h *harness) {
	const total, rounds = 5000, 3
	for round := range rounds {
		h.clean(0, h.sessionCount())
		tokens := agedRace(h, fmt.Sprintf("round%d", round), total)
		var targets []string
		for i := total - 1; i >= total/2; i -= 2 {
			targets = append(targets, tokens[i])
		}

		var (
			wg       sync.WaitGroup
			began    = make(chan struct{})
			finished atomic.Bool
			found    = make([]bool, len(targets))
			overlap  bool
			removed  int
			err      error
		)
		wg.Go(func() {
			close(began)
			removed, err = h.s.CleanSessions(h.ctx, 0, total)
			finished.Store(true)
		})
		wg.Go(func() {
			<-began
			if !untilRemoved(h, tokens[0], &finished) {
				return
			}
			for i, token := range targets {
				user, ok, err := h.s.RefreshSession(h.ctx, token, "fresh-item")
				if err != nil || ok && user != "old-"+token {
					h.t.Errorf("RefreshSession(%q, \"fresh-item\") during cleaning = %q, %v, %v, want %q or a miss", token, user, ok, err, "old-"+token)
					return
				}
				found[i] = ok
				if i == 0 {
					overlap = ok && !finished.Load()
				}
			}
		})
		wg.Wait()
		if err != nil {
			h.t.Fatalf("CleanSessions(0, %d) = %v, want nil error", total, err)
		}
		if removed < 1 || removed > total {
			h.t.Errorf("CleanSessions(0, %d) = %d, want 1..%d", total, removed, total)
		}
		for i, token := range targets {
			if !found[i] {
				h.wantNoSession(token)
				continue
			}
			h.wantUser(token, "old-"+token)
			if got := h.recent(token); len(got) == 0 || got[0] != "fresh-item" {
				h.t.Errorf("RecentItems(%q) = %q, want \"fresh-item\" first", token, got)
			}
		}
		h.wantCountOf(tokens)
		if h.t.Failed() || overlap {
			return
		}
	}
	h.t.Logf("no refresh found its session while a pass ran, in %d rounds: this run could not see the race", rounds)
}

// untilRemoved waits until a cleaning pass that is running (until finished)
// has removed token, the oldest session, or has finished. It reports false
// if CheckToken failed, which it has reported.
func untilRemoved(h *harness, token string, finished *atomic.Bool) bool {
	for !finished.Load() {
		_, ok, err := h.s.CheckToken(h.ctx, token)
		if err != nil {
			h.t.Errorf("CheckToken(%q) during cleaning = %v, want nil error", token, err)
			return false
		}
		if !ok {
			break
		}
	}
	return true
}
