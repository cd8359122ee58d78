package rueidisbackend_test

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// viewModel is what one sorted set of view counts would answer: items by
// count, descending, then by name in byte order.
type viewModel map[string]float64

// ranked returns the items in rank order, with their counts.
func (m viewModel) ranked() []retail.ItemViews {
	out := make([]retail.ItemViews, 0, len(m))
	for item, n := range m {
		out = append(out, retail.ItemViews{Item: item, Views: n})
	}
	slices.SortFunc(out, func(a, b retail.ItemViews) int {
		return cmp.Or(cmp.Compare(b.Views, a.Views), cmp.Compare(a.Item, b.Item))
	})
	return out
}

// rescale keeps the keep first items and multiplies their counts by factor.
func (m viewModel) rescale(keep int, factor float64) {
	for i, iv := range m.ranked() {
		if i < keep {
			m[iv.Item] = iv.Views * factor
		} else {
			delete(m, iv.Item)
		}
	}
}

// wantViews checks ItemRank of every item (and of one never viewed) and
// TopItems of several lengths against the model.
func wantViews(t *testing.T, s *rueidisbackend.Store, m viewModel, when string) {
	t.Helper()
	want := m.ranked()
	for rank, iv := range want {
		if got, ok, err := s.ItemRank(bg, iv.Item); got != rank || !ok || err != nil {
			t.Errorf("%s: ItemRank(%q) = %d, %v, %v; want %d, true, nil", when, iv.Item, got, ok, err, rank)
		}
	}
	if got, ok, err := s.ItemRank(bg, "never-viewed"); ok || err != nil {
		t.Errorf("%s: ItemRank(never-viewed) = %d, %v, %v; want not ranked", when, got, ok, err)
	}
	for _, n := range []int{0, 1, 2, 7, len(want) / 2, max(len(want)-1, 0), len(want), len(want) + 5} {
		got, err := s.TopItems(bg, n)
		if err != nil {
			t.Fatalf("%s: TopItems(%d) = %v", when, n, err)
		}
		if diff := gocmp.Diff(want[:min(n, len(want))], got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: TopItems(%d) mismatch (-want +got):\n%s", when, n, diff)
		}
	}
}

