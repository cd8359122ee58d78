package conformance

import "time"

// A visit of a session written less than TouchEvery ago that views no new
// item writes nothing (see retail.DefaultTouchEvery). What a visit wrote is
// seen in the session's last-seen time, which UserSessions reports and by
// which the session idles out. These behaviours run under every session
// times of the suite (see Config).

var touchTests = []behaviour{
	{name: "Touch_VisitsWithinTouchEveryWriteNothing", test: testTouchQuietVisits},
	{name: "Touch_NewItemIsWrittenAtOnce", test: testTouchNewItem},
	{name: "Touch_IdleExpiryWithinTouchEvery", test: testTouchExpiry},
}

func testTouchQuietVisits(h *harness) {
	t0 := h.now()
	h.start("tok-1", "alice")
	for range 5 {
		h.clock.Advance(h.touch / 10)
		h.wantRefresh("tok-1", "", "alice")
	}
	h.wantUserSessions("alice", info("tok-1", "alice", t0, t0))
	// Once TouchEvery has passed since it was written, a visit writes it.
	h.clock.Set(t0.Add(h.touch))
	t1 := h.now()
	h.wantRefresh("tok-1", "", "alice")
	h.wantUserSessions("alice", info("tok-1", "alice", t0, t1))
	h.clock.Advance(h.touch - time.Millisecond)
	h.wantRefresh("tok-1", "", "alice")
	h.wantUserSessions("alice", info("tok-1", "alice", t0, t1))
}

func testTouchNewItem(h *harness) {
	// Visits a second apart, or less, so that two fit in TouchEvery.
	step := min(time.Second, ((h.touch - time.Millisecond) / 2).Truncate(time.Millisecond))
	t0 := h.now()
	h.start("tok-1", "alice")
	h.clock.Advance(step)
	t1 := h.now()
	h.wantRefresh("tok-1", "item-a", "alice") // new: written
	h.wantUserSessions("alice", info("tok-1", "alice", t0, t1))
	h.clock.Advance(step)
	h.wantRefresh("tok-1", "item-a", "alice") // the newest again: not written
	h.wantUserSessions("alice", info("tok-1", "alice", t0, t1))
	h.clock.Advance(step)
	t3 := h.now()
	h.wantRefresh("tok-1", "item-b", "alice")
	h.wantRefresh("tok-1", "item-a", "alice") // back to the front: written
	h.wantRecent("tok-1", "item-a", "item-b")
	h.wantUserSessions("alice", info("tok-1", "alice", t0, t3))
	// The views count whether or not the visit was written.
	if rank, ok := h.rank("item-a"); rank != 0 || !ok {
		h.t.Errorf("ItemRank(item-a) = %d, %v, want 0, true (3 views against 1)", rank, ok)
	}
	if top := h.top(2); len(top) != 2 || top[0].Views != 3 || top[1].Views != 1 {
		h.t.Errorf("TopItems(2) = %v, want item-a 3, item-b 1", top)
	}
}

func testTouchExpiry(h *harness) {
	t0 := h.now()
	h.start("tok-1", "alice")
	// Visits just short of TouchEvery are not written: the session idles
	// out from its start, not from them.
	h.clock.Advance(h.touch - time.Millisecond)
	h.wantRefresh("tok-1", "", "alice")
	h.clock.Set(t0.Add(h.idle - time.Millisecond))
	h.wantUser("tok-1", "alice")
	h.clock.Set(t0.Add(h.idle))
	h.wantNoSession("tok-1")
}
