package conformance

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/retailkit/retail"
)

// bookTests are the four scenarios the book's own tests check.
var bookTests = []behaviour{
	{name: "Book_LoginAndCleanup", test: testBookLoginAndCleanup},
	{name: "Book_ShoppingCart", test: testBookShoppingCart},
	{name: "Book_PageCaching", test: testBookPageCaching},
	{name: "Book_RowCaching", test: testBookRowCaching},
}

func testBookLoginAndCleanup(h *harness) {
	const token, user, item = "2b0e9f5e-book", "username", "itemX"
	h.update(token, user, item)
	h.wantUser(token, user)
	h.wantRecent(token, item)

	h.wantClean(0, 10_000_000, 1)
	h.wantCount(0)
	h.wantNoSession(token)
}

func testBookShoppingCart(h *harness) {
	const token, user, item = "7c1d-book-cart", "username", "itemY"
	h.update(token, user, "")
	h.addToCart(token, item, 3)
	h.wantCart(token, map[string]int{item: 3})

	h.wantClean(0, 10_000_000, 1)
	h.wantCart(token, nil)
	h.wantNoSession(token)
}

var sessionTests = []behaviour{
	{name: "Sessions_UnknownTokenMisses", test: testUnknownTokenMisses},
	{name: "Sessions_UpdateTokenCreatesSession", test: testUpdateTokenCreatesSession},
	{name: "Sessions_UpdateTokenOverwritesUser", test: testUpdateTokenOverwritesUser},
	{name: "Sessions_UpdateTokenWithoutItemViewsNothing", test: testUpdateTokenWithoutItem},
	{name: "Sessions_RecentItemsNewestFirst", test: testRecentNewestFirst},
	{name: "Sessions_RevisitMovesItemToFront", test: testRevisitMovesToFront},
	{name: "Sessions_RevisitAmongLookalikeItems", test: testRevisitAmongLookalikes},
	{name: "Sessions_RecentItemsKeepsNewest25", test: testRecentKeepsNewest},
	{name: "Sessions_RecentItemsPerSession", test: testRecentPerSession},
	{name: "Sessions_SessionCountCountsDistinctTokens", test: testSessionCountDistinct},
	{name: "Sessions_LogoutEndsSession", test: testLogoutEndsSession},
	{name: "Sessions_LogoutUnknownTokenIsNoOp", test: testLogoutUnknownToken},
	{name: "Sessions_LogoutKeepsViewCounts", test: testLogoutKeepsViews},
	{name: "Sessions_LogoutLeavesOtherSessions", test: testLogoutLeavesOthers},
	{name: "Sessions_NewSessionAfterLogoutStartsEmpty", test: testNewSessionAfterLogout},
	{name: "Sessions_UnicodeUserRoundTrips", test: testUnicodeUser},
	{name: "Sessions_UserMayHoldAnyValidUTF8", test: testUserAnyUTF8},
	{name: "Sessions_MaxLengthArgumentsAccepted", test: testSessionMaxLengths},
	{name: "Sessions_IDsAreOpaqueBytes", test: testIDsAreOpaque},
	{name: "Sessions_ReturnedRecentItemsAreCallers", test: testRecentIsCallers},
}

func testUnknownTokenMisses(h *harness) {
	if user, ok, err := h.s.CheckToken(h.ctx, "never-seen"); ok || err != nil {
		h.t.Errorf(`CheckToken("never-seen") = %q, %v, %v, want a miss: false, nil`, user, ok, err)
	}
	h.wantRecent("never-seen")
	h.wantCount(0)
}

func testUpdateTokenCreatesSession(h *harness) {
	h.update("tok-1", "alice", "")
	h.wantUser("tok-1", "alice")
	h.wantCount(1)
	if user, ok := h.checkToken("tok-2"); ok {
		h.t.Errorf(`CheckToken("tok-2") = %q, true, want a miss (only "tok-1" was updated)`, user)
	}
}

func testUpdateTokenOverwritesUser(h *harness) {
	h.update("tok-1", "alice", "item-a")
	h.update("tok-1", "bob", "item-b")
	h.wantUser("tok-1", "bob")
	h.wantRecent("tok-1", "item-b", "item-a")
	h.wantCount(1)
}

func testUpdateTokenWithoutItem(h *harness) {
	h.update("tok-1", "alice", "")
	h.wantRecent("tok-1")
	h.wantTop(10)

	// An update without an item keeps what was viewed before.
	h.update("tok-1", "alice", "item-a")
	h.update("tok-1", "alice", "")
	h.wantRecent("tok-1", "item-a")
	h.wantTop(10, views("item-a", 1))
}

func testRecentNewestFirst(h *harness) {
	for _, item := range []string{"item-a", "item-b", "item-c"} {
		h.update("tok-1", "alice", item)
	}
	h.wantRecent("tok-1", "item-c", "item-b", "item-a")
}

