package conformance

import (
	"fmt"

	"github.com/retailkit/retail"
)

var viewTests = []behaviour{
	{name: "Views_UnviewedItemHasNoRank", test: testViewsUnviewed},
	{name: "Views_OnlyItemIsRankZero", test: testViewsOnlyItemRankZero},
	{name: "Views_MostViewedIsRankZero", test: testViewsMostViewedFirst},
	{name: "Views_TiesRankedByName", test: testViewsTiesByName},
	{name: "Views_TiesRankedByNameBelowMoreViewed", test: testViewsTiesBelowMoreViewed},
	{name: "Views_TiesRankedByWholeName", test: testViewsTiesWholeName},
	{name: "Views_TopItemsOrderAndCounts", test: testViewsTopItems},
	{name: "Views_CountedAcrossSessions", test: testViewsAcrossSessions},
	{name: "Views_TopItemsReturnsFewerIfFewerExist", test: testViewsTopFewer},
	{name: "Views_TopItemsZeroIsEmpty", test: testViewsTopZero},
	{name: "Views_EmptyStoreHasNoTopItems", test: testViewsTopEmptyStore},
	{name: "Views_RescaleKeepsTopAndScales", test: testViewsRescale},
	{name: "Views_RescaleBreaksTiesByName", test: testViewsRescaleTie},
	{name: "Views_RescaleKeepZeroRemovesAll", test: testViewsRescaleKeepZero},
	{name: "Views_RescaleFactorOneKeepsCounts", test: testViewsRescaleFactorOne},
	{name: "Views_RescaleKeepMoreThanExist", test: testViewsRescaleKeepMore},
	{name: "Views_CountsAddAfterRescale", test: testViewsAddAfterRescale},
	{name: "Views_NewItemsCatchUpAfterRescale", test: testViewsCatchUp},
	{name: "Views_DroppedItemCountsFromZero", test: testViewsDroppedThenViewed},
	{name: "Views_RescaleLeavesSessions", test: testViewsRescaleLeavesSessions},
	{name: "Views_ReturnedTopItemsAreCallers", test: testViewsTopIsCallers},
	{name: "Views_CountViewWithoutSession", test: testViewsCountView},
	{name: "Views_CountViewAndRefreshCountAlike", test: testViewsCountViewAndRefresh},
}

// view counts n views of item, by one session.
func view(h *harness, item string, n int) {
	h.t.Helper()
	for range n {
		h.update("viewer", "viewer", item)
	}
}

func testViewsUnviewed(h *harness) {
	rank, ok, err := h.s.ItemRank(h.ctx, "item-a")
	if ok || err != nil {
		h.t.Errorf(`ItemRank("item-a") = %d, %v, %v, want no rank: false, nil`, rank, ok, err)
	}
	view(h, "item-b", 1)
	h.wantNoRank("item-a")
}

func testViewsOnlyItemRankZero(h *harness) {
	view(h, "item-a", 1)
	h.wantRank("item-a", 0)
}

func testViewsMostViewedFirst(h *harness) {
	view(h, "item-a", 3)
	view(h, "item-b", 1)
	view(h, "item-c", 2)
	h.wantRank("item-a", 0)
	h.wantRank("item-c", 1)
	h.wantRank("item-b", 2)
	// One more view of item-b ties it with item-c, and name order decides.
	view(h, "item-b", 1)
	h.wantRank("item-b", 1)
	h.wantRank("item-c", 2)
}

func testViewsTiesByName(h *harness) {
	for _, item := range []string{"b", "a", "c"} {
		view(h, item, 1)
	}
	h.wantRank("a", 0)
	h.wantRank("b", 1)
	h.wantRank("c", 2)
	h.wantTop(10, views("a", 1), views("b", 1), views("c", 1))
}

func testViewsTiesBelowMoreViewed(h *harness) {
	view(h, "z", 2)
	for _, item := range []string{"b", "a", "c"} {
		view(h, item, 1)
	}
	h.wantRank("z", 0)
	h.wantRank("a", 1)
	h.wantRank("b", 2)
	h.wantRank("c", 3)
	// Names compare as bytes: upper case before lower case, "a" before "aa".
	view(h, "aa", 1)
	view(h, "B", 1)
	h.wantTop(10, views("z", 2), views("B", 1), views("a", 1), views("aa", 1), views("b", 1), views("c", 1))
}

func testViewsTiesWholeName(h *harness) {
	// Names that differ only late, or where one is a prefix of another,
	// still rank in byte order of the whole name.
	const p = "an-item-name-with-a-long-shared-prefix-"
	names := []string{p + "b", p, p + "a", p + "a-", p + "\xff", p + "B"}
	for _, item := range names {
		view(h, item, 1)
	}
	view(h, "first", 2)
	h.wantTop(10, views("first", 2), views(p, 1), views(p+"B", 1), views(p+"a", 1),
		views(p+"a-", 1), views(p+"b", 1), views(p+"\xff", 1))
	h.wantRank(p+"a", 3)
	h.wantRank(p+"\xff", 6)
}

func testViewsTopItems(h *harness) {
	view(h, "item-a", 2)
	view(h, "item-b", 5)
	view(h, "item-c", 1)
	view(h, "item-d", 3)
	h.wantTop(10, views("item-b", 5), views("item-d", 3), views("item-a", 2), views("item-c", 1))
	h.wantTop(2, views("item-b", 5), views("item-d", 3))
	h.wantTop(1, views("item-b", 5))
}

