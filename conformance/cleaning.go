package conformance

import (
	"fmt"
	"github.com/retailkit/retail"
	"slices"
	"time"
)

var cleaningTests = []behaviour{
	{name: "Clean_RemovesLeastRecentlySeen", test: testCleanOldestFirst},
	{name: "Clean_RefreshedSessionIsYoung", test: testCleanRefreshMakesYoung},
	{name: "Clean_NeverMoreThanMax", test: testCleanNeverMoreThanMax},
	{name: "Clean_KeepsNewestKeep", test: testCleanKeepsNewest},
	{name: "Clean_AtOrBelowKeepRemovesNothing", test: testCleanAtOrBelowKeep},
	{name: "Clean_EmptyStoreRemovesNothing", test: testCleanEmptyStore},
	{name: "Clean_MaxZeroRemovesNothing", test: testCleanMaxZero},
	{name: "Clean_RepeatedPassesDrainOldestFirst", test: testCleanRepeatedPasses},
	{name: "Clean_RemovedSessionLeavesNothing", test: testCleanLeavesNothing},
	{name: "Clean_KeepsViewCounts", test: testCleanKeepsViews},
	{name: "Clean_NewSessionAfterCleaningStartsEmpty", test: testCleanThenNewSession},
	{name: "Clean_SessionRefreshedDuringPassSurvives", test: testCleanRefreshDuringPass},
	{name: "Clean_SessionRefreshedAsPassStartsSurvives", test: testCleanRefreshAsPassStarts},
	{name: "Clean_RefreshSessionDuringPassSurvives", test: testCleanRefreshSessionDuringPass},
	{name: "Repair_WholeStoreNeedsNone", test: testRepairWholeStore},
}

// agedSessions creates one session a token, a second apart, oldest first,
// each with a cart line, a viewed item and a value, and moves the clock a
// second past the newest.
func agedSessions(h *harness, tokens []string) {
	h.t.Helper()
	for _, token := range tokens {
		h.update(token, "user-"+token, "item-"+token)
		h.addToCart(token, "item-"+token, 1)
		h.setValue(token, "flash", []byte(token))
		h.clock.Advance(time.Second)
	}
}

// wantAlive asserts that exactly the sessions in alive are live among tokens.
func wantAlive(h *harness, tokens []string, alive ...string) {
	h.t.Helper()
	live := make(map[string]bool, len(alive))
	for _, token := range alive {
		live[token] = true
	}
	for _, token := range tokens {
		if live[token] {
			h.wantUser(token, "user-"+token)
			h.wantRecent(token, "item-"+token)
			h.wantCart(token, map[string]int{"item-" + token: 1})
			h.wantValue(token, "flash", token)
			if got := h.userSessions("user-" + token); len(got) != 1 || got[0].ID != retail.SessionID(token) {
				h.t.Errorf("UserSessions(%q) = %+v, want %q's session", "user-"+token, got, token)
			}
		} else {
			h.wantNoSession(token)
			h.wantUserSessions("user-" + token)
		}
	}
	h.wantCount(len(alive))
}

func testCleanOldestFirst(h *harness) {
	// Aged in reverse name order, so that name order cannot pass for age
	// order.
	tokens := seq("tok", 5)
	slices.Reverse(tokens)
	agedSessions(h, tokens)
	h.wantClean(2, 100, 3)
	wantAlive(h, tokens, tokens[3:]...)
}

func testCleanRefreshMakesYoung(h *harness) {
	tokens := seq("tok", 4)
	agedSessions(h, tokens)
	// The oldest session is seen again: it is now the youngest.
	h.update(tokens[0], "user-"+tokens[0], "")
	h.clock.Advance(time.Second)
	h.wantClean(2, 100, 2)
	wantAlive(h, tokens, tokens[0], tokens[3])
}

