package conformance

import (
	"time"
)

// userTests pin the per-user index: UserSessions lists a user's live
// sessions, and LogoutUser ends them all.
var userTests = []behaviour{
	{name: "Users_ListsLiveSessionsByCreation", test: testUsersList},
	{name: "Users_TimesAtMillisecondResolution", test: testUsersMilliseconds},
	{name: "Users_GuestsAndOtherUsersNotListed", test: testUsersOthersNotListed},
	{name: "Users_ExpiredSessionsNotListed", test: testUsersExpiredNotListed},
	{name: "Users_LogoutRemovesEntry", test: testUsersLogout},
	{name: "Users_CleaningRemovesEntry", test: testUsersCleaning},
	{name: "Users_UpdateTokenMovesEntryToNewUser", test: testUsersUpdateTokenMoves},
	{name: "Users_LogoutUserEndsEverySession", test: testUsersLogoutUser},
	{name: "Users_LogoutUserWithoutSessionsIsNoOp", test: testUsersLogoutUserNone},
	{name: "Users_LoginInLogoutUsersMillisecondIsOver", test: testUsersLoginInLogoutUsersMillisecond},
	{name: "Users_TokenOfASessionLoggedOutEverywhereIsFree", test: testUsersTokenLoggedOutEverywhereFree},
	{name: "Users_UpdateTokenOfASessionLoggedOutEverywhereStartsAnew", test: testUsersUpdateTokenLoggedOutEverywhere},
}

func testUsersList(h *harness) {
	t0 := h.now()
	h.start("tok-b", "alice")
	h.clock.Advance(time.Second)
	t1 := h.now()
	// Started in the same millisecond: ordered by token.
	h.start("tok-c", "alice")
	h.start("tok-a", "alice")
	h.clock.Advance(time.Second)
	t2 := h.now()
	h.wantRefresh("tok-b", "item-a", "alice")
	h.wantUserSessions("alice",
		info("tok-b", "alice", t0, t2),
		info("tok-a", "alice", t1, t1),
		info("tok-c", "alice", t1, t1))
}

func testUsersMilliseconds(h *harness) {
	// Stores read the clock at millisecond resolution: what is under a
	// millisecond is dropped.
	h.clock.Advance(1234567 * time.Nanosecond)
	t0 := h.now()
	h.start("tok-1", "alice")
	h.clock.Advance(2500 * time.Microsecond)
	t1 := h.now()
	h.wantRefresh("tok-1", "item-a", "alice") // a new item: written, whenever it comes
	got := h.userSessions("alice")
	if len(got) != 1 {
		h.t.Fatalf(`UserSessions("alice") = %+v, want 1 session`, got)
	}
	if !got[0].Created.Equal(t0) || !got[0].LastSeen.Equal(t1) {
		h.t.Errorf(`UserSessions("alice") = %+v, want Created %v and LastSeen %v: the clock's times truncated to milliseconds`,
			got[0], t0, t1)
	}
}

func testUsersOthersNotListed(h *harness) {
	t0 := h.now()
	h.start("tok-a", "alice")
	h.start("tok-b", "bob")
	h.start("tok-g", "")
	h.update("tok-u", "alicE", "")
	h.wantUserSessions("alice", info("tok-a", "alice", t0, t0))
	h.wantUserSessions("bob", info("tok-b", "bob", t0, t0))
	h.wantUserSessions("carol")
	h.wantUserSessions("alic")
}

func testUsersExpiredNotListed(h *harness) {
	t0 := h.now()
	h.start("tok-idle", "alice")
	h.start("tok-old", "alice")
	h.clock.Advance(h.idle / 2)
	t1 := h.now()
	h.start("tok-new", "alice")
	// tok-idle is never refreshed; tok-old is, until its lifetime ends.
	h.wantRefresh("tok-old", "", "alice")
	both := func() {
		h.t.Helper()
		h.wantRefresh("tok-old", "", "alice")
		h.wantRefresh("tok-new", "", "alice")
	}
	var seen time.Time
	h.wantEndAt(t0.Add(h.lifetime), both, func() {
		seen = h.now()
		h.wantUserSessions("alice", info("tok-old", "alice", t0, seen), info("tok-new", "alice", t1, seen))
	}, func() { h.wantUserSessions("alice", info("tok-new", "alice", t1, seen)) })
}

func testUsersLogout(h *harness) {
	t0 := h.now()
	h.start("tok-1", "alice")
	h.start("tok-2", "alice")
	h.logout("tok-1")
	h.wantUserSessions("alice", info("tok-2", "alice", t0, t0))
	h.logout("tok-2")
	h.wantUserSessions("alice")
	// A new session under a logged-out token is listed as new.
	h.clock.Advance(time.Second)
	t1 := h.now()
	h.start("tok-1", "alice")
	h.wantUserSessions("alice", info("tok-1", "alice", t1, t1))
}

