package rueidisbackend_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/retailkit/retail/backend/rueidisbackend"
)

// TestRecent_ShorterLimitTrimsStoredItems views ten items with the default
// RecentLimit, then has a Store with RecentLimit 3 on the same keys view
// one more: the scripts edit the stored list in place, and must drop the
// seven oldest at once, then move an item it kept to the front.
func TestRecent_ShorterLimitTrimsStoredItems(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target) {
		s, c, prefix := newStoreWith(t, tg, rueidisbackend.Options{})
		for i := range 10 {
			if err := s.UpdateToken(bg, "tok", "alice", fmt.Sprintf("item-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		short := mustNew(t, c, rueidisbackend.Options{Prefix: prefix, RecentLimit: 3})
		for _, step := range []struct {
			item string
			want []string
		}{
			{"item-new", []string{"item-new", "item-9", "item-8"}},
			{"item-8", []string{"item-8", "item-new", "item-9"}},
			{"", []string{"item-8", "item-new", "item-9"}},
		} {
			if err := short.UpdateToken(bg, "tok", "alice", step.item); err != nil {
				t.Fatal(err)
			}
			got, err := short.RecentItems(bg, "tok")
			if err != nil || !slices.Equal(got, step.want) {
				t.Errorf("after viewing %q: RecentItems = %q, %v; want %q", step.item, got, err, step.want)
			}
		}
	})
}
