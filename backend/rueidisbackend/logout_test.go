package rueidisbackend_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// TestLogout_RacingWritesLeaveNoKeys starts sessions and races a Logout of
// each against RefreshSession (with an item, so that a cluster's view and
// index writes follow the session script), AddToCart, IncrementCart and
// SetValue of the same token, then scans every node: the writes never
// create a session, so nothing may be left: no session key, no entry in
// the session index (not even one that cleaning would remove later), and
// no user's index. Only the view counts stay.
func TestLogout_RacingWritesLeaveNoKeys(t *testing.T) {
	t.Parallel()
	forEachTarget(t, func(t *testing.T, tg target) {
		// miniredis runs each script in a new Lua interpreter, about
		// 0.25 ms (1.5 ms under the race detector), so it gets fewer.
		trials := 2000
		if tg.name == "miniredis" {
			trials = 200
		}
		clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
		s, c, prefix := newStoreWith(t, tg, rueidisbackend.Options{Clock: clock})
		writes := []func(token string) error{
			func(token string) error {
				// The shop's refresh moves the login's coarse deadline (and,
				// in a cluster, the index) only now and then; an item makes
				// the cluster's second round trip happen every time.
				_, ok, err := s.RefreshSession(bg, token, "item-x")
				if err == nil && !ok {
					err = retail.ErrNoSession
				}
				return err
			},
			func(token string) error { return s.AddToCart(bg, token, "item-x", 2) },
			func(token string) error { _, err := s.IncrementCart(bg, token, "item-x", 1); return err },
			func(token string) error { return s.SetValue(bg, token, "flash", []byte("x")) },
		}
		const batch = 32
		var found, missed atomic.Int64 // writes that ran before and after their Logout
		for b := 0; b < trials; b += batch {
			tokens := make([]string, 0, batch)
			for i := b; i < min(b+batch, trials); i++ {
				token := fmt.Sprintf("race-%05d", i)
				if created, err := s.StartSession(bg, token, fmt.Sprintf("user-%d", i%4)); !created || err != nil {
					t.Fatalf("StartSession(%q) = %v, %v", token, created, err)
				}
				tokens = append(tokens, token)
			}
			if b/batch%2 == 1 {
				// Half the batches race refreshes that move the login's
				// coarse deadline and, in a cluster, write the index
				// entry after the session script.
				clock.Advance(retail.DefaultIdleTimeout/2 + time.Millisecond)
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for _, token := range tokens {
				wg.Go(func() {
					<-start
					if err := s.Logout(bg, token); err != nil {
						t.Errorf("Logout(%q) = %v", token, err)
					}
				})
				for _, write := range writes {
					wg.Go(func() {
						<-start
						switch err := write(token); {
						case err == nil:
							found.Add(1)
						case errors.Is(err, retail.ErrNoSession):
							missed.Add(1)
						default:
							t.Errorf("write racing Logout(%q) = %v", token, err)
						}
					})
				}
			}
			close(start)
			wg.Wait()
			if t.Failed() {
				return
			}
		}
		t.Logf("%d writes ran before their Logout, %d after", found.Load(), missed.Load())
		for _, k := range scanAll(t, c, prefix) {
			if k != viewedKey(prefix) && !strings.HasPrefix(k, prefix+"{views}:flushed:") {
				t.Errorf("key %q left after every session was logged out", k)
			}
		}
	})
}

// TestUserSessions_DropsEntriesOfSessionsGone cleans two of a user's
// sessions, which leaves their entries in her index, lets a third expire
// without cleaning it, and keeps a fourth live. UserSessions must list the
// live one only, and leave in her index the live and the expired ones: the
// entries of sessions gone go, but an expired session's stays, as a
// process whose clock lags may still find it live (and LogoutUser must
// find it then).
func TestUserSessions_DropsEntriesOfSessionsGone(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target) {
		clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
		s, c, prefix := newStore(t, tg, clock)
		for _, tok := range []string{"gone-1", "gone-2", "expired"} {
			if created, err := s.StartSession(bg, tok, "alice"); !created || err != nil {
				t.Fatalf("StartSession(%s) = %v, %v", tok, created, err)
			}
			clock.Advance(time.Millisecond)
		}
		clock.Advance(retail.DefaultIdleTimeout)
		if created, err := s.StartSession(bg, "live", "alice"); !created || err != nil {
			t.Fatalf("StartSession(live) = %v, %v", created, err)
		}
		if n, err := s.CleanSessions(bg, 0, 2); n != 2 || err != nil {
			t.Fatalf("CleanSessions(0, 2) = %d, %v; want 2 (the two oldest)", n, err)
		}
		index := userKey(prefix, "alice")
		entries := func() []string {
			t.Helper()
			got, err := c.Do(bg, c.B().Zrange().Key(index).Min("0").Max("-1").Build()).AsStrSlice()
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		if got := entries(); len(got) != 4 {
			t.Fatalf("alice's index after cleaning = %q; want all four sessions (cleaning leaves it alone)", got)
		}
		infos, err := s.UserSessions(bg, "alice")
		if err != nil || len(infos) != 1 || infos[0].ID != retail.SessionID("live") {
			t.Fatalf("UserSessions(alice) = %+v, %v; want the live session only", infos, err)
		}
		if got, want := entries(), []string{retail.SessionID("expired"), retail.SessionID("live")}; !slices.Equal(got, want) {
			t.Errorf("alice's index after UserSessions = %q; want %q", got, want)
		}
	})
}