// TestSpread_RanksAndTopItemsMatchOneSet views many items, most with equal
// counts, spread over 5 parts, and checks ItemRank and TopItems against a
// model of one sorted set (ties broken by name in byte order, across
// parts), before and after rescales whose keep cuts through a group of
// ties.
func TestSpread_RanksAndTopItemsMatchOneSet(t *testing.T) {
	const spread = 5
	forEachTarget(t, func(t *testing.T, tg target) {
		s, _, _ := newStoreWith(t, tg, rueidisbackend.Options{Spread: spread})
		// Names whose byte order differs from a case-insensitive or a
		// locale's order, and from their order by length.
		var items []string
		for i := range 48 {
			items = append(items, fmt.Sprintf("item-%d", i))
		}
		items = append(items, "Item", "item", "ITEM-0", "item-", "item-0-", "é", "e", "z", "Z", "_item", "item_1", "item-10a")
		m := viewModel{}
		for i, item := range items {
			views := 1 + i%3 // three groups of ties, each over every part
			for range views {
				if err := s.CountView(bg, item); err != nil {
					t.Fatal(err)
				}
			}
			m[item] = float64(views)
		}
		perPart := map[int]map[float64]int{} // part -> count -> items
		for item, n := range m {
			p := partOf(item, spread)
			if perPart[p] == nil {
				perPart[p] = map[float64]int{}
			}
			perPart[p][n]++
		}
		for p := range spread {
			for n := 1.0; n <= 3; n++ {
				if perPart[p][n] == 0 {
					t.Fatalf("no item with %v views in part %d: the test would not mix ties across parts", n, p)
				}
			}
		}
		wantViews(t, s, m, "after the views")

		// keep cuts the group of items with 2 views.
		const keep = 30
		if r := m.ranked(); r[keep-1].Views != r[keep].Views {
			t.Fatalf("rank %d and %d have counts %v and %v: the test wants keep inside a group of ties", keep-1, keep, r[keep-1].Views, r[keep].Views)
		}
		if err := s.RescaleViews(bg, keep, 0.5); err != nil {
			t.Fatal(err)
		}
		m.rescale(keep, 0.5)
		wantViews(t, s, m, "after RescaleViews(30, 0.5)")
		for _, item := range items {
			if _, ok := m[item]; ok {
				continue
			}
			if rank, ok, err := s.ItemRank(bg, item); ok || err != nil {
				t.Errorf("ItemRank(%q) after it was dropped = %d, %v, %v; want not ranked", item, rank, ok, err)
			}
		}

		// Fractional counts, new ties between them, then a rescale that
		// keeps everything and one that keeps nothing.
		for _, item := range []string{"item-1", "Item", "zz-new", "item-4"} {
			if err := s.CountView(bg, item); err != nil {
				t.Fatal(err)
			}
			m[item]++
		}
		wantViews(t, s, m, "after more views")
		if err := s.RescaleViews(bg, len(m)+3, 1); err != nil {
			t.Fatal(err)
		}
		wantViews(t, s, m, "after RescaleViews(all, 1)")
		if err := s.RescaleViews(bg, 7, 1); err != nil {
			t.Fatal(err)
		}
		m.rescale(7, 1)
		wantViews(t, s, m, "after RescaleViews(7, 1)")
		if err := s.RescaleViews(bg, 0, 1); err != nil {
			t.Fatal(err)
		}
		wantViews(t, s, viewModel{}, "after RescaleViews(0, 1)")
	})
}

// TestSpread_CleanSessionsInGlobalOrder starts sessions one millisecond
// apart, their index entries spread over 5 parts, and checks that every
// pass removes exactly the oldest sessions across the parts: by count
// beyond keep, by idle timeout, and with an index entry that lags behind
// its session's refresh.
func TestSpread_CleanSessionsInGlobalOrder(t *testing.T) {
	const spread = 5
	forEachTarget(t, func(t *testing.T, tg target) {
		clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
		s, c, prefix := newStoreWith(t, tg, rueidisbackend.Options{Clock: clock, Spread: spread})
		t0 := clock.Now()  // session i of order was started at t0 + i ms
		var order []string // tokens, oldest first
		parts := map[int]bool{}
		for i := range 60 {
			token := fmt.Sprintf("tok-%02d", (i*37)%60) // names out of age order
			if _, err := s.StartSession(bg, token, ""); err != nil {
				t.Fatal(err)
			}
			order = append(order, token)
			parts[partOf(token, spread)] = true
			clock.Advance(time.Millisecond)
		}
		if len(parts) != spread {
			t.Fatalf("the sessions use %d parts of %d", len(parts), spread)
		}
		// wantLeft checks that exactly the sessions in order[from:] are
		// left, live or idle-expired: their login keys exist.
		from := 0
		wantLeft := func(when string) {
			t.Helper()
			for i, token := range order {
				n, err := c.Do(bg, c.B().Exists().Key(sessionKeys(prefix, token).login).Build()).AsInt64()
				if err != nil {
					t.Fatal(err)
				}
				if want := i >= from; (n == 1) != want {
					t.Errorf("%s: session %q, of age rank %d, exists = %v; want %v", when, token, i, n == 1, want)
				}
			}
			if n, err := s.SessionCount(bg); n != len(order)-from || err != nil {
				t.Errorf("%s: SessionCount() = %d, %v; want %d", when, n, err, len(order)-from)
			}
		}
		clean := func(keep, max, want int) {
			t.Helper()
			n, err := s.CleanSessions(bg, keep, max)
			if n != want || err != nil {
				t.Fatalf("CleanSessions(%d, %d) = %d, %v; want %d, nil", keep, max, n, err, want)
			}
			from += want
			wantLeft(fmt.Sprintf("after CleanSessions(%d, %d)", keep, max))
		}
		wantLeft("before cleaning")
		clean(0, 7, 7)     // at most max, the oldest
		clean(50, 100, 3)  // beyond keep
		clean(50, 100, 0)  // nothing beyond keep
		clean(45, 1, 1)    // one at a time
		clean(45, 1000, 4) // the rest beyond keep

		// The oldest session is refreshed; its index entry lags (the
		// refresh does not move it), so the pass must find the session
		// newer than the entry says and take the next oldest instead.
		refreshed := order[from]
		clock.Advance(time.Second)
		if _, ok, err := s.RefreshSession(bg, refreshed, ""); !ok || err != nil {
			t.Fatalf("RefreshSession(%q) = %v, %v", refreshed, ok, err)
		}
		order = append(slices.Delete(order, from, from+1), refreshed)
		clean(39, 1, 1)

		// Idle-expired sessions go whatever keep says: advance so that the
		// 6 oldest left, started at t0 + 17..22 ms, have been idle for the
		// idle timeout, and the next not.
		if from != 16 {
			t.Fatalf("%d sessions removed, want 16", from)
		}
		clock.Advance(t0.Add(retail.DefaultIdleTimeout + 22*time.Millisecond).Sub(clock.Now()))
		if _, ok, err := s.CheckToken(bg, order[from+5]); ok || err != nil {
			t.Fatalf("CheckToken(%q) = %v, %v; want idle-expired", order[from+5], ok, err)
		}
		if _, ok, err := s.CheckToken(bg, order[from+6]); !ok || err != nil {
			t.Fatalf("CheckToken(%q) = %v, %v; want live", order[from+6], ok, err)
		}
		clean(1000, 4, 4)
		clean(1000, 100, 2)
		clean(1000, 100, 0)
	})
}

