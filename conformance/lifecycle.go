package conformance

import (
	"fmt"
	"time"

	"github.com/retailkit/retail"
)

// lifecycleTests pin how sessions are created, refreshed and moved: only
// StartSession and the book's UpdateToken create one; RefreshSession never
// does; RenewSession moves one to a new token.
var lifecycleTests = []behaviour{
	{name: "Lifecycle_StartSessionCreatesGuest", test: testStartGuest},
	{name: "Lifecycle_StartSessionCreatesUser", test: testStartUser},
	{name: "Lifecycle_StartSessionOnLiveTokenWritesNothing", test: testStartLiveToken},
	{name: "Lifecycle_StartSessionReplacesExpiredSession", test: testStartReplacesExpired},
	{name: "Lifecycle_RefreshReturnsUser", test: testRefreshReturnsUser},
	{name: "Lifecycle_RefreshRecordsVisit", test: testRefreshRecordsVisit},
	{name: "Lifecycle_RefreshNeverCreates", test: testRefreshNeverCreates},
	{name: "Lifecycle_UpdateTokenCreatesOrRefreshes", test: testUpdateTokenCreatesOrRefreshes},
	{name: "Lifecycle_UpdateTokenReplacesExpiredSession", test: testUpdateTokenReplacesExpired},
	{name: "Lifecycle_RenewAsLoginMovesSession", test: testRenewAsLogin},
	{name: "Lifecycle_RenewAsLoginMovesUserIndex", test: testRenewMovesUserIndex},
	{name: "Lifecycle_RenewWithoutUserKeepsUserAndCreated", test: testRenewKeepsUser},
	{name: "Lifecycle_RenewedTokenStaysDead", test: testRenewedTokenStaysDead},
	{name: "Lifecycle_RenewWithoutSessionWritesNothing", test: testRenewWithoutSession},
	{name: "Lifecycle_RenewToLiveTokenWritesNothing", test: testRenewToLiveToken},
	{name: "Lifecycle_RenewOverExpiredSession", test: testRenewOverExpired},
	{name: "Lifecycle_RenewOfExpiredSessionFails", test: testRenewOfExpired},
	{name: "Lifecycle_RenewNeverLosesBothTokens", test: testRenewNeverLosesBoth},
}

func testStartGuest(h *harness) {
	created, err := h.s.StartSession(h.ctx, "tok-1", "")
	if err != nil || !created {
		h.t.Fatalf(`StartSession("tok-1", "") = %v, %v, want true, nil`, created, err)
	}
	h.wantUser("tok-1", "")
	h.wantRecent("tok-1")
	h.wantCart("tok-1", nil)
	h.wantNoValue("tok-1", "flash")
	h.wantCount(1)
	// A guest session is a session: it holds a cart and values.
	h.addToCart("tok-1", "item-a", 1)
	h.setValue("tok-1", "flash", []byte("hi"))
	h.wantCart("tok-1", map[string]int{"item-a": 1})
	h.wantValue("tok-1", "flash", "hi")
	h.wantRefresh("tok-1", "", "")
}

func testStartUser(h *harness) {
	t0 := h.now()
	h.start("tok-1", "alice")
	h.wantUser("tok-1", "alice")
	h.wantRecent("tok-1")
	h.wantCart("tok-1", nil)
	h.wantUserSessions("alice", info("tok-1", "alice", t0, t0))
	h.wantCount(1)
	h.wantNoSession("tok-2")
}

func testStartLiveToken(h *harness) {
	seed(h)
	before := h.state()
	for _, c := range []struct{ token, user string }{
		{"tok-a", "carol"}, {"tok-a", "alice"}, {"tok-a", ""}, {"tok-guest", "carol"}, {"tok-b", "bob"},
	} {
		if created, err := h.s.StartSession(h.ctx, c.token, c.user); created || err != nil {
			h.t.Errorf("StartSession(%q, %q) on a live session = %v, %v, want false, nil", c.token, c.user, created, err)
		}
	}
	h.wantUnchanged(before, "StartSession on live tokens")
}

func testStartReplacesExpired(h *harness) {
	h.start("tok-1", "alice")
	h.wantRefresh("tok-1", "item-a", "alice")
	h.addToCart("tok-1", "item-a", 1)
	h.setValue("tok-1", "flash", []byte("old"))
	h.clock.Advance(h.idle)
	t1 := h.now()
	h.start("tok-1", "bob")
	h.wantUser("tok-1", "bob")
	h.wantRecent("tok-1")
	h.wantCart("tok-1", nil)
	h.wantNoValue("tok-1", "flash")
	h.wantUserSessions("bob", info("tok-1", "bob", t1, t1))
	h.wantUserSessions("alice")
	h.wantCount(1)
}

func testRefreshReturnsUser(h *harness) {
	h.start("tok-user", "alice")
	h.start("tok-guest", "")
	h.wantRefresh("tok-user", "", "alice")
	h.wantRefresh("tok-user", "item-a", "alice")
	h.wantRefresh("tok-guest", "", "")
	h.wantRefresh("tok-guest", "item-a", "")
	h.wantCount(2)
}

