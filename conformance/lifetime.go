package conformance

import (
	"fmt"
	"time"

	"github.com/retailkit/retail"
)

// lifetimeTests pin sessions with a lifetime of their own
// (StartSessionFor, RenewSessionFor): such a session ends exactly that
// long after its login, keeps its lifetime through refreshes, renewals
// and UpdateToken with its own user, and a login without one gives it the
// Store's again. They run under every session times of the suite.
var lifetimeTests = []behaviour{
	{name: "Lifetime_OwnLifetimeEndsSession", test: testLifetimeOwnEnds},
	{name: "Lifetime_OwnLifetimeOfGuest", test: testLifetimeOwnGuest},
	{name: "Lifetime_RenewalKeepsOwnLifetime", test: testLifetimeRenewalKeeps},
	{name: "Lifetime_RenewSessionForStartsOwnLifetime", test: testLifetimeRenewFor},
	{name: "Lifetime_LoginWithoutOneRestartsStoreLifetime", test: testLifetimeLoginRestoresStore},
	{name: "Lifetime_UpdateTokenKeepsOwnLifetimeUntilUserChanges", test: testLifetimeUpdateToken},
	{name: "Lifetime_StoreLifetimeIsTheMaximum", test: testLifetimeMaximum},
}

// ownLifetime is the lifetime the tests give sessions of their own: about
// half the Store's, and not whole milliseconds, so that a backend must
// round it up as it rounds its own times. keptLifetime is it as Stores
// keep it.
func (h *harness) ownLifetime() time.Duration {
	return (h.lifetime / 2).Truncate(time.Millisecond) + 500*time.Microsecond
}

func (h *harness) keptLifetime() time.Duration { return ceilMillis(h.ownLifetime()) }

func (h *harness) startFor(token, user string, lifetime time.Duration) {
	h.t.Helper()
	created, err := h.s.StartSessionFor(h.ctx, token, user, retail.SessionOptions{Lifetime: lifetime})
	if err != nil || !created {
		h.t.Fatalf("StartSessionFor(%q, %q, %v) = %v, %v, want true, nil", token, user, lifetime, created, err)
	}
}

func (h *harness) renewFor(token, newToken, user string, lifetime time.Duration) {
	h.t.Helper()
	ok, err := h.s.RenewSessionFor(h.ctx, token, newToken, user, retail.SessionOptions{Lifetime: lifetime})
	if err != nil || !ok {
		h.t.Fatalf("RenewSessionFor(%q, %q, %q, %v) = %v, %v, want true, nil", token, newToken, user, lifetime, ok, err)
	}
}

// liveSessionFor is liveSession for a session with a lifetime of its own.
func liveSessionFor(h *harness, token, user string, lifetime time.Duration) {
	h.t.Helper()
	h.startFor(token, user, lifetime)
	h.wantRefresh(token, "item-a", user)
	h.addToCart(token, "item-a", 1)
	h.setValue(token, "flash", []byte("hello"))
}

func testLifetimeOwnEnds(h *harness) {
	t0 := h.now()
	liveSessionFor(h, "tok-1", "alice", h.ownLifetime())
	liveSession(h, "tok-2", "bob")
	end := t0.Add(h.keptLifetime())
	h.keepVisiting(end, func() {
		h.wantRefresh("tok-1", "", "alice")
		h.wantRefresh("tok-2", "", "bob")
	})
	h.clock.Set(end.Add(-time.Millisecond))
	h.wantRefresh("tok-1", "", "alice")
	h.wantRefresh("tok-2", "", "bob")
	h.wantLive("tok-1", "alice")
	h.wantUserSessions("alice", info("tok-1", "alice", t0, h.now()))
	h.clock.Set(end)
	h.wantExpired("tok-1", "alice")
	// A session without one of its own goes on to the Store's lifetime.
	h.wantLive("tok-2", "bob")
}

func testLifetimeOwnGuest(h *harness) {
	t0 := h.now()
	h.startFor("tok-guest", "", h.ownLifetime())
	h.addToCart("tok-guest", "item-a", 1)
	end := t0.Add(h.keptLifetime())
	h.keepVisiting(end, func() { h.wantRefresh("tok-guest", "", "") })
	h.clock.Set(end.Add(-time.Millisecond))
	h.wantCart("tok-guest", map[string]int{"item-a": 1})
	h.clock.Set(end)
	h.wantNoSession("tok-guest")
	h.wantNoSessionWrites("tok-guest")
}

func testLifetimeRenewalKeeps(h *harness) {
	t0 := h.now()
	liveSessionFor(h, "tok-1", "alice", h.ownLifetime())
	end := t0.Add(h.keptLifetime())
	keepRefreshing(h, "tok-1", "alice", end.Add(-h.idle))
	h.renew("tok-1", "tok-2", "")
	keepRefreshing(h, "tok-2", "alice", end)
	h.clock.Set(end.Add(-time.Millisecond))
	h.wantRefresh("tok-2", "", "alice")
	h.wantUserSessions("alice", info("tok-2", "alice", t0, h.now()))
	h.clock.Set(end)
	h.wantExpired("tok-2", "alice")
}