// TestLogoutUser_EndsSessionsItsIndexLost removes sessions' entries from
// their user's index, as a failover that loses a master's last writes
// does, and logs the user out everywhere: every session ends, found in
// the index or not, for every call that reads or writes a session.
func TestLogoutUser_EndsSessionsItsIndexLost(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target) {
		clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
		s, c, prefix := newStore(t, tg, clock)
		tokens := []string{"lost-1", "lost-2", "kept-3", "kept-4"}
		for _, token := range append(tokens, "lost-5") {
			if _, err := s.StartSession(bg, token, "alice"); err != nil {
				t.Fatal(err)
			}
			if err := s.AddToCart(bg, token, "item-a", 1); err != nil {
				t.Fatal(err)
			}
		}
		index := prefix + "user:{alice}"
		if err := c.Do(bg, c.B().Zrem().Key(index).Member(retail.SessionID("lost-1"), retail.SessionID("lost-2"), retail.SessionID("lost-5")).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Millisecond)
		n, err := s.LogoutUser(bg, "alice")
		if n != 2 || err != nil {
			t.Errorf(`LogoutUser("alice") = %d, %v, want 2 (the sessions it found), nil`, n, err)
		}
		for _, token := range tokens {
			if user, ok, err := s.CheckToken(bg, token); ok || err != nil {
				t.Errorf("CheckToken(%q) after LogoutUser = %q, %v, %v, want a miss", token, user, ok, err)
			}
			if _, ok, err := s.RefreshSession(bg, token, "item-b"); ok || err != nil {
				t.Errorf("RefreshSession(%q) after LogoutUser = %v, %v, want a miss", token, ok, err)
			}
			if cart, err := s.Cart(bg, token); len(cart) != 0 || err != nil {
				t.Errorf("Cart(%q) after LogoutUser = %v, %v, want empty", token, cart, err)
			}
			if err := s.AddToCart(bg, token, "item-b", 1); !errors.Is(err, retail.ErrNoSession) {
				t.Errorf("AddToCart(%q) after LogoutUser = %v, want ErrNoSession", token, err)
			}
		}
		if infos, err := s.UserSessions(bg, "alice"); len(infos) != 0 || err != nil {
			t.Errorf(`UserSessions("alice") after LogoutUser = %+v, %v, want none`, infos, err)
		}
		// UpdateToken of a session it missed, untouched since, in a later
		// millisecond, starts a new session: live, with an empty cart and
		// only the new view.
		clock.Advance(time.Millisecond)
		if err := s.UpdateToken(bg, "lost-5", "alice", "item-c"); err != nil {
			t.Fatal(err)
		}
		if user, ok, err := s.CheckToken(bg, "lost-5"); user != "alice" || !ok || err != nil {
			t.Errorf(`CheckToken("lost-5") after UpdateToken = %q, %v, %v, want "alice", true, nil`, user, ok, err)
		}
		if cart, err := s.Cart(bg, "lost-5"); len(cart) != 0 || err != nil {
			t.Errorf(`Cart("lost-5") after UpdateToken = %v, %v, want empty`, cart, err)
		}
		if recent, err := s.RecentItems(bg, "lost-5"); !slices.Equal(recent, []string{"item-c"}) || err != nil {
			t.Errorf(`RecentItems("lost-5") after UpdateToken = %v, %v, want [item-c]`, recent, err)
		}
		if err := s.Logout(bg, "lost-5"); err != nil {
			t.Fatal(err)
		}
		// A login in a later millisecond is not ended.
		clock.Advance(time.Millisecond)
		if _, err := s.StartSession(bg, "after", "alice"); err != nil {
			t.Fatal(err)
		}
		if user, ok, err := s.CheckToken(bg, "after"); user != "alice" || !ok || err != nil {
			t.Errorf(`CheckToken("after") = %q, %v, %v, want "alice", true, nil`, user, ok, err)
		}
		if n, err := s.SessionCount(bg); n != 1 || err != nil {
			t.Errorf("SessionCount() = %d, %v, want 1 (the calls removed the sessions that were over)", n, err)
		}
	})
}
