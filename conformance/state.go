package conformance

import (
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
)

// The tests that check "writes nothing" seed a store with a little of
// everything, make the call, and compare everything a user can read (and
// the names the calls use) before and after.

var (
	stateTokens = []string{"tok-a", "tok-b", "tok-guest", "tok-new"}
	stateUsers  = []string{"alice", "bob", "carol"}
	statePages  = []string{"page-a", "page-new"}
	stateRows   = []string{"row-a", "row-new"}
)

// state is what a user can read from a store without changing it.
// ClaimDueRows changes what it reads, so it is checked once, after.
type state struct {
	Sessions int
	Tokens   map[string]sessionState
	Users    map[string][]retail.SessionInfo // with their times: a refresh shows
	Top      []retail.ItemViews
	Pages    map[string]stored
	Rows     map[string]stored
}

type sessionState struct {
	User     string
	LoggedIn bool
	Recent   []string
	Cart     map[string]int
	Values   map[string]stored // under valueKeys
}

type stored struct {
	Data string
	OK   bool
}

// seed gives the store two users' sessions and a guest's, with views, carts
// and values, a view without a session, a cached page, and a cached row
// that is scheduled and due; then it moves the clock a second, so that a
// call that refreshes a session changes what UserSessions reads.
func seed(h *harness) {
	h.t.Helper()
	h.start("tok-a", "alice")
	h.wantRefresh("tok-a", "item-1", "alice")
	h.addToCart("tok-a", "item-1", 2)
	h.setValue("tok-a", "flash", []byte("saved"))
	h.update("tok-b", "bob", "item-2")
	h.update("tok-b", "bob", "item-1")
	h.start("tok-guest", "")
	h.wantIncrement("tok-guest", "item-3", 1, 1)
	h.setValue("tok-guest", "step", []byte{})
	h.countView("item-4")
	h.setPage("page-a", []byte("<p>a</p>"), time.Minute)
	h.setRow("row-a", []byte(`{"id":"a"}`))
	h.schedule("row-a", time.Minute)
	h.clock.Advance(time.Second)
}

func (h *harness) state() state {
	h.t.Helper()
	st := state{
		Sessions: h.sessionCount(),
		Tokens:   make(map[string]sessionState),
		Users:    make(map[string][]retail.SessionInfo),
		Top:      h.top(retail.MaxTopItems),
		Pages:    make(map[string]stored),
		Rows:     make(map[string]stored),
	}
	for _, token := range stateTokens {
		user, ok := h.checkToken(token)
		values := make(map[string]stored)
		for _, key := range valueKeys {
			v, ok := h.value(token, key)
			values[key] = stored{Data: string(v), OK: ok}
		}
		st.Tokens[token] = sessionState{User: user, LoggedIn: ok, Recent: h.recent(token), Cart: h.cart(token), Values: values}
	}
	for _, user := range stateUsers {
		st.Users[user] = h.userSessions(user)
	}
	for _, key := range statePages {
		body, ok := h.page(key)
		st.Pages[key] = stored{Data: string(body), OK: ok}
	}
	for _, row := range stateRows {
		data, ok := h.row(row)
		st.Rows[row] = stored{Data: string(data), OK: ok}
	}
	return st
}

// wantStateAsBefore asserts that the store reads as before, as
// wantUnchanged does, but without claiming the seeded row: it can check
// after each of several calls.
func (h *harness) wantStateAsBefore(before state, call string) {
	h.t.Helper()
	if diff := cmp.Diff(before, h.state(), equateEmpty); diff != "" {
		h.t.Errorf("%s wrote to the store (-before +after):\n%s", call, diff)
	}
}

// wantUnchanged asserts that the store reads as before, and that the row
// seed scheduled is still due and unclaimed; call reads like "op(args)".
func (h *harness) wantUnchanged(before state, call string) {
	h.t.Helper()
	h.wantStateAsBefore(before, call)
	if diff := cmp.Diff([]string{"row-a"}, h.claim(retail.MaxClaimRows), equateEmpty); diff != "" {
		h.t.Errorf("ClaimDueRows(%d) after %s mismatch (-want +got):\n%s", retail.MaxClaimRows, call, diff)
	}
}
