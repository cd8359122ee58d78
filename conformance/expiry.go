package conformance

import (
	"errors"
	"fmt"
	"time"

	"github.com/retailkit/retail"
)

// expiryTests pin when a session ends by the Store's clock: it is live while
// now < lastSeen + idle timeout and now < created + lifetime, and from that
// instant on every call treats it as absent. They run under every session
// times of the suite (see Config), and move the clock by the store's times
// as it keeps them, in whole milliseconds (h.idle, h.lifetime, h.touch).
var expiryTests = []behaviour{
	{name: "Expiry_IdleSessionEndsAtIdleTimeout", test: testExpiryIdle},
	{name: "Expiry_FirstCallAfterExpiryIsAWrite", test: testExpiryFirstCallWrites},
	{name: "Expiry_RefreshExtendsIdleTimeout", test: testExpiryRefreshExtends},
	{name: "Expiry_RefreshedSessionTakesWrites", test: testExpiryRefreshedTakesWrites},
	{name: "Expiry_ReadsDoNotExtendIdleTimeout", test: testExpiryReadsDoNotExtend},
	{name: "Expiry_LifetimeEndsRefreshedSession", test: testExpiryLifetime},
	{name: "Expiry_LoginRestartsLifetime", test: testExpiryLoginRestarts},
	{name: "Expiry_RenewalKeepsLifetime", test: testExpiryRenewalKeeps},
	{name: "Expiry_UpdateTokenKeepsLifetimeUntilUserChanges", test: testExpiryUpdateTokenKeeps},
	{name: "Expiry_CleanRemovesIdleSessionsBeyondKeep", test: testExpiryCleanIdle},
	{name: "Expiry_CleanRemovesIdleThenOldest", test: testExpiryCleanIdleThenOldest},
	{name: "Expiry_SessionCountCountsHeldSessions", test: testExpirySessionCount},
}

// wantExpired asserts that token's session, logged in as user, is absent
// to every call, and that none of them brings it back or counts a view.
func (h *harness) wantExpired(token, user string) {
	h.t.Helper()
	before := h.top(10)
	h.wantNoSession(token)
	h.wantUnlisted(user, token)
	h.wantNoSessionWrites(token)
	if ok, err := h.s.RenewSession(h.ctx, token, token+"-renewed", ""); ok || err != nil {
		h.t.Errorf("RenewSession(%q, %q, \"\") of an expired session = %v, %v, want false, nil", token, token+"-renewed", ok, err)
	}
	h.wantNoSession(token + "-renewed")
	h.wantNoSession(token)
	h.wantTop(10, before...)
}

// liveSession starts a session for token logged in as user, with a viewed
// item, a cart line and a value.
func liveSession(h *harness, token, user string) {
	h.t.Helper()
	h.start(token, user)
	h.wantRefresh(token, "item-a", user)
	h.addToCart(token, "item-a", 1)
	h.setValue(token, "flash", []byte("hello"))
}

// wantLive asserts, without refreshing it, that liveSession's session is
// live and whole.
func (h *harness) wantLive(token, user string) {
	h.t.Helper()
	h.wantUser(token, user)
	h.wantRecent(token, "item-a")
	h.wantCart(token, map[string]int{"item-a": 1})
	h.wantValue(token, "flash", "hello")
	found := false
	for _, info := range h.userSessions(user) {
		found = found || info.ID == retail.SessionID(token)
	}
	if !found {
		h.t.Errorf("UserSessions(%q) does not list live %q", user, token)
	}
}

func testExpiryIdle(h *harness) {
	liveSession(h, "tok-1", "alice")
	liveSession(h, "tok-2", "bob")
	h.clock.Advance(h.idle - time.Millisecond)
	h.wantLive("tok-1", "alice")
	h.wantRefresh("tok-2", "", "bob")
	h.clock.Advance(time.Millisecond)
	h.wantExpired("tok-1", "alice")
	// Expiry is per session: tok-2 was refreshed a millisecond ago.
	h.wantLive("tok-2", "bob")
}

