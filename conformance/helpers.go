package conformance

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/retailkit/retail"
)

// equateEmpty makes nil and empty slices and maps equal: the contract allows
// either for an empty result.
var equateEmpty = cmpopts.EquateEmpty()

// Helpers that call one Store method and fail the test on an error.

func (h *harness) update(token, user, item string) {
	h.t.Helper()
	if err := h.s.UpdateToken(h.ctx, token, user, item); err != nil {
		h.t.Fatalf("UpdateToken(%q, %q, %q) = %v, want nil", token, user, item, err)
	}
}

func (h *harness) checkToken(token string) (string, bool) {
	h.t.Helper()
	user, ok, err := h.s.CheckToken(h.ctx, token)
	if err != nil {
		h.t.Fatalf("CheckToken(%q) = %v, want nil error", token, err)
	}
	return user, ok
}

func (h *harness) recent(token string) []string {
	h.t.Helper()
	items, err := h.s.RecentItems(h.ctx, token)
	if err != nil {
		h.t.Fatalf("RecentItems(%q) = %v, want nil error", token, err)
	}
	return items
}

func (h *harness) logout(token string) {
	h.t.Helper()
	if err := h.s.Logout(h.ctx, token); err != nil {
		h.t.Fatalf("Logout(%q) = %v, want nil", token, err)
	}
}

func (h *harness) sessionCount() int {
	h.t.Helper()
	n, err := h.s.SessionCount(h.ctx)
	if err != nil {
		h.t.Fatalf("SessionCount() = %v, want nil error", err)
	}
	return n
}

func (h *harness) clean(keep, max int) int {
	h.t.Helper()
	n, err := h.s.CleanSessions(h.ctx, keep, max)
	if err != nil {
		h.t.Fatalf("CleanSessions(%d, %d) = %v, want nil error", keep, max, err)
	}
	return n
}

func (h *harness) addToCart(token, item string, count int) {
	h.t.Helper()
	if err := h.s.AddToCart(h.ctx, token, item, count); err != nil {
		h.t.Fatalf("AddToCart(%q, %q, %d) = %v, want nil", token, item, count, err)
	}
}

func (h *harness) cart(token string) map[string]int {
	h.t.Helper()
	c, err := h.s.Cart(h.ctx, token)
	if err != nil {
		h.t.Fatalf("Cart(%q) = %v, want nil error", token, err)
	}
	return c
}

func (h *harness) page(key string) ([]byte, bool) {
	h.t.Helper()
	body, ok, err := h.s.Page(h.ctx, key)
	if err != nil {
		h.t.Fatalf("Page(%q) = %v, want nil error", key, err)
	}
	return body, ok
}

func (h *harness) setPage(key string, body []byte, ttl time.Duration) {
	h.t.Helper()
	if err := h.s.SetPage(h.ctx, key, body, ttl); err != nil {
		h.t.Fatalf("SetPage(%q, %d bytes, %v) = %v, want nil", key, len(body), ttl, err)
	}
}

func (h *harness) schedule(row string, delay time.Duration) {
	h.t.Helper()
	if err := h.s.ScheduleRowCache(h.ctx, row, delay); err != nil {
		h.t.Fatalf("ScheduleRowCache(%q, %v) = %v, want nil", row, delay, err)
	}
}

func (h *harness) claim(limit int) []string {
	h.t.Helper()
	rows, err := h.s.ClaimDueRows(h.ctx, limit)
	if err != nil {
		h.t.Fatalf("ClaimDueRows(%d) = %v, want nil error", limit, err)
	}
	return rows
}

func (h *harness) row(row string) ([]byte, bool) {
	h.t.Helper()
	data, ok, err := h.s.Row(h.ctx, row)
	if err != nil {
		h.t.Fatalf("Row(%q) = %v, want nil error", row, err)
	}
	return data, ok
}

func (h *harness) setRow(row string, data []byte) {
	h.t.Helper()
	if err := h.s.SetRow(h.ctx, row, data); err != nil {
		h.t.Fatalf("SetRow(%q, %d bytes) = %v, want nil", row, len(data), err)
	}
}

func (h *harness) rank(item string) (int, bool) {
	h.t.Helper()
	rank, ok, err := h.s.ItemRank(h.ctx, item)
	if err != nil {
		h.t.Fatalf("ItemRank(%q) = %v, want nil error", item, err)
	}
	return rank, ok
}

func (h *harness) top(n int) []retail.ItemViews {
	h.t.Helper()
	items, err := h.s.TopItems(h.ctx, n)
	if err != nil {
		h.t.Fatalf("TopItems(%d) = %v, want nil error", n, err)
	}
	return items
}

func (h *harness) rescale(keep int, factor float64) {
	h.t.Helper()
	if err := h.s.RescaleViews(h.ctx, keep, factor); err != nil {
		h.t.Fatalf("RescaleViews(%d, %v) = %v, want nil", keep, factor, err)
	}
}

// Helpers that assert an outcome.