func testRevisitMovesToFront(h *harness) {
	for _, item := range []string{"item-a", "item-b", "item-c", "item-a"} {
		h.update("tok-1", "alice", item)
	}
	h.wantRecent("tok-1", "item-a", "item-c", "item-b")
	h.wantTop(10, views("item-a", 2), views("item-b", 1), views("item-c", 1))

	// Viewing the newest item again changes nothing but the count.
	h.update("tok-1", "alice", "item-a")
	h.wantRecent("tok-1", "item-a", "item-c", "item-b")
	h.wantTop(1, views("item-a", 3))
}

// testRevisitAmongLookalikes revisits items whose names hold each other
// (as prefix, suffix, inside), so that a backend that finds an item in
// its stored list by searching for its name must match whole names only.
func testRevisitAmongLookalikes(h *harness) {
	for _, item := range []string{"a-1", "a-12", "xa-1", "a-1x", "xa-1x"} {
		h.update("tok-1", "alice", item)
	}
	h.update("tok-1", "alice", "a-1")
	h.wantRecent("tok-1", "a-1", "xa-1x", "a-1x", "xa-1", "a-12")
	h.update("tok-1", "alice", "a-12")
	h.update("tok-1", "alice", "xa-1")
	h.wantRecent("tok-1", "xa-1", "a-12", "a-1", "xa-1x", "a-1x")
	h.update("tok-1", "alice", "a-")
	h.wantRecent("tok-1", "a-", "xa-1", "a-12", "a-1", "xa-1x", "a-1x")

	// An older item that ends with the name revisited.
	h.update("tok-2", "bob", "xa-1")
	h.update("tok-2", "bob", "a-1")
	h.wantRecent("tok-2", "a-1", "xa-1")
}

func testRecentKeepsNewest(h *harness) {
	items := seq("item", 30)
	for _, item := range items {
		h.update("tok-1", "alice", item)
	}
	want := slices.Clone(items[len(items)-retail.DefaultRecentLimit:])
	slices.Reverse(want)
	h.wantRecent("tok-1", want...)

	// An item that fell off the list comes back at the front, and the
	// oldest kept item falls off in its place.
	h.update("tok-1", "alice", items[0])
	want = append([]string{items[0]}, want[:len(want)-1]...)
	h.wantRecent("tok-1", want...)

	// Every view was counted, including those of items that fell off.
	if got := h.top(retail.MaxTopItems); len(got) != len(items) {
		h.t.Errorf("TopItems(%d) returned %d items, want %d: %v", retail.MaxTopItems, len(got), len(items), got)
	}

	// Items of one byte, the shortest there are: the list is cut at the
	// limit however few bytes it holds.
	var short []string
	for c := range retail.DefaultRecentLimit + 3 {
		short = append(short, string(rune('A'+c)))
	}
	for _, item := range short {
		h.update("tok-2", "bob", item)
	}
	want = slices.Clone(short[len(short)-retail.DefaultRecentLimit:])
	slices.Reverse(want)
	h.wantRecent("tok-2", want...)
}

func testRecentPerSession(h *harness) {
	h.update("tok-1", "alice", "item-a")
	h.update("tok-2", "bob", "item-b")
	h.update("tok-1", "alice", "item-c")
	h.wantRecent("tok-1", "item-c", "item-a")
	h.wantRecent("tok-2", "item-b")
	h.wantTop(10, views("item-a", 1), views("item-b", 1), views("item-c", 1))
}

func testSessionCountDistinct(h *harness) {
	h.wantCount(0)
	h.update("tok-1", "alice", "")
	h.update("tok-2", "bob", "item-a")
	h.update("tok-1", "alice", "item-b")
	h.update("tok-3", "alice", "")
	h.update("tok-2", "bob", "")
	h.wantCount(3)
}

func testLogoutEndsSession(h *harness) {
	h.update("tok-1", "alice", "item-a")
	h.update("tok-1", "alice", "item-b")
	h.addToCart("tok-1", "item-a", 2)
	h.logout("tok-1")
	h.wantNoSession("tok-1")
	h.wantCount(0)
}

func testLogoutUnknownToken(h *harness) {
	h.update("tok-1", "alice", "item-a")
	h.addToCart("tok-1", "item-a", 1)
	if err := h.s.Logout(h.ctx, "never-seen"); err != nil {
		h.t.Errorf(`Logout("never-seen") = %v, want nil`, err)
	}
	h.wantCount(1)
	h.wantUser("tok-1", "alice")
	h.wantRecent("tok-1", "item-a")
	h.wantCart("tok-1", map[string]int{"item-a": 1})

	// Logging out twice is logging out a token without a session.
	h.logout("tok-1")
	if err := h.s.Logout(h.ctx, "tok-1"); err != nil {
		h.t.Errorf(`second Logout("tok-1") = %v, want nil`, err)
	}
	h.wantCount(0)
}