// testExpiryFirstCallWrites makes each write the first call a session gets
// after it expired, so that a backend that drops expired sessions on reads
// cannot pass by having a read drop it first: each write must itself see
// that the session expired, and refuse it without reviving anything.
func testExpiryFirstCallWrites(h *harness) {
	writes := []struct {
		name string
		call func(token string) error // nil error and no session: refused as wanted
	}{
		{"RefreshSession", func(token string) error {
			if user, ok, err := h.s.RefreshSession(h.ctx, token, "item-late"); ok || err != nil {
				return fmt.Errorf("= %q, %v, %v, want a miss", user, ok, err)
			}
			return nil
		}},
		{"AddToCart", func(token string) error {
			return wantIs(h.s.AddToCart(h.ctx, token, "item-late", 1), retail.ErrNoSession)
		}},
		{"IncrementCart", func(token string) error {
			_, err := h.s.IncrementCart(h.ctx, token, "item-late", 1)
			return wantIs(err, retail.ErrNoSession)
		}},
		{"SetValue", func(token string) error {
			return wantIs(h.s.SetValue(h.ctx, token, "flash", []byte("late")), retail.ErrNoSession)
		}},
		{"RenewSession", func(token string) error {
			if ok, err := h.s.RenewSession(h.ctx, token, token+"-renewed", ""); ok || err != nil {
				return fmt.Errorf("= %v, %v, want false, nil", ok, err)
			}
			return nil
		}},
	}
	for i := range writes {
		liveSession(h, fmt.Sprintf("tok-%d", i), "alice")
	}
	before := h.top(10)
	h.clock.Advance(h.idle)
	for i, w := range writes {
		token := fmt.Sprintf("tok-%d", i)
		if err := w.call(token); err != nil {
			h.t.Errorf("%s(%q) as the first call after the idle timeout %v", w.name, token, err)
		}
		h.wantNoSession(token)
		h.wantNoSession(token + "-renewed")
	}
	h.wantTop(10, before...)
	h.wantUnlisted("alice", "tok-0")
}

// wantIs returns nil if err matches target, and an error saying what err
// was otherwise.
func wantIs(err, target error) error {
	if errors.Is(err, target) {
		return nil
	}
	return fmt.Errorf("= %v, want an error matching %v", err, target)
}

func testExpiryRefreshExtends(h *harness) {
	liveSession(h, "tok-1", "alice")
	// Refreshed soon after it started, the session lives an idle timeout
	// from that refresh, not from its start.
	h.clock.Advance(h.touchStep())
	h.wantRefresh("tok-1", "", "alice")
	h.clock.Advance(h.idle - time.Millisecond)
	h.wantLive("tok-1", "alice")
	// Refreshed before each idle timeout ends, it lives several.
	h.wantRefresh("tok-1", "", "alice")
	for range 3 {
		h.clock.Advance(h.idle - h.touchStep())
		h.wantRefresh("tok-1", "", "alice")
	}
	h.clock.Advance(h.idle - time.Millisecond)
	h.wantLive("tok-1", "alice")
	h.clock.Advance(time.Millisecond)
	h.wantExpired("tok-1", "alice")
}

func testExpiryRefreshedTakesWrites(h *harness) {
	liveSession(h, "tok-1", "alice")
	// Refreshed soon after it started, the session takes cart and value
	// writes until an idle timeout from that refresh, past an idle timeout
	// from its start.
	h.clock.Advance(h.touchStep())
	h.wantRefresh("tok-1", "", "alice")
	h.clock.Advance(h.idle - time.Millisecond)
	h.addToCart("tok-1", "item-b", 2)
	if n, err := h.s.IncrementCart(h.ctx, "tok-1", "item-b", 1); n != 3 || err != nil {
		h.t.Errorf("IncrementCart(%q, %q, 1) = %d, %v, want 3, nil", "tok-1", "item-b", n, err)
	}
	h.setValue("tok-1", "note", []byte("kept"))
	if v, ok, err := h.s.PopValue(h.ctx, "tok-1", "flash"); string(v) != "hello" || !ok || err != nil {
		h.t.Errorf("PopValue(%q, %q) = %q, %v, %v, want %q, true, nil", "tok-1", "flash", v, ok, err, "hello")
	}
	h.wantCart("tok-1", map[string]int{"item-a": 1, "item-b": 3})
	h.wantValue("tok-1", "note", "kept")
	// Those writes were not visits: an idle timeout from the refresh, the
	// session ends.
	h.clock.Advance(time.Millisecond)
	h.wantExpired("tok-1", "alice")
}

func testExpiryReadsDoNotExtend(h *harness) {
	liveSession(h, "tok-1", "alice")
	// Reads, and writes to the cart and values, are not visits.
	for range 3 {
		h.clock.Advance(h.idle / 4)
		h.wantLive("tok-1", "alice")
		h.addToCart("tok-1", "item-a", 1)
		h.setValue("tok-1", "flash", []byte("hello"))
	}
	h.clock.Advance(h.idle - 3*(h.idle/4))
	h.wantExpired("tok-1", "alice")
}

func testExpiryLifetime(h *harness) {
	t0 := h.now()
	liveSession(h, "tok-1", "alice")
	h.wantEndAt(t0.Add(h.lifetime), h.refreshing("tok-1", "alice"),
		func() { h.wantLive("tok-1", "alice") },
		func() { h.wantExpired("tok-1", "alice") })
}

