package conformance

import (
	"errors"
	"fmt"
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
	{name: "Carts_IncrementAdds", test: testCartIncrementAdds},
	{name: "Carts_IncrementNegativeDecrements", test: testCartIncrementNegative},
	{name: "Carts_IncrementToZeroRemovesLine", test: testCartIncrementToZero},
	{name: "Carts_IncrementBeyondMaxCountRejected", test: testCartIncrementTooMany},
	{name: "Carts_LineLimitRejectsNewLine", test: testCartLineLimit},
	{name: "Carts_IncrementNoSessionRejected", test: testCartIncrementNoSession},
	{name: "Carts_ExpiredSessionCartIsEmpty", test: testCartExpired},
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

func testCartIncrementAdds(h *harness) {
	h.start("tok-1", "")
	h.wantIncrement("tok-1", "item-a", 1, 1)
	h.wantIncrement("tok-1", "item-a", 2, 3)
	h.wantIncrement("tok-1", "item-b", 5, 5)
	h.wantCart("tok-1", map[string]int{"item-a": 3, "item-b": 5})
	// AddToCart and IncrementCart work on the same lines.
	h.addToCart("tok-1", "item-a", 10)
	h.wantIncrement("tok-1", "item-a", 1, 11)
	h.wantCart("tok-1", map[string]int{"item-a": 11, "item-b": 5})
	// Incrementing by zero reads the line.
	h.wantIncrement("tok-1", "item-b", 0, 5)
	h.wantTop(10)
}

func testCartIncrementNegative(h *harness) {
	h.start("tok-1", "")
	h.addToCart("tok-1", "item-a", 5)
	h.wantIncrement("tok-1", "item-a", -2, 3)
	h.wantIncrement("tok-1", "item-a", -1, 2)
	h.wantCart("tok-1", map[string]int{"item-a": 2})
}

func testCartIncrementToZero(h *harness) {
	h.start("tok-1", "")
	h.addToCart("tok-1", "item-a", 2)
	h.addToCart("tok-1", "item-b", 2)
	h.addToCart("tok-1", "item-c", 1)
	h.wantIncrement("tok-1", "item-a", -2, 0)
	h.wantCart("tok-1", map[string]int{"item-b": 2, "item-c": 1})
	h.wantIncrement("tok-1", "item-b", -retail.MaxCartCount, 0)
	h.wantCart("tok-1", map[string]int{"item-c": 1})
	// A decrement of a line that is not there leaves it not there.
	h.wantIncrement("tok-1", "item-z", -1, 0)
	h.wantIncrement("tok-1", "item-z", 0, 0)
	h.wantCart("tok-1", map[string]int{"item-c": 1})
	// A line that went is new again.
	h.wantIncrement("tok-1", "item-a", 1, 1)
	h.wantCart("tok-1", map[string]int{"item-a": 1, "item-c": 1})
}

func testCartIncrementTooMany(h *harness) {
	h.start("tok-1", "")
	h.wantIncrement("tok-1", "item-a", retail.MaxCartCount-1, retail.MaxCartCount-1)
	h.wantIncrement("tok-1", "item-a", 1, retail.MaxCartCount)
	for _, n := range []int{1, retail.MaxCartCount} {
		count, err := h.s.IncrementCart(h.ctx, "tok-1", "item-a", n)
		h.wantErr(fmt.Sprintf(`IncrementCart("tok-1", "item-a", %d) at the maximum count`, n), err, retail.ErrInvalid)
		if count != 0 {
			h.t.Errorf(`IncrementCart("tok-1", "item-a", %d) failed with count %d, want 0`, n, count)
		}
	}
	h.addToCart("tok-1", "item-b", 9_000)
	_, err := h.s.IncrementCart(h.ctx, "tok-1", "item-b", 1_001)
	h.wantErr(`IncrementCart("tok-1", "item-b", 1001) at 9000`, err, retail.ErrInvalid)
	h.wantCart("tok-1", map[string]int{"item-a": retail.MaxCartCount, "item-b": 9_000})
	h.wantIncrement("tok-1", "item-b", 1_000, retail.MaxCartCount)
}

func testCartLineLimit(h *harness) {
	h.start("tok-1", "")
	full := make(map[string]int, retail.MaxCartLines)
	for i, item := range seq("item", retail.MaxCartLines) {
		if i%2 == 0 {
			h.addToCart("tok-1", item, 1)
		} else {
			h.wantIncrement("tok-1", item, 1, 1)
		}
		full[item] = 1
	}
	h.wantCart("tok-1", full)

	h.wantErr(`AddToCart("tok-1", "item-new", 1) in a full cart`, h.s.AddToCart(h.ctx, "tok-1", "item-new", 1), retail.ErrInvalid)
	_, err := h.s.IncrementCart(h.ctx, "tok-1", "item-new", 1)
	h.wantErr(`IncrementCart("tok-1", "item-new", 1) in a full cart`, err, retail.ErrInvalid)
	h.wantCart("tok-1", full)

	// Lines already there change; removing a line that is not there, and
	// a decrement of one, are not new lines.
	h.addToCart("tok-1", "item-000", 5)
	h.wantIncrement("tok-1", "item-001", 2, 3)
	h.addToCart("tok-1", "item-new", 0)
	h.wantIncrement("tok-1", "item-new", -1, 0)
	full["item-000"], full["item-001"] = 5, 3
	h.wantCart("tok-1", full)

	// The limit is per cart, and a removed line makes room.
	h.start("tok-2", "")
	h.addToCart("tok-2", "item-new", 1)
	h.wantIncrement("tok-1", "item-002", -1, 0)
	h.wantIncrement("tok-1", "item-new", 1, 1)
	h.wantErr(`AddToCart("tok-1", "item-002", 1) in a full cart`, h.s.AddToCart(h.ctx, "tok-1", "item-002", 1), retail.ErrInvalid)
	h.addToCart("tok-1", "item-003", 0)
	h.addToCart("tok-1", "item-002", 1)
	if got := len(h.cart("tok-1")); got != retail.MaxCartLines {
		h.t.Errorf(`Cart("tok-1") has %d lines, want %d`, got, retail.MaxCartLines)
	}
}

func testCartIncrementNoSession(h *harness) {
	h.start("tok-gone", "")
	h.addToCart("tok-gone", "item-a", 1)
	h.logout("tok-gone")
	for _, token := range []string{"never-seen", "tok-gone"} {
		for _, n := range []int{1, 0, -1} {
			count, err := h.s.IncrementCart(h.ctx, token, "item-a", n)
			h.wantErr(fmt.Sprintf(`IncrementCart(%q, "item-a", %d)`, token, n), err, retail.ErrNoSession)
			if count != 0 {
				h.t.Errorf(`IncrementCart(%q, "item-a", %d) failed with count %d, want 0`, token, n, count)
			}
		}
		h.wantNoSession(token)
	}
	h.wantCount(0)
}

func testCartExpired(h *harness) {
	h.start("tok-1", "")
	h.addToCart("tok-1", "item-a", 2)
	h.clock.Advance(h.idle)
	h.wantCart("tok-1", nil)
	h.wantErr(`AddToCart("tok-1", "item-a", 1) after expiry`, h.s.AddToCart(h.ctx, "tok-1", "item-a", 1), retail.ErrNoSession)
	_, err := h.s.IncrementCart(h.ctx, "tok-1", "item-a", 1)
	h.wantErr(`IncrementCart("tok-1", "item-a", 1) after expiry`, err, retail.ErrNoSession)
	// A session started again under the token has an empty cart.
	h.start("tok-1", "")
	h.wantCart("tok-1", nil)
}
