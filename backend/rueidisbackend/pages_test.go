package rueidisbackend_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// TestSetPage_KeyOutlivesExpiryByTTLSlack checks on miniredis, whose TTLs
// move only when told to, that a page's key lives TTLSlack beyond the
// page's TTL, and that the Store's clock, not the key, ends the page.
func TestSetPage_KeyOutlivesExpiryByTTLSlack(t *testing.T) {
	for _, tt := range []struct {
		slack, want time.Duration // the option, and the slack it means
	}{
		{0, rueidisbackend.DefaultTTLSlack},
		{time.Hour, time.Hour},
	} {
		mr := startMiniredis(t)
		clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
		s, err := rueidisbackend.New(miniredisClientOf(t, mr, rueidis.ClientOption{}),
			rueidisbackend.Options{Clock: clock, TTLSlack: tt.slack})
		if err != nil {
			t.Fatal(err)
		}
		const ttl = 5 * time.Second
		if err := s.SetPage(bg, "GET /item?item=1", []byte("page"), ttl); err != nil {
			t.Fatal(err)
		}
		key := rueidisbackend.DefaultPrefix + "page:GET /item?item=1"
		if got := mr.TTL(key); got != ttl+tt.want {
			t.Errorf("TTLSlack %v: key TTL after SetPage(ttl %v) = %v, want %v", tt.slack, ttl, got, ttl+tt.want)
		}
		clock.Advance(ttl - time.Millisecond)
		mr.FastForward(ttl - time.Millisecond)
		if _, ok, err := s.Page(bg, "GET /item?item=1"); !ok || err != nil {
			t.Errorf("TTLSlack %v: Page 1ms before the TTL ended = _, %v, %v; want a hit", tt.slack, ok, err)
		}
		clock.Advance(time.Millisecond)
		mr.FastForward(time.Millisecond)
		if _, ok, err := s.Page(bg, "GET /item?item=1"); ok || err != nil {
			t.Errorf("TTLSlack %v: Page once the TTL ended = _, %v, %v; want a miss", tt.slack, ok, err)
		}
		if !mr.Exists(key) {
			t.Errorf("TTLSlack %v: the key was gone when the page's TTL ended, want it kept for the slack", tt.slack)
		}
		mr.FastForward(tt.want)
		if mr.Exists(key) {
			t.Errorf("TTLSlack %v: the key outlived its TTL plus slack", tt.slack)
		}
	}
}

// TestSetItemPage_IndexOutlivesItsPages checks on miniredis that an item's
// index of pages lives as long as its longest-lived page plus TTLSlack,
// never shortened by a later, shorter page, and that a purge deletes it.
func TestSetItemPage_IndexOutlivesItsPages(t *testing.T) {
	mr := startMiniredis(t)
	clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
	const slack = time.Hour
	s, err := rueidisbackend.New(miniredisClientOf(t, mr, rueidis.ClientOption{}),
		rueidisbackend.Options{Clock: clock, TTLSlack: slack})
	if err != nil {
		t.Fatal(err)
	}
	index := rueidisbackend.DefaultPrefix + "pages:{item-1}"
	for _, c := range []struct {
		key  string
		ttl  time.Duration
		want time.Duration
	}{
		{"a", time.Minute, time.Minute + slack},
		{"b", 10 * time.Minute, 10*time.Minute + slack},
		{"c", time.Second, 10*time.Minute + slack},
	} {
		if err := s.SetItemPage(bg, "item-1", c.key, []byte("page"), c.ttl); err != nil {
			t.Fatal(err)
		}
		if got := mr.TTL(index); got != c.want {
			t.Errorf("index TTL after SetItemPage(%q, ttl %v) = %v, want %v", c.key, c.ttl, got, c.want)
		}
		if got := mr.TTL(rueidisbackend.DefaultPrefix + "page:" + c.key); got != c.ttl+slack {
			t.Errorf("page TTL after SetItemPage(%q, ttl %v) = %v, want %v", c.key, c.ttl, got, c.ttl+slack)
		}
	}
	if n, err := s.PurgeItemPages(bg, "item-1"); n != 3 || err != nil {
		t.Errorf("PurgeItemPages = %d, %v, want 3, nil", n, err)
	}
	if mr.Exists(index) {
		t.Errorf("the index outlived the purge")
	}
}

// TestSetItemPage_IndexHoldsOnlyLivePages checks that an item's index of
// pages does not grow with pages that expired: an item whose pages are
// many (one a query parameter value) stored one after another, each
// expiring before the next, keeps an index of the pages that may still be
// live, and a purge still deletes the live one.
func TestSetItemPage_IndexHoldsOnlyLivePages(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target) {
		clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
		const ttl, slack = time.Minute, time.Second
		s, c, prefix := newStoreWith(t, tg, rueidisbackend.Options{Clock: clock, TTLSlack: slack})
		index := prefix + "pages:{kettle}"
		for i := range 50 {
			key := "GET /reviews?item=kettle&page=" + strconv.Itoa(i)
			if err := s.SetItemPage(bg, "kettle", key, []byte("page"), ttl); err != nil {
				t.Fatal(err)
			}
			clock.Advance(ttl + 2*slack)
		}
		if err := s.SetItemPage(bg, "kettle", "GET /reviews?item=kettle&page=last", []byte("page"), ttl); err != nil {
			t.Fatal(err)
		}
		members, err := c.Do(bg, c.B().Zrange().Key(index).Min("0").Max("-1").Build()).AsStrSlice()
		if err != nil || len(members) != 1 || members[0] != "GET /reviews?item=kettle&page=last" {
			t.Errorf("the index holds %q, %v; want only the live page", members, err)
		}
		if n, err := s.PurgeItemPages(bg, "kettle"); n != 1 || err != nil {
			t.Errorf("PurgeItemPages = %d, %v, want 1, nil", n, err)
		}
		if _, ok, err := s.Page(bg, "GET /reviews?item=kettle&page=last"); ok || err != nil {
			t.Errorf("after the purge: Page = %v, %v; want no page", ok, err)
		}
	})
}