func testLogoutKeepsViews(h *harness) {
	h.update("tok-1", "alice", "item-a")
	h.update("tok-1", "alice", "item-a")
	h.update("tok-2", "bob", "item-b")
	h.logout("tok-1")
	h.wantTop(10, views("item-a", 2), views("item-b", 1))
	h.wantRank("item-a", 0)
}

func testLogoutLeavesOthers(h *harness) {
	h.update("tok-1", "alice", "item-a")
	h.update("tok-2", "bob", "item-b")
	h.addToCart("tok-2", "item-b", 4)
	h.logout("tok-1")
	h.wantUser("tok-2", "bob")
	h.wantRecent("tok-2", "item-b")
	h.wantCart("tok-2", map[string]int{"item-b": 4})
	h.wantCount(1)
}

func testNewSessionAfterLogout(h *harness) {
	h.update("tok-1", "alice", "item-a")
	h.addToCart("tok-1", "item-a", 1)
	h.logout("tok-1")
	h.update("tok-1", "bob", "item-b")
	h.wantUser("tok-1", "bob")
	h.wantRecent("tok-1", "item-b")
	h.wantCart("tok-1", nil)
	h.wantCount(1)
}

func testUnicodeUser(h *harness) {
	users := map[string]string{
		"tok-1": "Zoë Ångström",
		"tok-2": "ユーザー名",
		"tok-3": "🛒 shopper 🛍️",
		"tok-4": "مستخدم",
	}
	wantUsersKept(h, users)
}

func testUserAnyUTF8(h *harness) {
	// The user rule is valid UTF-8 only: control characters, quotes and
	// separators are data.
	users := map[string]string{
		"tok-1": "line one\nline two\ttab",
		"tok-2": "nul\x00inside",
		"tok-3": `quote" back\slash 'single'`,
		"tok-4": "a:b{c}d*e?f",
		"tok-5": " ",
	}
	wantUsersKept(h, users)
}

// wantUsersKept logs each token in as its user, and then asserts that every
// token reads its own user back unchanged.
func wantUsersKept(h *harness, users map[string]string) {
	h.t.Helper()
	for token, user := range users {
		h.update(token, user, "")
	}
	for token, user := range users {
		h.wantUser(token, user)
	}
}

func testSessionMaxLengths(h *harness) {
	token := strings.Repeat("t", retail.MaxIDLen)
	item := strings.Repeat("i", retail.MaxIDLen)
	user := strings.Repeat("u", retail.MaxUserLen)
	h.update(token, user, item)
	h.wantUser(token, user)
	h.wantRecent(token, item)
	h.wantRank(item, 0)
	h.addToCart(token, item, 1)
	h.wantCart(token, map[string]int{item: 1})

	// The user limit is in bytes: 512 two-byte runes fill it exactly.
	wide := strings.Repeat("é", retail.MaxUserLen/2)
	h.update("tok-wide", wide, "")
	h.wantUser("tok-wide", wide)

	// One byte shorter than the limit is a different token.
	h.wantNoSession(token[1:])
	h.wantCount(2)
}

func testIDsAreOpaque(h *harness) {
	// Tokens and items are any bytes but ASCII control characters, so
	// characters that mean something to a backend's key scheme must not
	// make two ids collide.
	ids := []string{
		"a", "a:b", "a:", ":a", "{a}", "a}b{", "{", "}", "a b", "a*", "a?",
		"[a]", "a/b", `a\b`, "a%b", "ü", "日本", "\xff\xfe", "\x80",
	}
	user := func(i int) string { return fmt.Sprintf("user-%d", i) }
	for i, id := range ids {
		h.update(id, user(i), id)
		h.addToCart(id, id, i+1)
	}
	h.wantCount(len(ids))
	for i, id := range ids {
		h.wantUser(id, user(i))
		h.wantRecent(id, id)
		h.wantCart(id, map[string]int{id: i + 1})
	}
	if got := h.top(retail.MaxTopItems); len(got) != len(ids) {
		h.t.Errorf("TopItems(%d) returned %d items, want %d: %v", retail.MaxTopItems, len(got), len(ids), got)
	}
	// Keep one step of time so that the cleaning below is deterministic.
	h.clock.Advance(time.Second)
	h.update("a", user(0), "")
	h.wantClean(1, 100, len(ids)-1)
	h.wantUser("a", user(0))
	for _, id := range ids[1:] {
		h.wantNoSession(id)
	}
}

func testRecentIsCallers(h *harness) {
	h.update("tok-1", "alice", "item-a")
	h.update("tok-1", "alice", "item-b")
	got := h.recent("tok-1")
	if len(got) != 2 {
		h.t.Fatalf(`RecentItems("tok-1") = %q, want 2 items`, got)
	}
	got[0] = "changed"
	got[1] = "changed"
	h.wantRecent("tok-1", "item-b", "item-a")
}