// TestSpread_KeyLayout checks that the shared sets' keys are the ones the
// package doc gives: the single sets with a Spread of 1 (so data written
// before Spread existed is read as before), and with a Spread of 7 each
// token and item in its part by FNV-1a 32 mod 7.
func TestSpread_KeyLayout(t *testing.T) {
	if got, want := partOf("", 7), int(2166136261%7); got != want {
		t.Fatalf("partOf(\"\") = %d, want the FNV offset basis mod 7 = %d", got, want)
	}
	forEachSpread(t, func(t *testing.T, spread int) {
		mr := startMiniredis(t)
		s := mustNew(t, miniredisClientOf(t, mr, rueidis.ClientOption{}), rueidisbackend.Options{Spread: spread})
		prefix := rueidisbackend.DefaultPrefix
		tokens := []string{"a", "b", "c", "d", "e", "f", "g", "h", "}", "é"}
		for _, tok := range tokens {
			if err := s.UpdateToken(bg, tok, "user", "item-"+tok); err != nil {
				t.Fatal(err)
			}
		}
		for _, tok := range tokens {
			if _, err := mr.ZScore(indexKey(prefix, spread, retail.SessionID(tok)), retail.SessionID(tok)); err != nil {
				t.Errorf("token %q is not in %s: %v", tok, indexKey(prefix, spread, tok), err)
			}
			if _, err := mr.ZScore(viewedKey(prefix, spread, "item-"+tok), "item-"+tok); err != nil {
				t.Errorf("item %q is not in %s: %v", "item-"+tok, viewedKey(prefix, spread, "item-"+tok), err)
			}
		}
		if spread == 1 {
			for _, k := range []string{prefix + "{sessions}:seen", prefix + "{views}:viewed"} {
				if !mr.Exists(k) {
					t.Errorf("no key %q with a Spread of 1", k)
				}
			}
		}
	})
}
