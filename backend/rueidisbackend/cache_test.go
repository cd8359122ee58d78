package rueidisbackend_test

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// forEachCachingTarget runs f on the targets with client tracking
// (miniredis has none: nothing is cached there, so it gets no subtest).
func forEachCachingTarget(t *testing.T, f func(t *testing.T, tg target)) {
	for _, tg := range targets {
		if tg.caching {
			t.Run(tg.name, func(t *testing.T) { f(t, tg) })
		}
	}
}

// BenchmarkCache_CrossProcessStaleness measures how long a write by one
// Store takes to reach another Store's client-side cache (another client,
// as in another process): the second Store caches a login, the first
// changes it, and the second polls its cache until it sees the change. It
// reports how long that took (p50-us, p99-us, max-us) and the share of
// writes the second Store read stale at least once (stale/op).
// docs/redis-backend.md quotes these figures.
func BenchmarkCache_CrossProcessStaleness(b *testing.B) {
	for _, tg := range targets {
		if !tg.caching {
			continue
		}
		b.Run(tg.name, func(b *testing.B) {
			c1, prefix := tg.client(b, rueidis.ClientOption{})
			c2, _ := tg.client(b, rueidis.ClientOption{})
			writer := mustNew(b, c1, rueidisbackend.Options{Prefix: prefix})
			reader := mustNew(b, c2, rueidisbackend.Options{Prefix: prefix})
			const token, bound = "stale-token", 10 * time.Second
			var delays []time.Duration
			stale := 0
			for i := 0; b.Loop(); i++ {
				user := fmt.Sprintf("user-%d", i)
				reader.CheckToken(bg, token) // the reader caches the old login
				if err := writer.UpdateToken(bg, token, user, ""); err != nil {
					b.Fatal(err)
				}
				wrote := time.Now()
				for first := true; ; first = false {
					got, _, err := reader.CheckToken(bg, token)
					if err != nil {
						b.Fatal(err)
					}
					if got == user {
						break
					}
					if first {
						stale++
					}
					if time.Since(wrote) > bound {
						b.Fatalf("write %d not visible to the other Store after %v", i, bound)
					}
					runtime.Gosched() // let the client read the invalidation
				}
				delays = append(delays, time.Since(wrote))
			}
			slices.Sort(delays)
			us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
			n := len(delays)
			b.ReportMetric(us(delays[n/2]), "p50-us")
			b.ReportMetric(us(delays[n*99/100]), "p99-us")
			b.ReportMetric(us(delays[n-1]), "max-us")
			b.ReportMetric(float64(stale)/float64(n), "stale/op")
		})
	}
}

func mustNew(tb testing.TB, c rueidis.Client, opts rueidisbackend.Options) *rueidisbackend.Store {
	s, err := rueidisbackend.New(c, opts)
	if err != nil {
		tb.Fatalf("New() = %v", err)
	}
	return s
}

// TestCache_ReadYourWrites writes and then reads a login, a page and a row
// 10,000 times in a row from 8 goroutines at once, each read preceded by a
// read that puts the old value in the client-side cache: every read after
// a write must return that write. The Store's clock stands still, so pages
// cannot expire however long the test takes.
func TestCache_ReadYourWrites(t *testing.T) {
	t.Parallel()
	forEachCachingTarget(t, func(t *testing.T, tg target) {
		s, _, _ := newStore(t, tg, retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)))
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
		stats := s.Stats()
		t.Logf("cache hits %d, misses %d", stats.ClientCacheHits, stats.ClientCacheMisses)
		if stats.ClientCacheHits == 0 {
			t.Errorf("Stats().ClientCacheHits = 0: the cache was never used, so this test proved nothing")
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
		before := s.Stats()
		const reads = 100
		for range reads {
			if u, ok, err := s.CheckToken(bg, "hit-token"); u != "alice" || !ok || err != nil {
				t.Fatalf("CheckToken = %q, %v, %v", u, ok, err)
			}
		}
		after := s.Stats()
		if hits := after.ClientCacheHits - before.ClientCacheHits; hits < reads-1 {
			t.Errorf("%d of %d CheckToken calls were cache hits, want at least %d", hits, reads, reads-1)
		}
	})
}

