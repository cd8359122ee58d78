package conformance

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/retailkit/retail"
)

// These behaviours are worth most under the race detector; without it they
// still catch lost updates and broken invariants.
var concurrencyTests = []behaviour{
	{name: "Concurrent_MixedOperationsKeepInvariants", test: testConcurrentMixed},
	{name: "Concurrent_ViewsAreNotLost", test: testConcurrentViews},
	{name: "Concurrent_NoCartOutlivesItsSession", test: testConcurrentCartLogout},
	{name: "Concurrent_RescaleDoesNotLoseViews", test: testConcurrentRescale},
}

func userOf(token string) string { return "user-" + token }

// wantRecentShape reports a recent list that is too long, repeats an item,
// or holds an item that was never viewed.
func wantRecentShape(t testing.TB, token string, recent []string, items []string) {
	t.Helper()
	if len(recent) > retail.DefaultRecentLimit {
		t.Errorf("RecentItems(%q) returned %d items, want at most %d", token, len(recent), retail.DefaultRecentLimit)
	}
	seen := make(map[string]bool, len(recent))
	for _, item := range recent {
		if seen[item] {
			t.Errorf("RecentItems(%q) = %q, want each item once (%q repeats)", token, recent, item)
			return
		}
		seen[item] = true
		if !slices.Contains(items, item) {
			t.Errorf("RecentItems(%q) = %q, holds %q, which was never viewed", token, recent, item)
		}
	}
}

// wantRanked reports TopItems results out of order: views descending, then
// names ascending.
func wantRanked(t testing.TB, n int, top []retail.ItemViews) {
	t.Helper()
	sorted := slices.IsSortedFunc(top, func(a, b retail.ItemViews) int {
		if c := cmp.Compare(b.Views, a.Views); c != 0 {
			return c
		}
		return strings.Compare(a.Item, b.Item)
	})
	if !sorted || len(top) > n {
		t.Errorf("TopItems(%d) = %v, want at most %d items by views descending, then name", n, top, n)
	}
}

func testConcurrentViews(h *harness) {
	const workers, viewsEach = 16, 200
	var wg sync.WaitGroup
	for w := range workers {
		token := fmt.Sprintf("tok-%02d", w)
		own := fmt.Sprintf("own-%02d", w)
		wg.Go(func() {
			for i := range viewsEach {
				item := "hot"
				if i%4 == 0 {
					item = own
				}
				if err := h.s.UpdateToken(h.ctx, token, userOf(token), item); err != nil {
					h.t.Errorf("UpdateToken(%q, %q, %q) = %v, want nil", token, userOf(token), item, err)
					return
				}
			}
		})
	}
	wg.Wait()
	want := []retail.ItemViews{views("hot", workers*viewsEach*3/4)}
	for w := range workers {
		want = append(want, views(fmt.Sprintf("own-%02d", w), viewsEach/4))
	}
	h.wantTop(retail.MaxTopItems, want...)
	for w := range workers {
		token := fmt.Sprintf("tok-%02d", w)
		h.wantRecent(token, "hot", fmt.Sprintf("own-%02d", w))
	}
	h.wantCount(workers)
}

