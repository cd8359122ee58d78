package rueidisbackend_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retailkit/retail"
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

// TestRecent_OlderStampKeepsTheNewerOne has a Store whose clock runs
// behind refresh a session that one with a clock ahead refreshed last, as
// two app servers can: the seen key keeps the newer stamp whatever the
// refresh writes (no item, the newest item again, a new item), and the
// recent items still change as the refreshes say. The newer seen value is
// a stamp alone, or a stamp with its milliseconds (the clock ahead was set
// back before its last write, so its stamp runs past the clock).
func TestRecent_OlderStampKeepsTheNewerOne(t *testing.T) {
	for _, form := range []struct {
		name    string
		setBack bool
	}{{"stamp", false}, {"stamp and ms", true}} {
		t.Run(form.name, func(t *testing.T) {
			forEachTarget(t, func(t *testing.T, tg target) {
				start := time.UnixMilli(1_764_000_000_000)
				ahead := retail.NewManualClock(start.Add(5 * time.Second))
				s, c, prefix := newStoreWith(t, tg, rueidisbackend.Options{Clock: ahead})
				newer := strconv.FormatInt(ahead.Now().UnixMilli(), 10)
				for _, item := range []string{"a", "b"} {
					if form.setBack && item == "b" {
						ahead.Set(start.Add(4 * time.Second))
					}
					if err := s.UpdateToken(bg, "tok", "alice", item); err != nil {
						t.Fatal(err)
					}
				}
				key := sessionKey(prefix, retail.SessionID("tok"))
				seen, err := c.Do(bg, c.B().Hget().Key(key).Field("seen").Build()).ToString()
				if err != nil || strings.Contains(seen, " ") != form.setBack {
					t.Fatalf("seen = %q, %v; want the form %q", seen, err, form.name)
				}
				behind := mustNew(t, c, rueidisbackend.Options{Prefix: prefix, Clock: retail.NewManualClock(start)})
				for _, step := range []struct {
					item string
					want []string
				}{
					{"", []string{"b", "a"}},
					{"b", []string{"b", "a"}},
					{"c", []string{"c", "b", "a"}},
				} {
					if _, ok, err := behind.RefreshSession(bg, "tok", step.item); !ok || err != nil {
						t.Fatalf("RefreshSession(%q) = %v, %v; want a live session", step.item, ok, err)
					}
					seen, err := c.Do(bg, c.B().Hget().Key(key).Field("seen").Build()).ToString()
					if err != nil || !strings.HasPrefix(seen, newer) {
						t.Errorf("after a refresh viewing %q from behind: seen = %q, %v; want the stamp %s... kept", step.item, seen, err, newer)
					}
					if got, err := behind.RecentItems(bg, "tok"); err != nil || !slices.Equal(got, step.want) {
						t.Errorf("after viewing %q: RecentItems = %q, %v; want %q", step.item, got, err, step.want)
					}
				}
			})
		})
	}
}
