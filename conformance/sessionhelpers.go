package conformance

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
)

// Helpers for the session lifecycle, session values and the per-user index,
// in the style of helpers.go: call one Store method and fail the test on an
// unexpected error, or assert an outcome.

// valueKeys are the session value keys behaviours use, so that wantNoSession
// can check that none of them outlives its session.
var valueKeys = []string{"flash", "step", "csrf"}

// now is the clock's time at the millisecond resolution Stores read it at.
func (h *harness) now() time.Time { return h.clock.Now().Truncate(time.Millisecond) }

func (h *harness) start(token, user string) {
	h.t.Helper()
	created, err := h.s.StartSession(h.ctx, token, user)
	if err != nil || !created {
		h.t.Fatalf("StartSession(%q, %q) = %v, %v, want true, nil", token, user, created, err)
	}
}

func (h *harness) refresh(token, item string) (string, bool) {
	h.t.Helper()
	user, ok, err := h.s.RefreshSession(h.ctx, token, item)
	if err != nil {
		h.t.Fatalf("RefreshSession(%q, %q) = %v, want nil error", token, item, err)
	}
	return user, ok
}

// wantRefresh asserts that RefreshSession finds token's live session,
// logged in as user.
func (h *harness) wantRefresh(token, item, user string) {
	h.t.Helper()
	if got, ok := h.refresh(token, item); !ok || got != user {
		h.t.Errorf("RefreshSession(%q, %q) = %q, %v, want %q, true", token, item, got, ok, user)
	}
}

// wantNoRefresh asserts that RefreshSession finds no live session.
func (h *harness) wantNoRefresh(token, item string) {
	h.t.Helper()
	if got, ok := h.refresh(token, item); ok {
		h.t.Errorf("RefreshSession(%q, %q) = %q, true, want a miss", token, item, got)
	}
}

func (h *harness) renew(token, newToken, user string) {
	h.t.Helper()
	ok, err := h.s.RenewSession(h.ctx, token, newToken, user)
	if err != nil || !ok {
		h.t.Fatalf("RenewSession(%q, %q, %q) = %v, %v, want true, nil", token, newToken, user, ok, err)
	}
}

// touchStep is how long after a session's last write a refresh is written
// again: TouchEvery, or a millisecond if every visit is written.
func (h *harness) touchStep() time.Duration { return max(h.touch, time.Millisecond) }

// keepVisiting moves the clock on and calls visit, a refresh that must be
// written, every idle timeout less touchStep, while more than an idle
// timeout is left before until. Each visit is then written and the session
// stays live, and a visit at until-1ms is too: it comes between touchStep
// and an idle timeout less 1 ms after the last one.
func (h *harness) keepVisiting(until time.Time, visit func()) {
	h.t.Helper()
	for h.clock.Now().Add(h.idle).Before(until) {
		h.clock.Advance(h.idle - h.touchStep())
		visit()
	}
}

// refreshing returns a visit for keepVisiting and wantEndAt: a refresh
// that must find token's session, logged in as user.
func (h *harness) refreshing(token, user string) func() {
	return func() {
		h.t.Helper()
		h.wantRefresh(token, "", user)
	}
}

// wantEndAt checks that a session ends at end to the millisecond, however
// often it is visited. It calls visit as keepVisiting says up to end and
// once more a millisecond before end, where it then calls live, if not
// nil, to check what the session still has. It then sets the clock to end
// and calls gone, which checks that the session has ended.
func (h *harness) wantEndAt(end time.Time, visit, live, gone func()) {
	h.t.Helper()
	h.keepVisiting(end, visit)
	h.clock.Set(end.Add(-time.Millisecond))
	visit()
	if live != nil {
		live()
	}
	h.clock.Set(end)
	gone()
}

func (h *harness) increment(token, item string, n int) int {
	h.t.Helper()
	count, err := h.s.IncrementCart(h.ctx, token, item, n)
	if err != nil {
		h.t.Fatalf("IncrementCart(%q, %q, %d) = %v, want nil error", token, item, n, err)
	}
	return count
}

func (h *harness) wantIncrement(token, item string, n, want int) {
	h.t.Helper()
	if got := h.increment(token, item, n); got != want {
		h.t.Errorf("IncrementCart(%q, %q, %d) = %d, want %d", token, item, n, got, want)
	}
}