func testConcurrentCartLogout(h *harness) {
	const tokens, rounds = 8, 300
	var wg sync.WaitGroup
	for k := range tokens {
		token := fmt.Sprintf("tok-%d", k)
		wg.Go(func() {
			for i := range rounds {
				if err := h.s.UpdateToken(h.ctx, token, userOf(token), ""); err != nil {
					h.t.Errorf("UpdateToken(%q, %q, \"\") = %v, want nil", token, userOf(token), err)
					return
				}
				item := fmt.Sprintf("item-%d", i%3)
				if err := h.s.AddToCart(h.ctx, token, item, 1+i%4); err != nil && !errors.Is(err, retail.ErrNoSession) {
					h.t.Errorf("AddToCart(%q, %q, %d) = %v, want nil or ErrNoSession", token, item, 1+i%4, err)
				}
			}
		})
		wg.Go(func() {
			for i := range rounds {
				var err error
				if i%8 == 0 {
					_, err = h.s.CleanSessions(h.ctx, 0, 2)
				} else {
					err = h.s.Logout(h.ctx, token)
				}
				if err != nil {
					h.t.Errorf("Logout(%q) or CleanSessions(0, 2) = %v, want nil", token, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for k := range tokens {
		token := fmt.Sprintf("tok-%d", k)
		if _, ok := h.checkToken(token); ok {
			continue
		}
		h.wantNoSession(token)
		// Starting a session again must not resurrect a cart.
		h.update(token, userOf(token), "")
		h.wantCart(token, nil)
	}
	// Every token now has a session: it survived or was started again.
	h.wantCount(tokens)
}

// testConcurrentRescale halves every count several times while views are
// being counted, and checks every item's count against what the views made
// it. A view is counted once and then halved by each rescale that comes
// after it; for a view made while a rescale ran, whether that rescale
// comes after it is a race, so the test brackets each view between the
// rescales that had ended before it began and those that had begun by the
// time it returned, and sums, per item, the least and the most the views
// can weigh. The counts are sums of halves, exact in float64, so a store
// that counts every view once and rescales atomically lands within the
// bounds whatever the interleaving, and one that loses a view (or a
// rescale, or applies one twice) falls outside them unless views made
// during the same rescales happen to make up for it.
func testConcurrentRescale(h *harness) {
	const workers, rescales, minViews = 8, 6, 150
	items := seq("item", 10)
	var began, ended atomic.Int64 // rescales
	// progress paces the rescales: each waits until a view has been
	// counted since the last one, so that views and rescales interleave.
	progress := make(chan struct{})
	done := make(chan struct{}) // closed after the last rescale
	stopped := make(chan struct{})

	type weight struct{ lo, hi float64 }
	weights := make([]map[string]weight, workers)
	var wg sync.WaitGroup
	for w := range workers {
		token := fmt.Sprintf("tok-%d", w)
		weights[w] = make(map[string]weight)
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					if i >= minViews {
						return
					}
				default:
				}
				item := items[(w+i)%len(items)]
				before := ended.Load()
				if err := h.s.UpdateToken(h.ctx, token, userOf(token), item); err != nil {
					h.t.Errorf("UpdateToken(%q, %q, %q) = %v, want nil", token, userOf(token), item, err)
					return
				}
				after := began.Load()
				// Halved by at most rescales-before and at least
				// rescales-after of the rescales.
				wt := weights[w][item]
				wt.lo += math.Ldexp(1, -int(rescales-before))
				wt.hi += math.Ldexp(1, -int(rescales-after))
				weights[w][item] = wt
				select {
				case progress <- struct{}{}:
				default:
				}
			}
		})
	}
	go func() {
		wg.Wait()
		close(stopped)
	}()

	for range rescales {
		select {
		case <-progress:
		case <-stopped: // Every worker failed.
		}
		began.Add(1)
		err := h.s.RescaleViews(h.ctx, len(items), 0.5)
		ended.Add(1)
		if err != nil {
			h.t.Errorf("RescaleViews(%d, 0.5) = %v, want nil", len(items), err)
			break
		}
	}
	close(done)
	<-stopped
	if h.t.Failed() {
		return
	}

	want := make(map[string]weight)
	for _, m := range weights {
		for item, wt := range m {
			sum := want[item]
			sum.lo += wt.lo
			sum.hi += wt.hi
			want[item] = sum
		}
	}
	top := h.top(retail.MaxTopItems)
	wantRanked(h.t, retail.MaxTopItems, top)
	got := make(map[string]float64, len(top))
	for _, iv := range top {
		got[iv.Item] = iv.Views
	}
	for _, item := range items {
		b := want[item]
		v, ok := got[item]
		if !ok || v < b.lo || v > b.hi {
			h.t.Errorf("TopItems: %q has %v views (ranked: %v) after %d rescales by 0.5 during the views, want %v..%v",
				item, v, ok, rescales, b.lo, b.hi)
		}
	}
	if len(got) != len(items) {
		h.t.Errorf("TopItems returned %d items, want the %d viewed: %v", len(got), len(items), top)
	}
}