func testRefreshRecordsVisit(h *harness) {
	t0 := h.now()
	h.start("tok-1", "alice")
	h.clock.Advance(time.Minute)
	t1 := h.now()
	h.wantRefresh("tok-1", "item-a", "alice")
	h.wantUserSessions("alice", info("tok-1", "alice", t0, t1))
	h.clock.Advance(time.Minute)
	t2 := h.now()
	h.wantRefresh("tok-1", "", "alice")
	h.wantUserSessions("alice", info("tok-1", "alice", t0, t2))
	h.wantRefresh("tok-1", "item-b", "alice")
	h.wantRefresh("tok-1", "item-a", "alice")
	h.wantRecent("tok-1", "item-a", "item-b")
	h.wantTop(10, views("item-a", 2), views("item-b", 1))
}

func testRefreshNeverCreates(h *harness) {
	h.start("tok-gone", "carol")
	h.addToCart("tok-gone", "item-9", 1)
	h.logout("tok-gone")
	seed(h)
	before := h.state()
	// A token never seen, a logged-out one, and a name of the seeded state.
	for _, token := range []string{"never-seen", "tok-gone", "tok-new"} {
		h.wantNoRefresh(token, "item-9")
		h.wantNoRefresh(token, "")
	}
	h.wantNoSession("tok-gone")
	h.wantUnchanged(before, `RefreshSession of tokens without a session`)
	h.wantNoRank("item-9")
}

func testUpdateTokenCreatesOrRefreshes(h *harness) {
	t0 := h.now()
	h.update("tok-1", "alice", "item-a")
	h.wantUser("tok-1", "alice")
	h.wantUserSessions("alice", info("tok-1", "alice", t0, t0))
	h.clock.Advance(time.Minute)
	t1 := h.now()
	h.update("tok-1", "alice", "item-b")
	h.wantUserSessions("alice", info("tok-1", "alice", t0, t1))
	h.wantRecent("tok-1", "item-b", "item-a")
	h.wantCount(1)
	// It sets the user too, keeping the session's data; a change of user
	// is a login, which starts the lifetime again.
	h.addToCart("tok-1", "item-a", 1)
	h.update("tok-1", "bob", "")
	h.wantUser("tok-1", "bob")
	h.wantUserSessions("bob", info("tok-1", "bob", t1, t1))
	h.wantUserSessions("alice")
	h.wantCart("tok-1", map[string]int{"item-a": 1})
}

func testUpdateTokenReplacesExpired(h *harness) {
	h.update("tok-1", "alice", "item-a")
	h.addToCart("tok-1", "item-a", 1)
	h.setValue("tok-1", "flash", []byte("old"))
	h.clock.Advance(h.idle)
	t1 := h.now()
	h.update("tok-1", "alice", "item-b")
	h.wantUser("tok-1", "alice")
	h.wantRecent("tok-1", "item-b")
	h.wantCart("tok-1", nil)
	h.wantNoValue("tok-1", "flash")
	h.wantUserSessions("alice", info("tok-1", "alice", t1, t1))
	h.wantCount(1)
	h.wantTop(10, views("item-a", 1), views("item-b", 1))
}

// guestWithState starts a guest session that viewed item-a then item-b,
// has item-a x2 in its cart and "welcome" under "flash".
func guestWithState(h *harness, token string) {
	h.t.Helper()
	h.start(token, "")
	h.wantRefresh(token, "item-a", "")
	h.wantRefresh(token, "item-b", "")
	h.addToCart(token, "item-a", 2)
	h.setValue(token, "flash", []byte("welcome"))
}

func testRenewAsLogin(h *harness) {
	guestWithState(h, "tok-old")
	h.clock.Advance(10 * time.Minute)
	login := h.now()
	h.renew("tok-old", "tok-new", "alice")
	// The old token is dead as soon as RenewSession returns.
	h.wantNoSession("tok-old")
	h.wantUser("tok-new", "alice")
	h.wantRecent("tok-new", "item-b", "item-a")
	h.wantCart("tok-new", map[string]int{"item-a": 2})
	h.wantValue("tok-new", "flash", "welcome")
	h.wantUserSessions("alice", info("tok-new", "alice", login, login))
	h.wantCount(1)
	// Moving a session counts no views.
	h.wantTop(10, views("item-a", 1), views("item-b", 1))
}

