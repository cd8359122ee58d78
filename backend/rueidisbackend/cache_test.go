package rueidisbackend_test

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// cachingTargets are the targets with client tracking: miniredis has none.
func forEachCachingTarget(t *testing.T, f func(t *testing.T, tg target)) {
	forEachTarget(t, func(t *testing.T, tg target) {
		if tg.name == "miniredis" {
			t.Skip("miniredis has no client tracking: nothing is cached")
		}
		f(t, tg)
	})
}

// TestCache_ReadYourWrites writes and then reads a login, a page and a row
// 10,000 times in a row from 8 goroutines at once, each read preceded by a
// read that puts the old value in the client-side cache: every read after
// a write must return that write.
func TestCache_ReadYourWrites(t *testing.T) {
	forEachCachingTarget(t, func(t *testing.T, tg target) {
		s, _, _ := newStore(t, tg, retail.SystemClock{})
		const goroutines, rounds = 8, 1250 // 10,000 writes of each kind
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				token, page, row := fmt.Sprintf("ryw-token-%d", g), fmt.Sprintf("GET ryw/%d", g), fmt.Sprintf("ryw-row-%d", g)
				for i := range rounds {
					user := fmt.Sprintf("user-%d-%d", g, i)
					body := fmt.Appendf(nil, "page %d of %d", i, g)
					s.CheckToken(bg, token) // cache the old values
					s.Page(bg, page)
					s.Row(bg, row)
					if err := s.UpdateToken(bg, token, user, ""); err != nil {
						t.Errorf("UpdateToken(%q, %q) = %v", token, user, err)
						return
					}
					if got, ok, err := s.CheckToken(bg, token); got != user || !ok || err != nil {
						t.Errorf("round %d: CheckToken after UpdateToken = %q, %v, %v; want %q, true, nil", i, got, ok, err, user)
						return
					}
					if err := s.SetPage(bg, page, body, time.Minute); err != nil {
						t.Errorf("SetPage = %v", err)
						return
					}
					if got, ok, err := s.Page(bg, page); !bytes.Equal(got, body) || !ok || err != nil {
						t.Errorf("round %d: Page after SetPage = %q, %v, %v; want %q, true, nil", i, got, ok, err, body)
						return
					}
					if err := s.SetRow(bg, row, body); err != nil {
						t.Errorf("SetRow = %v", err)
						return
					}
					if got, ok, err := s.Row(bg, row); !bytes.Equal(got, body) || !ok || err != nil {
						t.Errorf("round %d: Row after SetRow = %q, %v, %v; want %q, true, nil", i, got, ok, err, body)
						return
					}
				}
				// Deletions are writes too.
				if err := s.Logout(bg, token); err != nil {
					t.Errorf("Logout = %v", err)
				}
				if _, ok, _ := s.CheckToken(bg, token); ok {
					t.Errorf("CheckToken after Logout found the session")
				}
			})
		}
		wg.Wait()
		stats := s.CacheStats()
		t.Logf("cache hits %d, misses %d", stats.Hits, stats.Misses)
		if stats.Hits == 0 {
			t.Errorf("CacheStats().Hits = 0: the cache was never used, so this test proved nothing")
		}
	})
}

// TestCache_HitsAfterFirstRead checks that repeated reads of an unchanged
// login are served from process memory.
func TestCache_HitsAfterFirstRead(t *testing.T) {
	forEachCachingTarget(t, func(t *testing.T, tg target) {
		s, _, _ := newStore(t, tg, retail.SystemClock{})
		if err := s.UpdateToken(bg, "hit-token", "alice", "itemX"); err != nil {
			t.Fatal(err)
		}
		// Updates that do not change the user do not invalidate the login.
		for range 3 {
			if err := s.UpdateToken(bg, "hit-token", "alice", "itemY"); err != nil {
				t.Fatal(err)
			}
		}
		before := s.CacheStats()
		const reads = 100
		for range reads {
			if u, ok, err := s.CheckToken(bg, "hit-token"); u != "alice" || !ok || err != nil {
				t.Fatalf("CheckToken = %q, %v, %v", u, ok, err)
			}
		}
		after := s.CacheStats()
		if hits := after.Hits - before.Hits; hits < reads-1 {
			t.Errorf("%d of %d CheckToken calls were cache hits, want at least %d", hits, reads, reads-1)
		}
	})
}

// TestCache_CrossProcessStaleness measures how long a write by one Store
// takes to reach another Store's client-side cache (another client, as in
// another process): the second Store caches the key, the first writes it,
// and the second polls its cache until it sees the write. The figures are
// logged; the test fails only if a write never arrives within 5 s.
func TestCache_CrossProcessStaleness(t *testing.T) {
	forEachCachingTarget(t, func(t *testing.T, tg target) {
		c1, prefix := tg.client(t, rueidis.ClientOption{})
		c2, _ := tg.client(t, rueidis.ClientOption{})
		a, _ := rueidisbackend.New(c1, rueidisbackend.Options{Prefix: prefix})
		b, _ := rueidisbackend.New(c2, rueidisbackend.Options{Prefix: prefix})
		const writes = 1000
		delays := make([]time.Duration, 0, writes)
		stale := 0
		for i := range writes {
			user := fmt.Sprintf("user-%d", i)
			b.CheckToken(bg, "stale-token") // b caches the old login
			if err := a.UpdateToken(bg, "stale-token", user, ""); err != nil {
				t.Fatal(err)
			}
			wrote := time.Now()
			deadline := wrote.Add(5 * time.Second)
			first := true
			for {
				got, _, err := b.CheckToken(bg, "stale-token")
				if err != nil {
					t.Fatal(err)
				}
				if got == user {
					break
				}
				if first {
					stale++
					first = false
				}
				if time.Now().After(deadline) {
					t.Fatalf("write %d not visible to the other Store after 5 s", i)
				}
			}
			delays = append(delays, time.Since(wrote))
		}
		slices.Sort(delays)
		t.Logf("%d writes: %d read stale at least once; visible after p50 %v, p99 %v, max %v",
			writes, stale, delays[writes/2], delays[writes*99/100], delays[writes-1])
	})
}