func testUsersCleaning(h *harness) {
	h.start("tok-1", "alice")
	h.clock.Advance(time.Second)
	t1 := h.now()
	h.start("tok-2", "alice")
	h.start("tok-3", "bob")
	h.wantClean(2, 100, 1)
	h.wantUserSessions("alice", info("tok-2", "alice", t1, t1))
	h.wantClean(0, 100, 2)
	h.wantUserSessions("alice")
	h.wantUserSessions("bob")
	// Started again, the token's session is new.
	h.start("tok-1", "alice")
	h.wantUserSessions("alice", info("tok-1", "alice", t1, t1))
}

func testUsersUpdateTokenMoves(h *harness) {
	h.start("tok-1", "alice")
	h.clock.Advance(time.Second)
	t1 := h.now()
	h.update("tok-1", "bob", "")
	h.wantUserSessions("alice")
	// A change of user is a login: the lifetime starts again.
	h.wantUserSessions("bob", info("tok-1", "bob", t1, t1))
	if n := h.logoutUser("alice"); n != 0 {
		h.t.Errorf(`LogoutUser("alice") = %d after tok-1 moved to bob, want 0`, n)
	}
	h.wantUser("tok-1", "bob")
}

func testUsersLogoutUser(h *harness) {
	h.start("tok-expired", "alice")
	h.clock.Advance(h.idle)
	tokens := []string{"tok-1", "tok-2", "tok-3"}
	for _, token := range tokens {
		liveSession(h, token, "alice")
	}
	t1 := h.now()
	liveSession(h, "tok-b", "bob")
	liveSession(h, "tok-g", "")
	if n := h.logoutUser("alice"); n != len(tokens) {
		h.t.Errorf(`LogoutUser("alice") = %d with %d live and 1 expired session, want %d`, n, len(tokens), len(tokens))
	}
	for _, token := range append(tokens, "tok-expired") {
		h.wantNoSession(token)
		h.wantNoRefresh(token, "")
	}
	h.wantUserSessions("alice")
	// Other sessions are untouched, and the expired one of alice was
	// removed too.
	h.wantLive("tok-b", "bob")
	h.wantUser("tok-g", "")
	h.wantCart("tok-g", map[string]int{"item-a": 1})
	h.wantUserSessions("bob", info("tok-b", "bob", t1, t1))
	h.wantCount(2)
	if n := h.logoutUser("alice"); n != 0 {
		h.t.Errorf(`second LogoutUser("alice") = %d, want 0`, n)
	}
}

func testUsersLogoutUserNone(h *harness) {
	seed(h)
	before := h.state()
	if n, err := h.s.LogoutUser(h.ctx, "carol"); n != 0 || err != nil {
		h.t.Errorf(`LogoutUser("carol") = %d, %v, want 0, nil`, n, err)
	}
	h.wantUnchanged(before, `LogoutUser("carol")`)
}

// A login in the millisecond a LogoutUser began in is over, as those
// before: it is listed nowhere, and a second LogoutUser ends no live
// session.
func testUsersLoginInLogoutUsersMillisecond(h *harness) {
	h.logoutUser("alice")
	h.start("tok-1", "alice")
	h.wantUserSessions("alice")
	if n := h.logoutUser("alice"); n != 0 {
		h.t.Errorf(`LogoutUser("alice") again = %d, want 0: its only session was over already`, n)
	}
	h.wantNoSession("tok-1")
}

// The token of a session that its user logged out of everywhere, not yet
// removed, is free: for a new session and for a renewal.
func testUsersTokenLoggedOutEverywhereFree(h *harness) {
	h.logoutUser("alice")
	h.start("tok-1", "alice") // over: logged in in the LogoutUser's millisecond
	h.start("tok-2", "alice")
	h.clock.Advance(time.Millisecond)
	h.start("tok-1", "bob")
	h.wantUser("tok-1", "bob")
	h.start("tok-g", "")
	h.renew("tok-g", "tok-2", "")
	h.wantUser("tok-2", "")
	h.wantNoSession("tok-g")
}

// UpdateToken of another user on the token of a session that its user
// logged out of everywhere, not yet removed, starts a new session: what
// the ended one held is not the new user's.
func testUsersUpdateTokenLoggedOutEverywhere(h *harness) {
	h.logoutUser("alice")
	h.update("tok-1", "alice", "item-secret") // over: logged in in the LogoutUser's millisecond
	h.clock.Advance(time.Millisecond)
	h.update("tok-1", "bob", "")
	h.wantUser("tok-1", "bob")
	h.wantRecent("tok-1")
	h.wantUserSessions("alice")
}