func testRenewMovesUserIndex(h *harness) {
	t0 := h.now()
	h.start("tok-1", "alice")
	h.start("tok-2", "alice")
	h.start("tok-b", "bob")
	h.clock.Advance(time.Minute)
	t1 := h.now()
	h.renew("tok-1", "tok-3", "alice")
	h.wantUserSessions("alice", info("tok-2", "alice", t0, t0), info("tok-3", "alice", t1, t1))
	h.clock.Advance(time.Minute)
	t2 := h.now()
	// A login as another user moves the session to that user's list.
	h.renew("tok-2", "tok-4", "bob")
	h.wantUserSessions("alice", info("tok-3", "alice", t1, t1))
	h.wantUserSessions("bob", info("tok-b", "bob", t0, t0), info("tok-4", "bob", t2, t2))
	h.wantCount(3)
	if n := h.logoutUser("alice"); n != 1 {
		h.t.Errorf(`LogoutUser("alice") = %d, want 1`, n)
	}
	h.wantUser("tok-4", "bob")
	h.wantUser("tok-b", "bob")
}

func testRenewKeepsUser(h *harness) {
	t0 := h.now()
	h.start("tok-old", "alice")
	h.addToCart("tok-old", "item-a", 1)
	h.clock.Advance(10 * time.Minute)
	h.wantRefresh("tok-old", "item-a", "alice")
	h.clock.Advance(5 * time.Minute)
	t1 := h.now()
	h.renew("tok-old", "tok-new", "")
	h.wantNoSession("tok-old")
	h.wantUser("tok-new", "alice")
	h.wantRecent("tok-new", "item-a")
	h.wantCart("tok-new", map[string]int{"item-a": 1})
	h.wantUserSessions("alice", info("tok-new", "alice", t0, t1))

	// A guest stays a guest.
	h.start("guest-old", "")
	h.renew("guest-old", "guest-new", "")
	h.wantUser("guest-new", "")
	h.wantNoSession("guest-old")
	h.wantCount(2)
}

func testRenewedTokenStaysDead(h *harness) {
	guestWithState(h, "tok-old")
	h.renew("tok-old", "tok-new", "alice")
	// Requests that still carry the old token cannot bring it back.
	h.wantNoSessionWrites("tok-old")
	h.wantCount(1)
	h.wantCart("tok-new", map[string]int{"item-a": 2})
	h.wantValue("tok-new", "flash", "welcome")
}

func testRenewWithoutSession(h *harness) {
	h.start("tok-gone", "carol")
	h.logout("tok-gone")
	seed(h)
	before := h.state()
	for _, c := range []struct{ token, user string }{
		{"never-seen", "carol"}, {"never-seen", ""}, {"tok-gone", "carol"}, {"tok-gone", ""},
	} {
		if ok, err := h.s.RenewSession(h.ctx, c.token, "tok-new", c.user); ok || err != nil {
			h.t.Errorf("RenewSession(%q, \"tok-new\", %q) = %v, %v, want false, nil", c.token, c.user, ok, err)
		}
	}
	h.wantUnchanged(before, "RenewSession of tokens without a session")
}

func testRenewToLiveToken(h *harness) {
	seed(h)
	before := h.state()
	for _, c := range []struct{ token, newToken, user string }{
		{"tok-a", "tok-b", "carol"}, {"tok-a", "tok-b", ""}, {"tok-guest", "tok-a", "alice"}, {"tok-b", "tok-guest", ""},
	} {
		ok, err := h.s.RenewSession(h.ctx, c.token, c.newToken, c.user)
		h.wantErr(fmt.Sprintf("RenewSession(%q, %q, %q)", c.token, c.newToken, c.user), err, retail.ErrInvalid)
		if ok {
			h.t.Errorf("RenewSession(%q, %q, %q) = true, want false", c.token, c.newToken, c.user)
		}
	}
	h.wantUnchanged(before, "RenewSession to live tokens")
}

func testRenewOverExpired(h *harness) {
	h.start("tok-new", "alice")
	h.addToCart("tok-new", "item-a", 1)
	h.setValue("tok-new", "step", []byte("alice's"))
	h.clock.Advance(h.idle / 2)
	t1 := h.now()
	h.start("tok-old", "bob")
	h.addToCart("tok-old", "item-b", 2)
	h.setValue("tok-old", "flash", []byte("bob's"))
	h.clock.Advance(h.idle / 2) // tok-new has expired, tok-old has not
	t2 := h.now()
	h.renew("tok-old", "tok-new", "")
	h.wantUser("tok-new", "bob")
	h.wantCart("tok-new", map[string]int{"item-b": 2})
	h.wantValue("tok-new", "flash", "bob's")
	h.wantNoValue("tok-new", "step")
	h.wantUserSessions("bob", info("tok-new", "bob", t1, t2))
	h.wantUserSessions("alice")
	h.wantNoSession("tok-old")
}

func testRenewOfExpired(h *harness) {
	h.start("tok-old", "alice")
	h.addToCart("tok-old", "item-a", 1)
	h.clock.Advance(h.idle)
	if ok, err := h.s.RenewSession(h.ctx, "tok-old", "tok-new", "alice"); ok || err != nil {
		h.t.Errorf(`RenewSession("tok-old", "tok-new", "alice") of an expired session = %v, %v, want false, nil`, ok, err)
	}
	h.wantNoSession("tok-new")
	h.wantNoSession("tok-old")
	h.wantUserSessions("alice")
}
