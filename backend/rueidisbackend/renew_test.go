package rueidisbackend_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// TestRenewSession_FailureBetweenStepsIsRepaired fails RenewSession's
// second step (deleting the old session, after the new one was created) and
// checks the repair the package documentation promises: the old token still
// works with all its data, the new session is listed nowhere, and once both
// have been idle for the idle timeout one cleaning pass leaves no key on
// any node but the user's index, which her next login a lifetime later
// prunes.
func TestRenewSession_FailureBetweenStepsIsRepaired(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target) {
		clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
		s, c, prefix := newStore(t, tg, clock)
		const old, renewed = "old-token", "new-token"
		if created, err := s.StartSession(bg, old, "alice"); !created || err != nil {
			t.Fatalf("StartSession = %v, %v", created, err)
		}
		if err := s.AddToCart(bg, old, "item-a", 2); err != nil {
			t.Fatal(err)
		}
		if err := s.SetValue(bg, old, "flash", []byte("hello")); err != nil {
			t.Fatal(err)
		}

		crash := errors.New("the process stopped")
		rueidisbackend.SetRenewHook(s, func() error { return crash })
		clock.Advance(time.Second)
		if ok, err := s.RenewSession(bg, old, renewed, "alice"); ok || !errors.Is(err, crash) {
			t.Fatalf("RenewSession with its second step failing = %v, %v; want false and the step's error", ok, err)
		}
		rueidisbackend.SetRenewHook(s, nil)

		// The old session is unchanged and still works.
		if user, ok, err := s.CheckToken(bg, old); user != "alice" || !ok || err != nil {
			t.Errorf("CheckToken(old) = %q, %v, %v; want alice", user, ok, err)
		}
		if cart, err := s.Cart(bg, old); err != nil || !cmp.Equal(cart, map[string]int{"item-a": 2}) {
			t.Errorf("Cart(old) = %v, %v; want item-a: 2", cart, err)
		}
		if v, ok, err := s.Value(bg, old, "flash"); string(v) != "hello" || !ok || err != nil {
			t.Errorf("Value(old, flash) = %q, %v, %v; want hello", v, ok, err)
		}
		if _, ok, err := s.RefreshSession(bg, old, ""); !ok || err != nil {
			t.Errorf("RefreshSession(old) = %v, %v; want a live session", ok, err)
		}
		// The new session was handed to nobody; it is alice's, so it is
		// listed with her sessions, and logging her out everywhere would
		// end it too.
		infos, err := s.UserSessions(bg, "alice")
		if err != nil || len(infos) != 2 || infos[0].ID != retail.SessionID(old) && infos[1].ID != retail.SessionID(old) ||
			infos[0].ID != retail.SessionID(renewed) && infos[1].ID != retail.SessionID(renewed) {
			t.Errorf("UserSessions(alice) = %+v, %v; want the old session and the orphan", infos, err)
		}
		if n, err := s.SessionCount(bg); n != 2 || err != nil {
			t.Errorf("SessionCount() = %d, %v; want 2 (the old session and the orphan)", n, err)
		}

		// Both expire; one pass removes both, and everything they had.
		clock.Advance(retail.DefaultIdleTimeout)
		for _, tok := range []string{old, renewed} {
			if _, ok, err := s.CheckToken(bg, tok); ok || err != nil {
				t.Errorf("CheckToken(%q) after the idle timeout = %v, %v; want a miss", tok, ok, err)
			}
		}
		if n, err := s.CleanSessions(bg, 0, 100); n != 2 || err != nil {
			t.Errorf("CleanSessions(0, 100) = %d, %v; want 2", n, err)
		}
		// Alice's index still lists both, until her next login a lifetime
		// on prunes them; nobody is listed meanwhile.
		if keys := scanAll(t, c, prefix); len(keys) != 1 || !strings.HasSuffix(keys[0], "user:{alice}") {
			t.Errorf("keys left after cleaning: %q; want alice's index only", keys)
		}
		if infos, err := s.UserSessions(bg, "alice"); len(infos) != 0 || err != nil {
			t.Errorf("UserSessions(alice) after cleaning = %+v, %v; want none", infos, err)
		}
		clock.Advance(retail.DefaultLifetime)
		if created, err := s.StartSession(bg, "later-token", "alice"); !created || err != nil {
			t.Fatalf("StartSession(later) = %v, %v", created, err)
		}
		if err := s.Logout(bg, "later-token"); err != nil {
			t.Fatal(err)
		}
		if keys := scanAll(t, c, prefix); len(keys) != 0 {
			t.Errorf("keys left after alice's next login and logout: %q; want none", keys)
		}
	})
}

// TestRenewSession_ALostTidyingReplyIsTriedAgain: a renewal whose removal
// of the old session's entry from its user's index loses its reply (the
// server took it) succeeds, and its second try, in the background, sends
// commands of its own: rueidis recycles those it answered, and sending
// one again sent whatever command had taken its place since (or panicked,
// in a cluster), and the old session's entry stayed.
func TestRenewSession_ALostTidyingReplyIsTriedAgain(t *testing.T) {
	for _, tg := range targets[1:] {
		t.Run(tg.name, func(t *testing.T) {
			c, prefix := tg.client(t, rueidis.ClientOption{})
			l := &lostReplyClient{Client: c}
			s := mustNew(t, l, rueidisbackend.Options{Prefix: prefix})
			if _, err := s.StartSession(bg, "old", "alice"); err != nil {
				t.Fatal(err)
			}
			key := userKey(prefix, "alice")
			l.skip.Store(1) // the first names it to index the new session
			l.key.Store(&key)
			if ok, err := s.RenewSession(bg, "old", "new", "alice"); !ok || err != nil {
				t.Fatalf("RenewSession whose tidying lost its reply = %v, %v; want true, nil", ok, err)
			}
			if l.key.Load() != nil {
				t.Fatal("no round trip named alice's index after the new session's: nothing was lost")
			}
			rueidisbackend.WaitCleanups(s)
			entries, err := c.Do(bg, c.B().Zrange().Key(key).Min("0").Max("-1").Build()).AsStrSlice()
			if want := []string{retail.SessionID("new")}; err != nil || !slices.Equal(entries, want) {
				t.Fatalf("alice's index after the second try holds %q, %v; want %q: the old session's entry removed", entries, err, want)
			}
		})
	}
}
