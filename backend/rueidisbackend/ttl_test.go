package rueidisbackend_test

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// ttlRig is a Store on a miniredis whose server clock (which moves only
// with FastForward) moves with the Store's.
type ttlRig struct {
	t     *testing.T
	mr    *miniredis.Miniredis
	clock *retail.ManualClock
	s     *rueidisbackend.Store
}

const (
	ttlIdle = 30 * time.Minute
	ttlLife = 3 * time.Hour
)

func newTTLRig(t *testing.T) *ttlRig {
	mr := startMiniredis(t)
	clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
	s, err := rueidisbackend.New(miniredisClientOf(t, mr, rueidis.ClientOption{}),
		rueidisbackend.Options{Clock: clock, IdleTimeout: ttlIdle, Lifetime: ttlLife})
	if err != nil {
		t.Fatal(err)
	}
	return &ttlRig{t: t, mr: mr, clock: clock, s: s}
}

// advance moves both clocks.
func (r *ttlRig) advance(d time.Duration) {
	r.clock.Advance(d)
	r.mr.FastForward(d)
}

// shop starts a session the way the shop does, with a viewed item, a cart
// line and a value, so that it has every kind of key.
func (r *ttlRig) shop(token, user string) {
	r.t.Helper()
	if created, err := r.s.StartSession(bg, token, user); !created || err != nil {
		r.t.Fatalf("StartSession(%q) = %v, %v", token, created, err)
	}
	if _, ok, err := r.s.RefreshSession(bg, token, "item-1"); !ok || err != nil {
		r.t.Fatalf("RefreshSession(%q) = %v, %v", token, ok, err)
	}
	if err := r.s.AddToCart(bg, token, "item-1", 1); err != nil {
		r.t.Fatal(err)
	}
	if err := r.s.SetValue(bg, token, "flash", []byte("hi")); err != nil {
		r.t.Fatal(err)
	}
}

// wantTTLs checks that every key of token's session, which ends at end by
// the Store's clock, lives at least TTLSlack longer and at most half an
// idle timeout more than that, and that the user's index outlives the
// longest session it can list.
func (r *ttlRig) wantTTLs(token, user string, created, end time.Time) {
	r.t.Helper()
	now := r.clock.Now()
	lo := end.Sub(now) + rueidisbackend.DefaultTTLSlack
	hi := lo + ttlIdle/2
	for _, k := range []string{sessionKey(rueidisbackend.DefaultPrefix, retail.SessionID(token))} {
		if !r.mr.Exists(k) {
			r.t.Errorf("at %v: key %q is gone while the session lives until %v", now, k, end)
			continue
		}
		if ttl := r.mr.TTL(k); ttl < lo || ttl > hi {
			r.t.Errorf("at %v: TTL of %q = %v, want %v..%v (the session ends at %v)", now, k, ttl, lo, hi, end)
		}
	}
	k := userKey(rueidisbackend.DefaultPrefix, user)
	if ttl, min := r.mr.TTL(k), created.Add(ttlLife).Sub(now)+rueidisbackend.DefaultTTLSlack; ttl < min || ttl > ttlLife+rueidisbackend.DefaultTTLSlack {
		r.t.Errorf("at %v: TTL of %q = %v, want %v..%v", now, k, ttl, min, ttlLife+rueidisbackend.DefaultTTLSlack)
	}
}

// wantGone checks that no key of the Store is left but the shared sets.
func (r *ttlRig) wantGone() {
	r.t.Helper()
	shared := map[string]bool{indexKey(rueidisbackend.DefaultPrefix): true, viewedKey(rueidisbackend.DefaultPrefix): true}
	for _, k := range r.mr.Keys() {
		if !shared[k] {
			r.t.Errorf("key %q outlived its TTL", k)
		}
	}
}

// TestSessionKeys_TTLsFreeAnAbandonedSession checks, on miniredis, whose
// key TTLs move only with FastForward, that every key of a session nobody
// uses again carries a TTL ending TTLSlack to TTLSlack plus half an idle
// timeout after the session ends by the Store's clock, that the session
// ends by that clock and not by its keys, and that the keys are gone once
// the TTLs have run out; the session index entry left behind goes with the
// next cleaning pass.
func TestSessionKeys_TTLsFreeAnAbandonedSession(t *testing.T) {
	r := newTTLRig(t)
	r.shop("abandoned", "alice")
	created := r.clock.Now()
	end := created.Add(ttlIdle)
	r.wantTTLs("abandoned", "alice", created, end)

	r.advance(ttlIdle - time.Millisecond)
	if _, ok, err := r.s.CheckToken(bg, "abandoned"); !ok || err != nil {
		t.Errorf("CheckToken 1ms before the idle timeout = %v, %v; want live", ok, err)
	}
	r.wantTTLs("abandoned", "alice", created, end)
	r.advance(time.Millisecond)
	if _, ok, err := r.s.CheckToken(bg, "abandoned"); ok || err != nil {
		t.Errorf("CheckToken at the idle timeout = %v, %v; want a miss", ok, err)
	}
	for _, k := range []string{sessionKey(rueidisbackend.DefaultPrefix, retail.SessionID("abandoned"))} {
		if !r.mr.Exists(k) {
			t.Errorf("key %q was gone when the session ended, want it kept for TTLSlack", k)
		}
	}
	r.advance(rueidisbackend.DefaultTTLSlack + ttlIdle/2)
	r.advance(ttlLife) // the user's index lives a lifetime
	r.wantGone()
	if n, err := r.s.SessionCount(bg); n != 1 || err != nil {
		t.Errorf("SessionCount() after the keys expired = %d, %v; want 1 (the index entry, until cleaned)", n, err)
	}
	if n, err := r.s.CleanSessions(bg, 1_000_000, 100); n != 0 || err != nil {
		t.Errorf("CleanSessions() = %d, %v; want 0 (the entry was no session any more)", n, err)
	}
	if n, err := r.s.SessionCount(bg); n != 0 || err != nil {
		t.Errorf("SessionCount() after cleaning = %d, %v; want 0", n, err)
	}
}