func testViewsAcrossSessions(h *harness) {
	h.update("tok-1", "alice", "item-a")
	h.update("tok-2", "bob", "item-a")
	h.update("tok-3", "carol", "item-a")
	h.update("tok-1", "alice", "item-b")
	h.update("tok-1", "alice", "item-a")
	h.update("tok-2", "bob", "")
	h.wantTop(10, views("item-a", 4), views("item-b", 1))
}

func testViewsTopFewer(h *harness) {
	view(h, "item-a", 1)
	view(h, "item-b", 2)
	h.wantTop(100, views("item-b", 2), views("item-a", 1))
	h.wantTop(retail.MaxTopItems, views("item-b", 2), views("item-a", 1))
}

func testViewsTopZero(h *harness) {
	view(h, "item-a", 1)
	h.wantTop(0)
}

func testViewsTopEmptyStore(h *harness) {
	h.wantTop(10)
	h.wantTop(retail.MaxTopItems)
}

func testViewsRescale(h *harness) {
	view(h, "item-a", 4)
	view(h, "item-b", 3)
	view(h, "item-c", 2)
	view(h, "item-d", 1)
	h.rescale(2, 0.5)
	h.wantTop(10, views("item-a", 2), views("item-b", 1.5))
	h.wantRank("item-a", 0)
	h.wantRank("item-b", 1)
	h.wantNoRank("item-c")
	h.wantNoRank("item-d")
}

func testViewsRescaleTie(h *harness) {
	view(h, "item-z", 3)
	view(h, "item-b", 1)
	view(h, "item-a", 1)
	h.rescale(2, 0.5)
	h.wantTop(10, views("item-z", 1.5), views("item-a", 0.5))
	h.wantNoRank("item-b")
}

func testViewsRescaleKeepZero(h *harness) {
	view(h, "item-a", 2)
	view(h, "item-b", 1)
	h.rescale(0, 0.5)
	h.wantTop(10)
	h.wantNoRank("item-a")
	h.wantNoRank("item-b")
}

func testViewsRescaleFactorOne(h *harness) {
	view(h, "item-a", 3)
	view(h, "item-b", 1)
	h.rescale(10, 1)
	h.wantTop(10, views("item-a", 3), views("item-b", 1))
}

func testViewsRescaleKeepMore(h *harness) {
	view(h, "item-a", 3)
	view(h, "item-b", 1)
	h.rescale(20_000, 0.5)
	h.wantTop(10, views("item-a", 1.5), views("item-b", 0.5))
}

func testViewsAddAfterRescale(h *harness) {
	view(h, "item-a", 3)
	h.rescale(10, 0.5)
	h.wantTop(10, views("item-a", 1.5))
	view(h, "item-a", 1)
	h.wantTop(10, views("item-a", 2.5))
	// Scaling twice compounds.
	h.rescale(10, 0.5)
	h.wantTop(10, views("item-a", 1.25))
}

func testViewsCatchUp(h *harness) {
	view(h, "old", 4)
	h.rescale(10, 0.5)
	view(h, "new", 3)
	h.wantRank("new", 0)
	h.wantRank("old", 1)
	h.wantTop(10, views("new", 3), views("old", 2))
}

func testViewsDroppedThenViewed(h *harness) {
	view(h, "item-a", 5)
	view(h, "item-b", 2)
	h.rescale(1, 0.5)
	h.wantNoRank("item-b")
	view(h, "item-b", 1)
	h.wantTop(10, views("item-a", 2.5), views("item-b", 1))
}

func testViewsRescaleLeavesSessions(h *harness) {
	h.update("tok-1", "alice", "item-a")
	h.update("tok-1", "alice", "item-b")
	h.addToCart("tok-1", "item-a", 1)
	h.rescale(0, 0.5)
	h.wantUser("tok-1", "alice")
	h.wantRecent("tok-1", "item-b", "item-a")
	h.wantCart("tok-1", map[string]int{"item-a": 1})
}

func testViewsTopIsCallers(h *harness) {
	view(h, "item-a", 2)
	view(h, "item-b", 1)
	got := h.top(10)
	if len(got) != 2 {
		h.t.Fatalf("TopItems(10) = %v, want 2 items", got)
	}
	for i := range got {
		got[i] = views(fmt.Sprint("changed-", i), 100)
	}
	h.wantTop(10, views("item-a", 2), views("item-b", 1))
}

func testViewsCountView(h *harness) {
	h.countView("item-a")
	h.countView("item-b")
	h.countView("item-b")
	h.wantRank("item-b", 0)
	h.wantRank("item-a", 1)
	h.wantTop(10, views("item-b", 2), views("item-a", 1))
	// A view without a session writes no session.
	h.wantCount(0)
	h.wantNoSession("item-a")
}

func testViewsCountViewAndRefresh(h *harness) {
	h.start("tok-1", "")
	h.wantRefresh("tok-1", "item-a", "")
	h.countView("item-a")
	h.countView("item-b")
	h.update("tok-2", "bob", "item-b")
	h.countView("item-b")
	h.wantTop(10, views("item-b", 3), views("item-a", 2))
	// Only a session's own views are its recent items.
	h.wantRecent("tok-1", "item-a")
	h.wantRecent("tok-2", "item-b")
	h.rescale(1, 0.5)
	h.countView("item-a")
	h.wantTop(10, views("item-b", 1.5), views("item-a", 1))
}
