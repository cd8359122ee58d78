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
	both := func() {
		h.t.Helper()
		h.wantRefresh("tok-1", "", "alice")
		h.wantRefresh("tok-2", "", "bob")
	}
	h.wantEndAt(t0.Add(h.keptLifetime()), both, func() {
		h.wantLive("tok-1", "alice")
		h.wantUserSessions("alice", info("tok-1", "alice", t0, h.now()))
	}, func() {
		h.wantExpired("tok-1", "alice")
		// A session without one of its own goes on to the Store's
		// lifetime.
		h.wantLive("tok-2", "bob")
	})
}

func testLifetimeOwnGuest(h *harness) {
	t0 := h.now()
	h.startFor("tok-guest", "", h.ownLifetime())
	h.addToCart("tok-guest", "item-a", 1)
	h.wantEndAt(t0.Add(h.keptLifetime()), h.refreshing("tok-guest", ""),
		func() { h.wantCart("tok-guest", map[string]int{"item-a": 1}) },
		func() {
			h.wantNoSession("tok-guest")
			h.wantNoSessionWrites("tok-guest")
		})
}

func testLifetimeRenewalKeeps(h *harness) {
	t0 := h.now()
	liveSessionFor(h, "tok-1", "alice", h.ownLifetime())
	end := t0.Add(h.keptLifetime())
	h.keepVisiting(end.Add(-h.idle), h.refreshing("tok-1", "alice"))
	h.renew("tok-1", "tok-2", "")
	h.wantEndAt(end, h.refreshing("tok-2", "alice"),
		func() { h.wantUserSessions("alice", info("tok-2", "alice", t0, h.now())) },
		func() { h.wantExpired("tok-2", "alice") })
}

func testLifetimeRenewFor(h *harness) {
	t0 := h.now()
	h.start("tok-guest", "")
	h.addToCart("tok-guest", "item-a", 1)
	h.keepVisiting(t0.Add(h.idle+h.touchStep()), h.refreshing("tok-guest", ""))
	login := h.now()
	h.renewFor("tok-guest", "tok-1", "alice", h.ownLifetime())
	h.wantNoSession("tok-guest")
	h.wantEndAt(login.Add(h.keptLifetime()), h.refreshing("tok-1", "alice"), func() {
		h.wantCart("tok-1", map[string]int{"item-a": 1})
		h.wantUserSessions("alice", info("tok-1", "alice", login, h.now()))
	}, func() {
		h.wantNoSession("tok-1")
		h.wantNoRefresh("tok-1", "")
		h.wantUserSessions("alice")
	})
}

func testLifetimeLoginRestoresStore(h *harness) {
	t0 := h.now()
	h.startFor("tok-1", "alice", h.ownLifetime())
	h.addToCart("tok-1", "item-a", 1)
	h.keepVisiting(t0.Add(h.idle+h.touchStep()), h.refreshing("tok-1", "alice"))
	login := h.now()
	h.renew("tok-1", "tok-2", "bob")
	// Past the own lifetime, the login's, the Store's, goes on.
	h.wantEndAt(login.Add(h.lifetime), h.refreshing("tok-2", "bob"),
		func() { h.wantCart("tok-2", map[string]int{"item-a": 1}) },
		func() { h.wantNoSession("tok-2") })
}

func testLifetimeUpdateToken(h *harness) {
	t0 := h.now()
	h.startFor("tok-1", "alice", h.ownLifetime())
	h.wantEndAt(t0.Add(h.keptLifetime()), func() { h.update("tok-1", "alice", "") }, func() {
		h.update("tok-1", "alice", "item-a")
		h.wantRecent("tok-1", "item-a")
	}, func() { h.wantNoSession("tok-1") })

	// A change of user is a login: the Store's lifetime starts again.
	t1 := h.now()
	h.startFor("tok-2", "alice", h.ownLifetime())
	h.addToCart("tok-2", "item-b", 1)
	h.clock.Advance(h.idle - h.touchStep())
	login := h.now()
	h.update("tok-2", "bob", "")
	if !login.Add(h.lifetime - h.idle).After(t1.Add(h.keptLifetime())) {
		h.t.Fatalf("the test's visits do not pass the own lifetime")
	}
	h.wantEndAt(login.Add(h.lifetime), func() { h.update("tok-2", "bob", "") }, func() {
		h.wantUser("tok-2", "bob")
		h.wantCart("tok-2", map[string]int{"item-b": 1})
	}, func() { h.wantNoSession("tok-2") })
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
	h.wantEndAt(t0.Add(h.lifetime), h.refreshing("tok-max", "alice"), nil,
		func() { h.wantNoSession("tok-max") })
}