// TestSessionKeys_TTLsNeverEndALiveSession refreshes a session every 7
// minutes (so the coarse deadline in its login is sometimes left alone,
// sometimes moved) until its lifetime ends, moving the server's clock with
// the Store's, and checks after every step that the session is live and
// all its keys exist with TTLs in bounds; then that they go after its
// lifetime.
func TestSessionKeys_TTLsNeverEndALiveSession(t *testing.T) {
	r := newTTLRig(t)
	r.shop("active", "bob")
	created := r.clock.Now()
	lastSeen := created
	for step := 0; ; step++ {
		end := lastSeen.Add(ttlIdle)
		if life := created.Add(ttlLife); life.Before(end) {
			end = life
		}
		if !r.clock.Now().Before(end) {
			break
		}
		if _, ok, err := r.s.CheckToken(bg, "active"); !ok || err != nil {
			t.Fatalf("step %d: CheckToken = %v, %v; want live until %v", step, ok, err, end)
		}
		r.wantTTLs("active", "bob", created, end)
		r.advance(7 * time.Minute)
		if r.clock.Now().Before(created.Add(ttlLife)) {
			if _, ok, err := r.s.RefreshSession(bg, "active", ""); !ok || err != nil {
				t.Fatalf("step %d: RefreshSession = %v, %v", step, ok, err)
			}
			lastSeen = r.clock.Now()
		}
	}
	if _, ok, err := r.s.CheckToken(bg, "active"); ok || err != nil {
		t.Errorf("CheckToken after the lifetime = %v, %v; want a miss", ok, err)
	}
	r.advance(rueidisbackend.DefaultTTLSlack + ttlIdle/2)
	r.wantGone()
}

// TestSessionKeys_TTLsFollowOwnLifetime is TestSessionKeys_TTLsNeverEndALiveSession
// for a session with a lifetime of its own, shorter than the Store's,
// refreshed by RefreshSession and UpdateToken in turn: its key's TTL
// follows its own lifetime (never ending it early, nor keeping the key
// for the Store's), and the key goes once that lifetime has ended.
func TestSessionKeys_TTLsFollowOwnLifetime(t *testing.T) {
	const own = 2 * time.Hour
	r := newTTLRig(t)
	if created, err := r.s.StartSessionFor(bg, "remembered", "bob", retail.SessionOptions{Lifetime: own}); !created || err != nil {
		t.Fatalf("StartSessionFor = %v, %v", created, err)
	}
	created := r.clock.Now()
	lastSeen := created
	for step := 0; ; step++ {
		end := lastSeen.Add(ttlIdle)
		if life := created.Add(own); life.Before(end) {
			end = life
		}
		if !r.clock.Now().Before(end) {
			break
		}
		if _, ok, err := r.s.CheckToken(bg, "remembered"); !ok || err != nil {
			t.Fatalf("step %d: CheckToken = %v, %v; want live until %v", step, ok, err, end)
		}
		r.wantTTLs("remembered", "bob", created, end)
		r.advance(7 * time.Minute)
		if r.clock.Now().Before(created.Add(own)) {
			if step%2 == 0 {
				if _, ok, err := r.s.RefreshSession(bg, "remembered", ""); !ok || err != nil {
					t.Fatalf("step %d: RefreshSession = %v, %v", step, ok, err)
				}
			} else if err := r.s.UpdateToken(bg, "remembered", "bob", ""); err != nil {
				t.Fatalf("step %d: UpdateToken = %v", step, err)
			}
			lastSeen = r.clock.Now()
		}
	}
	if _, ok, err := r.s.CheckToken(bg, "remembered"); ok || err != nil {
		t.Errorf("CheckToken after its own lifetime = %v, %v; want a miss", ok, err)
	}
	r.advance(rueidisbackend.DefaultTTLSlack + ttlIdle/2)
	if k := sessionKey(rueidisbackend.DefaultPrefix, retail.SessionID("remembered")); r.mr.Exists(k) {
		t.Errorf("key %q outlived the session's own lifetime plus its slack", k)
	}
}

// TestClaim_KeyOutlivesItsHoldByTTLSlack: a claim is kept for at least its
// hold (retail.Coordinator), and its key TTLSlack longer, as every key the
// Store sets with a TTL; a hold that is not whole milliseconds is rounded
// up, as the session times and page TTLs are, not cut down.
func TestClaim_KeyOutlivesItsHoldByTTLSlack(t *testing.T) {
	const hold = 1500 * time.Microsecond
	r := newTTLRig(t)
	if held, err := r.s.Claim(bg, "work", "a", 7, hold); !held || err != nil {
		t.Fatalf(`Claim("work", "a", 7, %v) = %v, %v; want true, nil`, hold, held, err)
	}
	r.advance(hold + rueidisbackend.DefaultTTLSlack - 100*time.Microsecond)
	if held, err := r.s.Claim(bg, "work", "b", 7, hold); held || err != nil {
		t.Errorf(`Claim("work", "b", 7, %v) %v after a's claim = %v, %v; want false, nil: a's claim was forgotten early`,
			hold, hold+rueidisbackend.DefaultTTLSlack-100*time.Microsecond, held, err)
	}
}
