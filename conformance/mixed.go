package conformance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
)

// wantCartShape reports a cart line of an item the workload never added, or
// a count out of range.
func wantCartShape(t testing.TB, token string, cart map[string]int, items []string) {
	t.Helper()
	for item, n := range cart {
		if n < 1 || n > retail.MaxCartCount || !slices.Contains(items, item) {
			t.Errorf("Cart(%q) = %v, want items from the workload with counts 1..%d", token, cart, retail.MaxCartCount)
			return
		}
	}
}

// wantOwnSession reports UserSessions(userOf(token)) results that list a
// session other than token's, or more than one.
func wantOwnSession(t testing.TB, token string, infos []retail.SessionInfo) {
	t.Helper()
	for _, in := range infos {
		if len(infos) > 1 || in.ID != retail.SessionID(token) || in.User != userOf(token) {
			t.Errorf("UserSessions(%q) = %+v, want at most %q's session", userOf(token), infos, token)
			return
		}
	}
}

func testConcurrentMixed(h *harness) {
	const workers, opsPerWorker = 16, 300
	tokens, items, pages, rows := seq("tok", 48), seq("item", 40), seq("page", 8), seq("row", 64)
	for _, row := range rows {
		// Rows stay claimed: the clock moves far less than an hour below.
		h.schedule(row, time.Hour)
	}
	viewed := make([]map[string]int, workers)
	claimed := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		viewed[w] = make(map[string]int)
		wg.Go(func() {
			t, ctx, s := h.t, h.ctx, h.s
			r := rand.New(rand.NewPCG(1, uint64(w)))
			for i := range opsPerWorker {
				token, item := tokens[r.IntN(len(tokens))], items[r.IntN(len(items))]
				switch op := r.IntN(24); op {
				case 0, 1, 2:
					if err := s.UpdateToken(ctx, token, userOf(token), item); err != nil {
						t.Errorf("UpdateToken(%q, %q, %q) = %v, want nil", token, userOf(token), item, err)
					} else {
						viewed[w][item]++
					}
				case 3:
					if err := s.UpdateToken(ctx, token, userOf(token), ""); err != nil {
						t.Errorf("UpdateToken(%q, %q, \"\") = %v, want nil", token, userOf(token), err)
					}
				case 4:
					count := r.IntN(5)
					if err := s.AddToCart(ctx, token, item, count); err != nil && !errors.Is(err, retail.ErrNoSession) {
						t.Errorf("AddToCart(%q, %q, %d) = %v, want nil or ErrNoSession", token, item, count, err)
					}
				case 5:
					if user, ok, err := s.CheckToken(ctx, token); err != nil || ok && user != userOf(token) {
						t.Errorf("CheckToken(%q) = %q, %v, %v, want %q or a miss", token, user, ok, err, userOf(token))
					}
				case 6:
					recent, err := s.RecentItems(ctx, token)
					if err != nil {
						t.Errorf("RecentItems(%q) = %v, want nil error", token, err)
					}
					wantRecentShape(t, token, recent, items)
				case 7:
					c, err := s.Cart(ctx, token)
					if err != nil {
						t.Errorf("Cart(%q) = %v, want nil error", token, err)
					}
					wantCartShape(t, token, c, items)
				case 8:
					if err := s.Logout(ctx, token); err != nil {
						t.Errorf("Logout(%q) = %v, want nil", token, err)
					}
				case 9:
					if n, err := s.CleanSessions(ctx, 24, 5); err != nil || n < 0 || n > 5 {
						t.Errorf("CleanSessions(24, 5) = %d, %v, want 0..5, nil", n, err)
					}
					if n, err := s.SessionCount(ctx); err != nil || n < 0 || n > len(tokens) {
						t.Errorf("SessionCount() = %d, %v, want 0..%d, nil", n, err, len(tokens))
					}
				case 10:
					top, err := s.TopItems(ctx, 10)
					if err != nil {
						t.Errorf("TopItems(10) = %v, want nil error", err)
					}
					wantRanked(t, 10, top)
				case 11:
					if rank, ok, err := s.ItemRank(ctx, item); err != nil || ok && (rank < 0 || rank >= len(items)) {
						t.Errorf("ItemRank(%q) = %d, %v, %v, want 0..%d or no rank", item, rank, ok, err, len(items)-1)
					}
				case 12:
					key := pages[r.IntN(len(pages))]
					if r.IntN(2) == 0 {
						body := fmt.Sprintf("%s by worker %d op %d", key, w, i)
						if err := s.SetPage(ctx, key, []byte(body), time.Minute); err != nil {
							t.Errorf("SetPage(%q, %q, 1m) = %v, want nil", key, body, err)
						}
					} else if body, ok, err := s.Page(ctx, key); err != nil || ok && !strings.HasPrefix(string(body), key+" by ") {
						t.Errorf("Page(%q) = %q, %v, %v, want a body written for %q or a miss", key, body, ok, err, key)
					}
				case 13:
					got, err := s.ClaimDueRows(ctx, 3)
					if err != nil || len(got) > 3 {
						t.Errorf("ClaimDueRows(3) = %q, %v, want at most 3 rows, nil", got, err)
					}
					claimed[w] = append(claimed[w], got...)
				case 14:
					h.clock.Advance(time.Millisecond)
				case 15:
					if user, ok, err := s.RefreshSession(ctx, token, item); err != nil || ok && user != userOf(token) {
						t.Errorf("RefreshSession(%q, %q) = %q, %v, %v, want %q or a miss", token, item, user, ok, err, userOf(token))
					} else if ok {
						viewed[w][item]++
					}
				case 16:
					if _, err := s.StartSession(ctx, token, userOf(token)); err != nil {
						t.Errorf("StartSession(%q, %q) = %v, want nil error", token, userOf(token), err)
					}
				case 17:
					// A login moves the session to a token of the user it
					// logs in, which keeps every token's user its own.
					other := tokens[r.IntN(len(tokens))]
					if other == token {
						break
					}
					if _, err := s.RenewSession(ctx, token, other, userOf(other)); err != nil && !errors.Is(err, retail.ErrInvalid) {
						t.Errorf("RenewSession(%q, %q, %q) = %v, want nil or ErrInvalid", token, other, userOf(other), err)
					}
				case 18:
					key := valueKeys[r.IntN(len(valueKeys))]
					value := fmt.Sprintf("%s:%d:%d", key, w, i)
					if err := s.SetValue(ctx, token, key, []byte(value)); err != nil && !errors.Is(err, retail.ErrNoSession) {
						t.Errorf("SetValue(%q, %q, %q) = %v, want nil or ErrNoSession", token, key, value, err)
					}
				case 19:
					key := valueKeys[r.IntN(len(valueKeys))]
					read, name := s.Value, "Value"
					if r.IntN(2) == 0 {
						read, name = s.PopValue, "PopValue"
					}
					if v, ok, err := read(ctx, token, key); err != nil || ok && !strings.HasPrefix(string(v), key+":") {
						t.Errorf("%s(%q, %q) = %q, %v, %v, want a value set under %q or a miss", name, token, key, v, ok, err, key)
					}
				case 20:
					n := r.IntN(5) - 2
					count, err := s.IncrementCart(ctx, token, item, n)
					if err != nil && !errors.Is(err, retail.ErrNoSession) || count < 0 || count > retail.MaxCartCount {
						t.Errorf("IncrementCart(%q, %q, %d) = %d, %v, want 0..%d, nil or ErrNoSession", token, item, n, count, err, retail.MaxCartCount)
					}
				case 21:
					infos, err := s.UserSessions(ctx, userOf(token))
					if err != nil {
						t.Errorf("UserSessions(%q) = %v, want nil error", userOf(token), err)
					}
					wantOwnSession(t, token, infos)
				case 22:
					if n, err := s.LogoutUser(ctx, userOf(token)); err != nil || n < 0 || n > 1 {
						t.Errorf("LogoutUser(%q) = %d, %v, want 0 or 1, nil", userOf(token), n, err)
					}
				case 23:
					if err := s.CountView(ctx, item); err != nil {
						t.Errorf("CountView(%q) = %v, want nil", item, err)
					} else {
						viewed[w][item]++
					}
				}
			}
		})
	}
	wg.Wait()

	// Sessions: the count matches the sessions that exist, live sessions are
	// well formed and listed under their user, and no session leaves
	// anything behind, in its token or in the per-user index.
	found := 0
	for _, token := range tokens {
		user, ok := h.checkToken(token)
		infos := h.userSessions(userOf(token))
		if !ok {
			h.wantNoSession(token)
			h.wantUserSessions(userOf(token))
			continue
		}
		found++
		if user != userOf(token) {
			h.t.Errorf("CheckToken(%q) = %q, want %q", token, user, userOf(token))
		}
		wantRecentShape(h.t, token, h.recent(token), items)
		wantCartShape(h.t, token, h.cart(token), items)
		for _, key := range valueKeys {
			if v, ok := h.value(token, key); ok && !strings.HasPrefix(string(v), key+":") {
				h.t.Errorf("Value(%q, %q) = %q, want a value set under %q", token, key, v, key)
			}
		}
		if len(infos) != 1 {
			h.t.Errorf("UserSessions(%q) = %+v, want %q's live session", userOf(token), infos, token)
		}
		wantOwnSession(h.t, token, infos)
	}
	h.wantCount(found)
	// Removing every session leaves nothing.
	h.wantClean(0, len(tokens), found)
	h.wantCount(0)
	for _, token := range tokens {
		h.wantUserSessions(userOf(token))
		h.wantNoSession(token)
	}

	// Views: every successful view (RefreshSession that found its session,
	// UpdateToken, CountView) counted once, nothing else counted.
	want := make(map[string]float64)
	for _, m := range viewed {
		for item, n := range m {
			want[item] += float64(n)
		}
	}
	top := h.top(retail.MaxTopItems)
	wantRanked(h.t, retail.MaxTopItems, top)
	got := make(map[string]float64, len(top))
	for _, iv := range top {
		got[iv.Item] = iv.Views
	}
	if diff := gocmp.Diff(want, got, equateEmpty); diff != "" {
		h.t.Errorf("view counts after the workload mismatch (-successful UpdateToken calls +TopItems):\n%s", diff)
	}

	// Rows: claimed at most once each; the rest still due.
	all := slices.Concat(slices.Concat(claimed...), h.claim(retail.MaxClaimRows))
	slices.Sort(all)
	if diff := gocmp.Diff(rows, all, equateEmpty); diff != "" {
		h.t.Errorf("rows claimed during and after the workload mismatch (-want +got: a row twice is a double claim):\n%s", diff)
	}
}