func (h *harness) wantUser(token, want string) {
	h.t.Helper()
	if got, ok := h.checkToken(token); !ok || got != want {
		h.t.Errorf("CheckToken(%q) = %q, %v, want %q, true", token, got, ok, want)
	}
}

// wantNoSession asserts that token has no session and nothing of one: no
// user, recent items, cart, or value under any of valueKeys.
func (h *harness) wantNoSession(token string) {
	h.t.Helper()
	if got, ok := h.checkToken(token); ok {
		h.t.Errorf("CheckToken(%q) = %q, true, want a miss", token, got)
	}
	if got := h.recent(token); len(got) != 0 {
		h.t.Errorf("RecentItems(%q) = %q, want empty", token, got)
	}
	if got := h.cart(token); len(got) != 0 {
		h.t.Errorf("Cart(%q) = %v, want empty", token, got)
	}
	for _, key := range valueKeys {
		h.wantNoValue(token, key)
	}
}

func (h *harness) wantRecent(token string, want ...string) {
	h.t.Helper()
	if diff := cmp.Diff(want, h.recent(token), equateEmpty); diff != "" {
		h.t.Errorf("RecentItems(%q) mismatch (-want +got):\n%s", token, diff)
	}
}

func (h *harness) wantCart(token string, want map[string]int) {
	h.t.Helper()
	if diff := cmp.Diff(want, h.cart(token), equateEmpty); diff != "" {
		h.t.Errorf("Cart(%q) mismatch (-want +got):\n%s", token, diff)
	}
}

func (h *harness) wantCount(want int) {
	h.t.Helper()
	if got := h.sessionCount(); got != want {
		h.t.Errorf("SessionCount() = %d, want %d", got, want)
	}
}

// wantCountOf asserts that SessionCount counts exactly the sessions that
// exist among tokens (no orphan either way), and returns that number.
func (h *harness) wantCountOf(tokens []string) int {
	h.t.Helper()
	found := 0
	for _, token := range tokens {
		if _, ok := h.checkToken(token); ok {
			found++
		}
	}
	h.wantCount(found)
	return found
}

func (h *harness) wantClean(keep, max, want int) {
	h.t.Helper()
	if got := h.clean(keep, max); got != want {
		h.t.Errorf("CleanSessions(%d, %d) = %d, want %d", keep, max, got, want)
	}
}

func (h *harness) wantPage(key, want string) {
	h.t.Helper()
	if got, ok := h.page(key); !ok || string(got) != want {
		h.t.Errorf("Page(%q) = %q, %v, want %q, true", key, got, ok, want)
	}
}

func (h *harness) wantNoPage(key string) {
	h.t.Helper()
	if got, ok := h.page(key); ok {
		h.t.Errorf("Page(%q) = %q, true, want a miss", key, got)
	}
}

func (h *harness) wantRow(row, want string) {
	h.t.Helper()
	if got, ok := h.row(row); !ok || string(got) != want {
		h.t.Errorf("Row(%q) = %q, %v, want %q, true", row, got, ok, want)
	}
}

func (h *harness) wantNoRow(row string) {
	h.t.Helper()
	if got, ok := h.row(row); ok {
		h.t.Errorf("Row(%q) = %q, true, want a miss", row, got)
	}
}

// wantClaim asserts which rows ClaimDueRows(limit) claims, in any order.
func (h *harness) wantClaim(limit int, want ...string) {
	h.t.Helper()
	got := slices.Sorted(slices.Values(h.claim(limit)))
	want = slices.Sorted(slices.Values(want))
	if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
		h.t.Errorf("ClaimDueRows(%d) mismatch (-want +got):\n%s", limit, diff)
	}
}

// wantDueAfter asserts that row is not due until d from now, and is
// claimed once d has passed.
func (h *harness) wantDueAfter(d time.Duration, row string) {
	h.t.Helper()
	h.clock.Advance(d - time.Millisecond)
	h.wantClaim(10)
	h.clock.Advance(time.Millisecond)
	h.wantClaim(10, row)
}

func (h *harness) wantRank(item string, want int) {
	h.t.Helper()
	if got, ok := h.rank(item); !ok || got != want {
		h.t.Errorf("ItemRank(%q) = %d, %v, want %d, true", item, got, ok, want)
	}
}

func (h *harness) wantNoRank(item string) {
	h.t.Helper()
	if got, ok := h.rank(item); ok {
		h.t.Errorf("ItemRank(%q) = %d, true, want no rank", item, got)
	}
}

func (h *harness) wantTop(n int, want ...retail.ItemViews) {
	h.t.Helper()
	if diff := cmp.Diff(want, h.top(n), equateEmpty); diff != "" {
		h.t.Errorf("TopItems(%d) mismatch (-want +got):\n%s", n, diff)
	}
}

// views returns an ItemViews; it keeps expected TopItems results short.
func views(item string, n float64) retail.ItemViews {
	return retail.ItemViews{Item: item, Views: n}
}

// seq returns n names: prefix-000, prefix-001, ...
func seq(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return names
}
