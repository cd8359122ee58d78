package rueidisbackend_test

import (
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