func testLifetimeRenewFor(h *harness) {
	t0 := h.now()
	h.start("tok-guest", "")
	h.addToCart("tok-guest", "item-a", 1)
	keepRefreshing(h, "tok-guest", "", t0.Add(h.idle+h.touchStep()))
	login := h.now()
	h.renewFor("tok-guest", "tok-1", "alice", h.ownLifetime())
	h.wantNoSession("tok-guest")
	end := login.Add(h.keptLifetime())
	keepRefreshing(h, "tok-1", "alice", end)
	h.clock.Set(end.Add(-time.Millisecond))
	h.wantRefresh("tok-1", "", "alice")
	h.wantCart("tok-1", map[string]int{"item-a": 1})
	h.wantUserSessions("alice", info("tok-1", "alice", login, h.now()))
	h.clock.Set(end)
	h.wantNoSession("tok-1")
	h.wantNoRefresh("tok-1", "")
	h.wantUserSessions("alice")
}

func testLifetimeLoginRestoresStore(h *harness) {
	t0 := h.now()
	h.startFor("tok-1", "alice", h.ownLifetime())
	h.addToCart("tok-1", "item-a", 1)
	keepRefreshing(h, "tok-1", "alice", t0.Add(h.idle+h.touchStep()))
	login := h.now()
	h.renew("tok-1", "tok-2", "bob")
	// Past the own lifetime, the login's, the Store's, goes on.
	end := login.Add(h.lifetime)
	keepRefreshing(h, "tok-2", "bob", end)
	h.clock.Set(end.Add(-time.Millisecond))
	h.wantRefresh("tok-2", "", "bob")
	h.wantCart("tok-2", map[string]int{"item-a": 1})
	h.clock.Set(end)
	h.wantNoSession("tok-2")
}

func testLifetimeUpdateToken(h *harness) {
	t0 := h.now()
	h.startFor("tok-1", "alice", h.ownLifetime())
	end := t0.Add(h.keptLifetime())
	h.keepVisiting(end, func() { h.update("tok-1", "alice", "") })
	h.clock.Set(end.Add(-time.Millisecond))
	h.update("tok-1", "alice", "item-a")
	h.wantRecent("tok-1", "item-a")
	h.clock.Set(end)
	h.wantNoSession("tok-1")

	// A change of user is a login: the Store's lifetime starts again.
	t1 := h.now()
	h.startFor("tok-2", "alice", h.ownLifetime())
	h.addToCart("tok-2", "item-b", 1)
	h.clock.Advance(h.idle - h.touchStep())
	login := h.now()
	h.update("tok-2", "bob", "")
	end2 := login.Add(h.lifetime)
	h.keepVisiting(end2, func() { h.update("tok-2", "bob", "") })
	if !h.now().After(t1.Add(h.keptLifetime())) {
		h.t.Fatalf("the test's clock did not pass the own lifetime")
	}
	h.clock.Set(end2.Add(-time.Millisecond))
	h.wantUser("tok-2", "bob")
	h.wantCart("tok-2", map[string]int{"item-b": 1})
	h.clock.Set(end2)
	h.wantNoSession("tok-2")
}

func testLifetimeMaximum(h *harness) {
	// The Store's lifetime itself is accepted.
	t0 := h.now()
	h.startFor("tok-max", "alice", h.lifetime)
	for _, d := range []time.Duration{h.lifetime + time.Millisecond, h.lifetime + time.Nanosecond, -time.Second} {
		created, err := h.s.StartSessionFor(h.ctx, "tok-1", "alice", retail.SessionOptions{Lifetime: d})
		h.wantErr(fmt.Sprintf(`StartSessionFor("tok-1", "alice", %v)`, d), err, retail.ErrInvalid)
		if created {
			h.t.Errorf(`StartSessionFor("tok-1", "alice", %v) = true, want false`, d)
		}
		h.wantNoSession("tok-1")
		ok, err := h.s.RenewSessionFor(h.ctx, "tok-max", "tok-2", "alice", retail.SessionOptions{Lifetime: d})
		h.wantErr(fmt.Sprintf(`RenewSessionFor("tok-max", "tok-2", "alice", %v)`, d), err, retail.ErrInvalid)
		if ok {
			h.t.Errorf(`RenewSessionFor("tok-max", "tok-2", "alice", %v) = true, want false`, d)
		}
		h.wantNoSession("tok-2")
	}
	// A lifetime is given at a login: not with a renewal.
	_, err := h.s.RenewSessionFor(h.ctx, "tok-max", "tok-2", "", retail.SessionOptions{Lifetime: h.ownLifetime()})
	h.wantErr(`RenewSessionFor("tok-max", "tok-2", "", lifetime)`, err, retail.ErrInvalid)
	h.wantNoSession("tok-2")
	h.wantUserSessions("alice", info("tok-max", "alice", t0, t0))
	end := t0.Add(h.lifetime)
	keepRefreshing(h, "tok-max", "alice", end)
	h.clock.Set(end.Add(-time.Millisecond))
	h.wantRefresh("tok-max", "", "alice")
	h.clock.Set(end)
	h.wantNoSession("tok-max")
}
