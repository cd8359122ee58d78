package conformance

import (
	"fmt"
	"sync"
	"time"

	"github.com/retailkit/retail"
)

// sessionLimit is the MaxSessionsPerUser under which limitTests run.
const sessionLimit = 3

// limitTests pin MaxSessionsPerUser (see retail.StoreOptions): a login
// that leaves a user more live sessions ends the least recently seen
// others (of those seen alike, the oldest), never its own, and however
// logins interleave the user ends with at most the limit. Guests and other
// users do not count. They run with a Store whose MaxSessionsPerUser is
// sessionLimit.
var limitTests = []behaviour{
	{name: "Limit_LoginEndsLeastRecentlySeen", test: testLimitEndsLeastRecent},
	{name: "Limit_SameLastSeenEndsTheOlderCreated", test: testLimitTie},
	{name: "Limit_RenewalIsNoLogin", test: testLimitRenewal},
	{name: "Limit_ConcurrentLoginsLeaveAtMostTheLimit", test: testLimitConcurrent},
}

func testLimitEndsLeastRecent(h *harness) {
	t0 := h.now()
	for i := 1; i <= sessionLimit; i++ {
		h.start(fmt.Sprintf("tok-%d", i), "alice")
		h.clock.Advance(time.Millisecond)
	}
	h.start("tok-bob", "bob")
	h.start("tok-guest", "")
	// tok-1 is seen again (a new item is written whatever TouchEvery):
	// tok-2 is now the least recently seen.
	h.wantRefresh("tok-1", "item-a", "alice")
	h.clock.Advance(time.Millisecond)
	t4 := h.now()
	h.start("tok-4", "alice")
	h.wantNoSession("tok-2")
	t1, t3 := t0, t0.Add(2*time.Millisecond)
	h.wantUserSessions("alice",
		info("tok-1", "alice", t1, t4.Add(-time.Millisecond)),
		info("tok-3", "alice", t3, t3),
		info("tok-4", "alice", t4, t4))
	// A guest's login by RenewSession is a login too: tok-3 goes.
	h.clock.Advance(time.Millisecond)
	t5 := h.now()
	h.renew("tok-guest", "tok-5", "alice")
	h.wantNoSession("tok-3")
	h.wantUserSessions("alice",
		info("tok-1", "alice", t1, t4.Add(-time.Millisecond)),
		info("tok-4", "alice", t4, t4),
		info("tok-5", "alice", t5, t5))
	h.wantUser("tok-bob", "bob")
}

// testLimitTie gives alice's sessions one last-seen time, and different
// creation times: the login ends the oldest.
func testLimitTie(h *harness) {
	t0 := h.now()
	// Started a millisecond apart, newest first, so that neither the
	// order of the starts nor that of the tokens picks the oldest.
	for i := sessionLimit; i >= 1; i-- {
		h.start(fmt.Sprintf("tok-%d", i), "alice")
		h.clock.Advance(time.Millisecond)
	}
	// A new item is written whatever TouchEvery: all are last seen now.
	seen := h.now()
	for i := 1; i <= sessionLimit; i++ {
		h.wantRefresh(fmt.Sprintf("tok-%d", i), "item-a", "alice")
	}
	h.start("tok-new", "alice")
	oldest := fmt.Sprintf("tok-%d", sessionLimit)
	h.wantNoSession(oldest)
	want := []retail.SessionInfo{info("tok-new", "alice", seen, seen)}
	for i := 1; i < sessionLimit; i++ {
		created := t0.Add(time.Duration(sessionLimit-i) * time.Millisecond)
		want = append(want, info(fmt.Sprintf("tok-%d", i), "alice", created, seen))
	}
	h.wantUserSessions("alice", want...)
}

func testLimitRenewal(h *harness) {
	t0 := h.now()
	for i := 1; i <= sessionLimit; i++ {
		h.start(fmt.Sprintf("tok-%d", i), "alice")
	}
	// A renewal keeps the user's count: nothing ends.
	h.renew("tok-1", "tok-new", "")
	h.wantUserSessions("alice",
		info("tok-2", "alice", t0, t0),
		info("tok-3", "alice", t0, t0),
		info("tok-new", "alice", t0, t0))
}

func testLimitConcurrent(h *harness) {
	const logins = 100
	var wg sync.WaitGroup
	for i := range logins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			token := fmt.Sprintf("tok-%d", i)
			var err error
			if i%2 == 0 {
				_, err = h.s.StartSession(h.ctx, token, "alice")
			} else {
				guest := "guest-" + token
				if _, err = h.s.StartSession(h.ctx, guest, ""); err == nil {
					_, err = h.s.RenewSession(h.ctx, guest, token, "alice")
				}
			}
			if err != nil {
				h.t.Errorf("login %s = %v, want nil", token, err)
			}
		}()
	}
	wg.Wait()
	live := 0
	for i := range logins {
		if _, ok := h.checkToken(fmt.Sprintf("tok-%d", i)); ok {
			live++
		}
	}
	if live < 1 || live > sessionLimit {
		h.t.Errorf("after %d concurrent logins of alice, %d tokens are live, want 1..%d", logins, live, sessionLimit)
	}
	if n := len(h.userSessions("alice")); n != live {
		h.t.Errorf("UserSessions(alice) lists %d sessions, want the %d live", n, live)
	}
	h.wantCount(live)
}
