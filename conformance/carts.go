package conformance

import (
	"errors"
	"math"

	"github.com/retailkit/retail"
)

var cartTests = []behaviour{
	{name: "Carts_AddSetsCount", test: testCartAdd},
	{name: "Carts_AddOverwritesCount", test: testCartOverwrite},
	{name: "Carts_ZeroCountRemovesLine", test: testCartZeroRemoves},
	{name: "Carts_NegativeCountRemovesLine", test: testCartNegativeRemoves},
	{name: "Carts_RemovingMissingLineIsNoOp", test: testCartRemoveMissing},
	{name: "Carts_UnknownTokenIsEmpty", test: testCartUnknownToken},
	{name: "Carts_PerSession", test: testCartPerSession},
	{name: "Carts_NoSessionRejected", test: testCartNoSession},
	{name: "Carts_NoSessionRejectedForRemoval", test: testCartNoSessionRemoval},
	{name: "Carts_AfterLogoutRejected", test: testCartAfterLogout},
	{name: "Carts_MaxCountAccepted", test: testCartMaxCount},
	{name: "Carts_DoNotCountViews", test: testCartNoViews},
	{name: "Carts_ReturnedMapIsCallers", test: testCartIsCallers},
}

func testCartAdd(h *harness) {
	h.update("tok-1", "alice", "")
	h.addToCart("tok-1", "item-a", 3)
	h.wantCart("tok-1", map[string]int{"item-a": 3})
	h.addToCart("tok-1", "item-b", 1)
	h.wantCart("tok-1", map[string]int{"item-a": 3, "item-b": 1})
}

func testCartOverwrite(h *harness) {
	h.update("tok-1", "alice", "")
	h.addToCart("tok-1", "item-a", 3)
	h.addToCart("tok-1", "item-a", 5)
	h.wantCart("tok-1", map[string]int{"item-a": 5})
	h.addToCart("tok-1", "item-a", 1)
	h.wantCart("tok-1", map[string]int{"item-a": 1})
}

func testCartZeroRemoves(h *harness) {
	h.update("tok-1", "alice", "")
	h.addToCart("tok-1", "item-a", 3)
	h.addToCart("tok-1", "item-b", 1)
	h.addToCart("tok-1", "item-a", 0)
	h.wantCart("tok-1", map[string]int{"item-b": 1})
	h.addToCart("tok-1", "item-b", 0)
	h.wantCart("tok-1", nil)
	// An empty cart does not end the session.
	h.wantUser("tok-1", "alice")
	h.wantCount(1)
}

func testCartNegativeRemoves(h *harness) {
	h.update("tok-1", "alice", "")
	h.addToCart("tok-1", "item-a", 3)
	h.addToCart("tok-1", "item-b", 2)
	h.addToCart("tok-1", "item-a", -1)
	h.wantCart("tok-1", map[string]int{"item-b": 2})
	h.addToCart("tok-1", "item-b", math.MinInt)
	h.wantCart("tok-1", nil)
}

func testCartRemoveMissing(h *harness) {
	h.update("tok-1", "alice", "")
	h.addToCart("tok-1", "item-z", 0)
	h.wantCart("tok-1", nil)
	h.addToCart("tok-1", "item-a", 2)
	h.addToCart("tok-1", "item-z", 0)
	h.addToCart("tok-1", "item-z", -3)
	h.wantCart("tok-1", map[string]int{"item-a": 2})
}

func testCartUnknownToken(h *harness) {
	c, err := h.s.Cart(h.ctx, "never-seen")
	if err != nil || len(c) != 0 {
		h.t.Errorf(`Cart("never-seen") = %v, %v, want empty, nil`, c, err)
	}
}

func testCartPerSession(h *harness) {
	h.update("tok-1", "alice", "")
	h.update("tok-2", "bob", "")
	h.addToCart("tok-1", "item-a", 1)
	h.addToCart("tok-2", "item-a", 7)
	h.addToCart("tok-2", "item-b", 2)
	h.wantCart("tok-1", map[string]int{"item-a": 1})
	h.wantCart("tok-2", map[string]int{"item-a": 7, "item-b": 2})
}

// wantNoSessionError asserts that AddToCart fails with ErrNoSession and
// leaves token without a session or cart.
func wantNoSessionError(h *harness, token, item string, count int) {
	h.t.Helper()
	before := h.sessionCount()
	if err := h.s.AddToCart(h.ctx, token, item, count); !errors.Is(err, retail.ErrNoSession) {
		h.t.Errorf("AddToCart(%q, %q, %d) = %v, want an error matching ErrNoSession", token, item, count, err)
	}
	h.wantNoSession(token)
	h.wantCount(before)
}

func testCartNoSession(h *harness) {
	h.update("tok-1", "alice", "")
	wantNoSessionError(h, "never-seen", "item-a", 1)
	// The failed call did not create a session that a later one could use.
	wantNoSessionError(h, "never-seen", "item-a", 2)
	h.wantCart("tok-1", nil)
}

func testCartNoSessionRemoval(h *harness) {
	wantNoSessionError(h, "never-seen", "item-a", 0)
	wantNoSessionError(h, "never-seen", "item-a", -1)
}

func testCartAfterLogout(h *harness) {
	h.update("tok-1", "alice", "")
	h.addToCart("tok-1", "item-a", 1)
	h.logout("tok-1")
	wantNoSessionError(h, "tok-1", "item-a", 2)
	wantNoSessionError(h, "tok-1", "item-b", 1)
}

func testCartMaxCount(h *harness) {
	h.update("tok-1", "alice", "")
	h.addToCart("tok-1", "item-a", retail.MaxCartCount)
	h.wantCart("tok-1", map[string]int{"item-a": retail.MaxCartCount})
}

func testCartNoViews(h *harness) {
	h.update("tok-1", "alice", "")
	h.addToCart("tok-1", "item-a", 2)
	h.wantRecent("tok-1")
	h.wantNoRank("item-a")
	h.wantTop(10)
}

func testCartIsCallers(h *harness) {
	h.update("tok-1", "alice", "")
	h.addToCart("tok-1", "item-a", 2)
	h.addToCart("tok-1", "item-b", 3)
	got := h.cart("tok-1")
	if got == nil {
		h.t.Fatalf(`Cart("tok-1") = nil, want 2 lines`)
	}
	got["item-a"] = 100
	delete(got, "item-b")
	got["item-c"] = 1
	h.wantCart("tok-1", map[string]int{"item-a": 2, "item-b": 3})
}