func testCleanNeverMoreThanMax(h *harness) {
	tokens := seq("tok", 10)
	agedSessions(h, tokens)
	h.wantClean(0, 3, 3)
	wantAlive(h, tokens, tokens[3:]...)
	h.wantClean(2, 1, 1)
	wantAlive(h, tokens, tokens[4:]...)
}

func testCleanKeepsNewest(h *harness) {
	tokens := seq("tok", 10)
	agedSessions(h, tokens)
	h.wantClean(4, 100, 6)
	wantAlive(h, tokens, tokens[6:]...)
}

func testCleanAtOrBelowKeep(h *harness) {
	tokens := seq("tok", 5)
	agedSessions(h, tokens)
	h.wantClean(5, 100, 0)
	h.wantClean(6, 100, 0)
	h.wantClean(1_000_000, 1_000_000, 0)
	wantAlive(h, tokens, tokens...)
}

func testCleanEmptyStore(h *harness) {
	h.wantClean(0, 100, 0)
	h.wantCount(0)
}

func testCleanMaxZero(h *harness) {
	tokens := seq("tok", 3)
	agedSessions(h, tokens)
	h.wantClean(0, 0, 0)
	wantAlive(h, tokens, tokens...)
}

func testCleanRepeatedPasses(h *harness) {
	tokens := seq("tok", 250)
	agedSessions(h, tokens)
	h.wantClean(0, 100, 100)
	wantAlive(h, tokens, tokens[100:]...)
	h.wantClean(0, 100, 100)
	wantAlive(h, tokens, tokens[200:]...)
	h.wantClean(0, 100, 50)
	h.wantClean(0, 100, 0)
	wantAlive(h, tokens)
}

func testCleanLeavesNothing(h *harness) {
	tokens := seq("tok", 6)
	for i, token := range tokens {
		for j := 0; j <= i; j++ {
			h.update(token, "user-"+token, fmt.Sprintf("item-%d", j))
		}
		h.addToCart(token, "item-0", i+1)
		h.addToCart(token, "item-x", 1)
		for _, key := range valueKeys {
			h.setValue(token, key, []byte(key))
		}
		h.clock.Advance(time.Second)
	}
	h.wantClean(3, 100, 3)
	for _, token := range tokens[:3] {
		h.wantNoSession(token)
		h.wantUserSessions("user-" + token)
		// No cart or value can outlive its session.
		h.wantNoSessionWrites(token)
	}
	for _, token := range tokens[3:] {
		h.wantUser(token, "user-"+token)
		h.wantValue(token, "csrf", "csrf")
	}
	h.wantCountOf(tokens)
}

func testCleanKeepsViews(h *harness) {
	h.update("tok-1", "alice", "item-a")
	h.update("tok-1", "alice", "item-b")
	h.update("tok-2", "bob", "item-a")
	h.wantClean(0, 100, 2)
	h.wantTop(10, views("item-a", 2), views("item-b", 1))
}

func testCleanThenNewSession(h *harness) {
	h.update("tok-1", "alice", "item-a")
	h.addToCart("tok-1", "item-a", 5)
	h.wantClean(0, 100, 1)
	h.update("tok-1", "bob", "item-b")
	h.wantUser("tok-1", "bob")
	h.wantRecent("tok-1", "item-b")
	h.wantCart("tok-1", nil)
	h.wantCount(1)
}

// testRepairWholeStore repairs a store whose every call succeeded: there is
// nothing to mend, on any backend, and the repair changes no session.
func testRepairWholeStore(h *harness) {
	tokens := seq("tok", 6)
	agedSessions(h, tokens)
	h.logout(tokens[1])
	h.wantClean(3, 1, 1) // removes tokens[0]
	n, err := h.s.RepairSessions(h.ctx)
	if n != 0 || err != nil {
		h.t.Errorf("RepairSessions() = %d, %v; want 0, nil on a store no failure touched", n, err)
	}
	wantAlive(h, tokens, tokens[2:]...)
	h.wantClean(0, 100, 4) // every session still indexed, and cleaned
}