func (h *harness) countView(item string) {
	h.t.Helper()
	if err := h.s.CountView(h.ctx, item); err != nil {
		h.t.Fatalf("CountView(%q) = %v, want nil", item, err)
	}
}

func (h *harness) setValue(token, key string, value []byte) {
	h.t.Helper()
	if err := h.s.SetValue(h.ctx, token, key, value); err != nil {
		h.t.Fatalf("SetValue(%q, %q, %d bytes) = %v, want nil", token, key, len(value), err)
	}
}

func (h *harness) value(token, key string) ([]byte, bool) {
	h.t.Helper()
	v, ok, err := h.s.Value(h.ctx, token, key)
	if err != nil {
		h.t.Fatalf("Value(%q, %q) = %v, want nil error", token, key, err)
	}
	return v, ok
}

func (h *harness) wantValue(token, key, want string) {
	h.t.Helper()
	if got, ok := h.value(token, key); !ok || string(got) != want {
		h.t.Errorf("Value(%q, %q) = %q, %v, want %q, true", token, key, got, ok, want)
	}
}

func (h *harness) wantNoValue(token, key string) {
	h.t.Helper()
	if got, ok := h.value(token, key); ok {
		h.t.Errorf("Value(%q, %q) = %q, true, want a miss", token, key, got)
	}
}

func (h *harness) userSessions(user string) []retail.SessionInfo {
	h.t.Helper()
	infos, err := h.s.UserSessions(h.ctx, user)
	if err != nil {
		h.t.Fatalf("UserSessions(%q) = %v, want nil error", user, err)
	}
	return infos
}

// wantUserSessions asserts what UserSessions(user) lists, in order. Times
// compare with time.Time.Equal, so their location does not matter.
func (h *harness) wantUserSessions(user string, want ...retail.SessionInfo) {
	h.t.Helper()
	// UserSessions lists them oldest first, then by ID.
	slices.SortStableFunc(want, func(a, b retail.SessionInfo) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if diff := cmp.Diff(want, h.userSessions(user), equateEmpty); diff != "" {
		h.t.Errorf("UserSessions(%q) mismatch (-want +got):\n%s", user, diff)
	}
}

// wantUnlisted asserts that UserSessions(user) does not list token.
func (h *harness) wantUnlisted(user, token string) {
	h.t.Helper()
	for _, info := range h.userSessions(user) {
		if info.ID == retail.SessionID(token) {
			h.t.Errorf("UserSessions(%q) lists %q (%+v), want it gone", user, token, info)
		}
	}
}

func (h *harness) logoutUser(user string) int {
	h.t.Helper()
	n, err := h.s.LogoutUser(h.ctx, user)
	if err != nil {
		h.t.Fatalf("LogoutUser(%q) = %v, want nil error", user, err)
	}
	return n
}

// info is a SessionInfo; it keeps expected UserSessions results short.
func info(token, user string, created, lastSeen time.Time) retail.SessionInfo {
	return retail.SessionInfo{ID: retail.SessionID(token), User: user, Created: created, LastSeen: lastSeen}
}

// wantErr asserts that a call failed with an error matching target; call
// reads like "op(args)".
func (h *harness) wantErr(call string, err, target error) {
	h.t.Helper()
	if !errors.Is(err, target) {
		h.t.Errorf("%s = %v, want an error matching %v", call, err, target)
	}
}

// wantNoSessionWrites asserts that every write that needs a live session
// fails with ErrNoSession for token, and that none of them (nor a
// RefreshSession) gives it a session.
func (h *harness) wantNoSessionWrites(token string) {
	h.t.Helper()
	h.wantNoRefresh(token, "item-late")
	h.wantErr(fmt.Sprintf("AddToCart(%q, \"item-late\", 1)", token), h.s.AddToCart(h.ctx, token, "item-late", 1), retail.ErrNoSession)
	_, err := h.s.IncrementCart(h.ctx, token, "item-late", 1)
	h.wantErr(fmt.Sprintf("IncrementCart(%q, \"item-late\", 1)", token), err, retail.ErrNoSession)
	h.wantErr(fmt.Sprintf("SetValue(%q, \"flash\", \"late\")", token), h.s.SetValue(h.ctx, token, "flash", []byte("late")), retail.ErrNoSession)
	h.wantNoSession(token)
}