func testExpiryLoginRestarts(h *harness) {
	t0 := h.now()
	h.start("tok-guest", "")
	h.addToCart("tok-guest", "item-a", 1)
	h.keepVisiting(t0.Add(h.lifetime-h.idle), h.refreshing("tok-guest", ""))
	login := h.now()
	h.renew("tok-guest", "tok-1", "alice")
	// Well past the guest session's lifetime, the login's goes on.
	h.wantEndAt(login.Add(h.lifetime), h.refreshing("tok-1", "alice"), func() {
		h.wantCart("tok-1", map[string]int{"item-a": 1})
		h.wantUserSessions("alice", info("tok-1", "alice", login, h.now()))
	}, func() {
		h.wantNoSession("tok-1")
		h.wantNoRefresh("tok-1", "")
		h.wantUserSessions("alice")
	})
}

func testExpiryRenewalKeeps(h *harness) {
	t0 := h.now()
	liveSession(h, "tok-1", "alice")
	h.keepVisiting(t0.Add(h.lifetime-h.idle), h.refreshing("tok-1", "alice"))
	h.renew("tok-1", "tok-2", "")
	h.wantEndAt(t0.Add(h.lifetime), h.refreshing("tok-2", "alice"),
		func() { h.wantUserSessions("alice", info("tok-2", "alice", t0, h.now())) },
		func() { h.wantExpired("tok-2", "alice") })
}

func testExpiryUpdateTokenKeeps(h *harness) {
	t0 := h.now()
	h.update("tok-1", "alice", "item-a")
	h.addToCart("tok-1", "item-a", 1)
	end := t0.Add(h.lifetime)
	h.wantEndAt(end, func() { h.update("tok-1", "alice", "") }, nil,
		func() { h.wantNoSession("tok-1") })
	// UpdateToken then starts a new session, with a lifetime of its own.
	h.update("tok-1", "bob", "item-b")
	h.wantRecent("tok-1", "item-b")
	h.wantCart("tok-1", nil)
	h.wantUserSessions("bob", info("tok-1", "bob", end, end))
	// A change of user is a login: the lifetime starts again, the data
	// stays.
	h.addToCart("tok-1", "item-b", 1)
	end2 := end.Add(h.lifetime)
	h.keepVisiting(end2, func() { h.update("tok-1", "bob", "") })
	h.clock.Set(end2.Add(-time.Millisecond))
	h.update("tok-1", "carol", "")
	h.clock.Set(end2)
	h.wantUser("tok-1", "carol")
	h.wantCart("tok-1", map[string]int{"item-b": 1})
	h.wantUserSessions("carol", info("tok-1", "carol", end2.Add(-time.Millisecond), end2.Add(-time.Millisecond)))
}

// expiredSessions starts five sessions a second apart (or less, so that
// they fit in half an idle timeout) and moves the clock so that the oldest
// three have been idle for the timeout.
func expiredSessions(h *harness) []string {
	h.t.Helper()
	t0 := h.now()
	gap := min(time.Second, (h.idle / 2).Truncate(time.Millisecond))
	tokens := seq("tok", 5)
	for i, token := range tokens {
		h.clock.Set(t0.Add(time.Duration(i) * gap))
		h.start(token, "user-"+token)
		h.addToCart(token, "item-a", 1)
		h.setValue(token, "flash", []byte("hello"))
	}
	h.clock.Set(t0.Add(2*gap + h.idle))
	return tokens
}

func testExpiryCleanIdle(h *harness) {
	tokens := expiredSessions(h)
	h.wantClean(1000, 2, 2)
	h.wantClean(1000, 100, 1)
	h.wantClean(1000, 100, 0)
	h.wantCount(2)
	for _, token := range tokens[3:] {
		h.wantUser(token, "user-"+token)
		h.wantCart(token, map[string]int{"item-a": 1})
		h.wantValue(token, "flash", "hello")
	}
	// A removed session leaves nothing for a new one under its token.
	for _, token := range tokens[:3] {
		h.wantNoSession(token)
		h.start(token, "user-"+token)
		h.wantCart(token, nil)
		h.wantNoValue(token, "flash")
	}
}

func testExpiryCleanIdleThenOldest(h *harness) {
	tokens := expiredSessions(h)
	h.wantClean(1, 100, 4)
	h.wantCount(1)
	h.wantUser(tokens[4], "user-"+tokens[4])
}

func testExpirySessionCount(h *harness) {
	tokens := expiredSessions(h)
	// Expired sessions that nothing has removed yet may still be held;
	// the live ones are.
	if n := h.sessionCount(); n < 2 || n > len(tokens) {
		h.t.Errorf("SessionCount() = %d with 2 live and 3 expired sessions, want 2..%d", n, len(tokens))
	}
	h.clean(1000, 100)
	h.wantCount(2)
	h.start("tok-new", "")
	h.wantCount(3)
	h.logout(tokens[4])
	h.wantCount(2)
}