// TestCache_CartAndValueReadTheSessionOnce counts the client-side cache
// lookups of an unchanged cart or value read: one of the session's hash,
// which holds the login beside the cart and the values, and one of the
// user's logout-everywhere instant; a guest's, only the first.
func TestCache_CartAndValueReadTheSessionOnce(t *testing.T) {
	forEachCachingTarget(t, func(t *testing.T, tg target) {
		s, _, _ := newStore(t, tg, retail.SystemClock{})
		for _, tc := range []struct{ token, user string }{{"cart-user", "alice"}, {"cart-guest", ""}} {
			if _, err := s.StartSession(bg, tc.token, tc.user); err != nil {
				t.Fatal(err)
			}
			if err := s.AddToCart(bg, tc.token, "itemA", 2); err != nil {
				t.Fatal(err)
			}
			if err := s.SetValue(bg, tc.token, "k", []byte("v")); err != nil {
				t.Fatal(err)
			}
			want := uint64(2)
			if tc.user == "" {
				want = 1
			}
			for name, read := range map[string]func() error{
				"Cart": func() error {
					cart, err := s.Cart(bg, tc.token)
					if err == nil && cart["itemA"] != 2 {
						err = fmt.Errorf("cart = %v, want itemA: 2", cart)
					}
					return err
				},
				"Value": func() error {
					v, ok, err := s.Value(bg, tc.token, "k")
					if err == nil && (!ok || string(v) != "v") {
						err = fmt.Errorf("value = %q, %v; want v", v, ok)
					}
					return err
				},
			} {
				// Read until the cache has heard of the writes (until then
				// reads go to the server too, see ownWrites); the deadline
				// is a watchdog, not a measure.
				var lookups, misses uint64
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
					before := s.Stats()
					if err := read(); err != nil {
						t.Fatalf("%s of %s: %v", name, tc.token, err)
					}
					after := s.Stats()
					misses = after.ClientCacheMisses - before.ClientCacheMisses
					if lookups = after.ClientCacheHits - before.ClientCacheHits + misses; misses == 0 {
						break
					}
					time.Sleep(time.Millisecond)
				}
				if misses != 0 {
					t.Fatalf("%s of %s still missed the client-side cache %d times after 10 s", name, tc.token, misses)
				}
				if lookups != want {
					t.Errorf("%s of %s (user %q) made %d cache lookups, want %d", name, tc.token, tc.user, lookups, want)
				}
			}
		}
	})
}

// TestCache_CheckTokenStaysCachedWhileRefreshed refreshes a session every
// minute of the Store's clock for three hours, reading CheckToken ten
// times after each refresh. A refresh rewrites the cached login only once
// TouchEvery (15 minutes here) has passed since it was written, so the
// reads miss the client-side cache about once every 15 minutes and hit it
// otherwise; once refreshes stop, CheckToken still answers by the exact
// last-seen time.
func TestCache_CheckTokenStaysCachedWhileRefreshed(t *testing.T) {
	forEachCachingTarget(t, func(t *testing.T, tg target) {
		clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
		s, _, _ := newStoreWith(t, tg, rueidisbackend.Options{Clock: clock, TouchEvery: 15 * time.Minute})
		if _, err := s.StartSession(bg, "busy", "alice"); err != nil {
			t.Fatal(err)
		}
		before := s.Stats()
		const minutes, reads = 180, 10
		for range minutes {
			clock.Advance(time.Minute)
			if user, ok, err := s.RefreshSession(bg, "busy", ""); user != "alice" || !ok || err != nil {
				t.Fatalf("RefreshSession = %q, %v, %v", user, ok, err)
			}
			for range reads {
				if user, ok, err := s.CheckToken(bg, "busy"); user != "alice" || !ok || err != nil {
					t.Fatalf("CheckToken at %v = %q, %v, %v; want alice", clock.Now(), user, ok, err)
				}
			}
		}
		after := s.Stats()
		hits, misses := after.ClientCacheHits-before.ClientCacheHits, after.ClientCacheMisses-before.ClientCacheMisses
		// A rewrite every 15 minutes, a few misses after each: on a single
		// server the tracker's table (see sessiontable.go) does not store
		// a read made while the server's message of the rewrite was on its
		// way, and counts it a miss. Without the touch interval every
		// minute's refresh would miss: 180 misses.
		if limit := uint64(3 * (minutes/16 + 1)); misses > limit || hits < minutes*reads/2 {
			t.Errorf("%d CheckToken calls: %d cache hits, %d misses; want at most %d misses", minutes*reads, hits, misses, limit)
		}
		t.Logf("%d CheckToken calls: %d cache hits, %d misses", minutes*reads, hits, misses)

		// Past the coarse deadline, the exact last-seen time decides.
		clock.Advance(retail.DefaultIdleTimeout - time.Millisecond)
		if _, ok, err := s.CheckToken(bg, "busy"); !ok || err != nil {
			t.Errorf("CheckToken 1ms before the idle timeout = %v, %v; want live", ok, err)
		}
		clock.Advance(time.Millisecond)
		if _, ok, err := s.CheckToken(bg, "busy"); ok || err != nil {
			t.Errorf("CheckToken at the idle timeout = %v, %v; want a miss", ok, err)
		}
	})
}

// TestStats_CountsClientCacheHits checks that the Store's Stats report the
// client-side cache's hits and misses.
func TestStats_CountsClientCacheHits(t *testing.T) {
	if server == nil {
		unavailable(t, "Redis server", serverErr)
	}
	s, _, _ := newStore(t, targets[1], nil)
	if _, err := s.StartSession(bg, "stats-token", "ann"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, _, err := s.CheckToken(bg, "stats-token"); err != nil {
			t.Fatal(err)
		}
	}
	// Each CheckToken of a logged-in session reads two cached keys: its
	// login and its user's last LogoutUser (see loggedout.go).
	if st := s.Stats(); st.ClientCacheHits+st.ClientCacheMisses != 6 || st.ClientCacheHits == 0 {
		t.Errorf("Stats() client cache = %d hits, %d misses; want 6 reads, some hits", st.ClientCacheHits, st.ClientCacheMisses)
	}
}
