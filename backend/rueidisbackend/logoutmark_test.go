package rueidisbackend_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// userInBucket returns a user other than user whose logout mark is
// user's (same) or is not (!same).
func userInBucket(prefix, user string, same bool) string {
	mark := rueidisbackend.LogoutMark(prefix, user)
	for i := 0; ; i++ {
		if u := fmt.Sprintf("user-%d", i); u != user && (rueidisbackend.LogoutMark(prefix, u) == mark) == same {
			return u
		}
	}
}

// TestLogoutMark_OnlySessionsOlderThanTheirBucketsMarkReadTheUsersKey
// pins what the logout marks save: a call on a session reads its user's
// loggedout key only if a user of the same bucket logged out everywhere
// since the session logged in. With every user's key unreachable, the
// calls on alice's and carol's sessions succeed (so they read no such
// key), until bob, of alice's bucket, logs out everywhere: then the calls
// on alice's session fail, as they now read her key, and those on carol's,
// in another bucket, still succeed. A session alice logs in after bob's
// LogoutUser reads no key again.
func TestLogoutMark_OnlySessionsOlderThanTheirBucketsMarkReadTheUsersKey(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target) {
		c, prefix := tg.client(t, rueidis.ClientOption{})
		f := &faultyClient{Client: c}
		clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
		s := mustNew(t, f, rueidisbackend.Options{Prefix: prefix, Clock: clock})
		const alice = "alice"
		bob, carol := userInBucket(prefix, alice, true), userInBucket(prefix, alice, false)
		for token, user := range map[string]string{"tok-alice": alice, "tok-carol": carol} {
			if err := s.UpdateToken(bg, token, user, ""); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(time.Millisecond)
		// Not bob's: his LogoutUser writes his key.
		f.setDown(loggedOutKey(prefix, alice), loggedOutKey(prefix, carol))

		calls := func(token string) error {
			if _, ok, err := s.CheckToken(bg, token); err != nil {
				return fmt.Errorf("CheckToken: %w", err)
			} else if !ok {
				return errors.New("CheckToken found no session")
			}
			if err := s.AddToCart(bg, token, "item-1", 2); err != nil {
				return fmt.Errorf("AddToCart: %w", err)
			}
			if _, err := s.Cart(bg, token); err != nil {
				return fmt.Errorf("Cart: %w", err)
			}
			if err := s.SetValue(bg, token, "flash", []byte("x")); err != nil {
				return fmt.Errorf("SetValue: %w", err)
			}
			return nil
		}
		for _, token := range []string{"tok-alice", "tok-carol"} {
			if err := calls(token); err != nil {
				t.Fatalf("%s before any LogoutUser: %v", token, err)
			}
		}

		if _, err := s.LogoutUser(bg, bob); err != nil {
			t.Fatal(err)
		}
		if err := calls("tok-alice"); !errors.Is(err, errNodeDown) {
			t.Errorf("alice's session, logged in before her bucket's mark: %v, want the read of her key (%v)", err, errNodeDown)
		}
		if err := calls("tok-carol"); err != nil {
			t.Errorf("carol's session, in another bucket: %v", err)
		}

		clock.Advance(time.Millisecond)
		if created, err := s.StartSession(bg, "tok-alice-2", alice); err != nil || !created {
			t.Fatalf("StartSession after the mark: %v, %v", created, err)
		}
		if err := calls("tok-alice-2"); err != nil {
			t.Errorf("alice's session logged in after her bucket's mark: %v", err)
		}
	})
}

// TestLogoutMark_AShorterLifetimeShortensNoTTL: two Stores share a prefix,
// one with a lifetime of a day and one of an hour (a rollout that changes
// it, say). The day's LogoutUser of alice records her instant and her
// bucket's mark for a day; the hour's LogoutUser of alice, and of bob in
// her bucket, must not cut either TTL to an hour, or her sessions the
// index missed would outlive both keys.
func TestLogoutMark_AShorterLifetimeShortensNoTTL(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target) {
		day, c, prefix := newStoreWith(t, tg, rueidisbackend.Options{Lifetime: 24 * time.Hour})
		hour := mustNew(t, c, rueidisbackend.Options{Prefix: prefix, Lifetime: time.Hour})
		const alice = "alice"
		mark, bob := rueidisbackend.LogoutMark(prefix, alice), userInBucket(prefix, alice, true)
		if _, err := day.LogoutUser(bg, alice); err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{bob, alice} {
			if _, err := hour.LogoutUser(bg, u); err != nil {
				t.Fatal(err)
			}
		}
		for _, key := range []string{mark, loggedOutKey(prefix, alice)} {
			ttl, err := c.Do(bg, c.B().Pttl().Key(key).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			if ttl < (23 * time.Hour).Milliseconds() {
				t.Errorf("%s: TTL %v after the hour's LogoutUser, want the day's (about 24h)", key, time.Duration(ttl)*time.Millisecond)
			}
		}
	})
}

// TestLogoutMark_AnotherProcessSeesItsMarkRise: process A has read a
// session that its user's index missed, and so has cached that its bucket
// has no mark; process B logs the user out everywhere. The mark's
// invalidation reaches A's cache, and A stops serving the session well
// within A's cache TTL (a minute), which alone would otherwise end it.
func TestLogoutMark_AnotherProcessSeesItsMarkRise(t *testing.T) {
	for _, tg := range targets {
		if !tg.caching {
			continue // each miniredis client has a server of its own: two processes cannot share one
		}
		t.Run(tg.name, func(t *testing.T) { anotherProcessSeesItsMarkRise(t, tg) })
	}
}

func anotherProcessSeesItsMarkRise(t *testing.T, tg target) {
	clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
	a, c, prefix := newStoreWith(t, tg, rueidisbackend.Options{Clock: clock})
	cb, _ := tg.client(t, rueidis.ClientOption{})
	b := mustNew(t, cb, rueidisbackend.Options{Prefix: prefix, Clock: clock})
	if _, err := a.StartSession(bg, "missed", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(bg, c.B().Zrem().Key(userKey(prefix, "alice")).Member(retail.SessionID("missed")).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { // until A serves the session and the absent mark from its cache
		before := a.Stats().ClientCacheHits
		_, ok, err := a.CheckToken(bg, "missed")
		if err != nil || !ok {
			t.Fatalf("CheckToken before LogoutUser = %v, %v", ok, err)
		}
		return a.Stats().ClientCacheHits-before == 2
	})
	clock.Advance(time.Millisecond)
	if n, err := b.LogoutUser(bg, "alice"); n != 0 || err != nil {
		t.Fatalf("B: LogoutUser(alice) = %d, %v; want 0 (the index missed the session), nil", n, err)
	}
	start := time.Now()
	waitFor(t, func() bool {
		_, ok, err := a.CheckToken(bg, "missed")
		if err != nil {
			t.Fatal(err)
		}
		return !ok
	})
	t.Logf("A stopped serving the session %v after B's LogoutUser returned", time.Since(start))
}
