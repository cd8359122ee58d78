package webshop

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
	"github.com/retailkit/retail/examples/internal/backends"
	"github.com/retailkit/retail/internal/redistest"
)

var prefixes atomic.Int64

// uniquePrefix keeps each test's keys apart on a server it may share.
func uniquePrefix() string {
	return fmt.Sprintf("shoptest-%d-%d:", time.Now().UnixNano(), prefixes.Add(1))
}

// TestShop_FullVisitOnRedis runs one visitor's whole journey on the Redis
// backend: on miniredis always, and on a private redis-server (with
// client-side caching, through backends.Open) where one can be started.
func TestShop_FullVisitOnRedis(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) {
		mr := miniredis.NewMiniRedis()
		if err := mr.Start(); err != nil {
			t.Fatalf("miniredis: %v", err)
		}
		t.Cleanup(mr.Close)
		// miniredis has no client tracking and is no cluster.
		client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{mr.Addr()}, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			t.Fatalf("rueidis.NewClient = %v", err)
		}
		t.Cleanup(client.Close)
		store, err := rueidisbackend.New(client, rueidisbackend.Options{})
		if err != nil {
			t.Fatalf("rueidisbackend.New = %v", err)
		}
		fullVisit(t, newTestShopOn(t, store, shopOptions{}))
	})
	t.Run("redis-server", func(t *testing.T) {
		srv := privateServer(t)
		store, name, closeStore, err := backends.Open([]string{srv.Addr()}, backends.Options{Prefix: uniquePrefix()})
		if err != nil {
			t.Fatalf("backends.Open(%s) = %v", srv.Addr(), err)
		}
		t.Cleanup(closeStore)
		if name != "Redis" {
			t.Errorf("backends.Open(one server) names the backend %q, want Redis", name)
		}
		fullVisit(t, newTestShopOn(t, store, shopOptions{}))
	})
}

// fullVisit logs in, browses, fills and empties the cart, checks that a
// popular page is cached for anonymous visitors, and logs out.
func fullVisit(t *testing.T, s *testShop) {
	t.Helper()
	ctx := context.Background()
	v := s.visitor()
	v.addToCart("kettle", "2") // as a guest
	v.login("alice")
	for _, id := range []string{"kettle", "mug", "teapot"} {
		v.get("/item?item=" + id)
	}
	p := v.get("/item?item=kettle")
	if diff := cmp.Diff([]string{"Cast-iron teapot", "Stoneware mug"}, linksIn(p, "recent")); diff != "" {
		t.Errorf("recently viewed (newest first, without the item shown) mismatch (-want +got):\n%s", diff)
	}

	v.addToCart("mug", "1")
	p = v.setCartLine("kettle", "0")
	if diff := cmp.Diff([]string{"Stoneware mug"}, linksIn(p, "cart")); diff != "" {
		t.Errorf("cart after adding two items and removing one mismatch (-want +got):\n%s", diff)
	}

	var got []string
	for range 2 {
		got = append(got, s.visitor().get("/item?item=kettle").header.Get("X-Cache"))
	}
	if diff := cmp.Diff([]string{"miss", "hit"}, got); diff != "" {
		t.Errorf("X-Cache of two anonymous GETs of a popular item mismatch (-want +got):\n%s", diff)
	}

	p = v.post("/logout", nil)
	if loggedInAs(p) != "" || p.status != http.StatusOK {
		t.Errorf("after logout: status %d, logged in as %q, want 200, nobody", p.status, loggedInAs(p))
	}
	if _, ok := v.sessionCookie(); ok {
		t.Errorf("session cookie kept after logout")
	}
	if n, err := s.store.SessionCount(ctx); n != 0 || err != nil {
		t.Errorf("SessionCount after logout = %d, %v, want 0, nil", n, err)
	}
	if strings.Contains(v.get("/cart").body, "Stoneware mug") {
		t.Errorf("cart still shown after logout")
	}
}

// The flood: 300 anonymous requests of a popular item page, each
// with a junk parameter, on a private redis-server. Unknown parameters are
// served but not cached, so they add no keys (a few are allowed for the
// item's one page and the view counts).
func TestShop_JunkQueryStringsAddNoKeysOnRedis(t *testing.T) {
	srv := privateServer(t)
	prefix := uniquePrefix()
	store := openStore(t, srv, prefix)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	keys := func() int {
		t.Helper()
		n := 0
		for cursor := uint64(0); ; {
			e, err := client.Do(context.Background(), client.B().Scan().Cursor(cursor).Match(prefix+"*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				t.Fatalf("SCAN: %v", err)
			}
			n += len(e.Elements)
			if cursor = e.Cursor; cursor == 0 {
				return n
			}
		}
	}

	s := newTestShopOn(t, store, shopOptions{})
	for range 3 {
		s.visitor().get("/item?item=kettle")
	}
	if got := s.visitor().get("/item?item=kettle&utm_source=news&utm_medium=mail").header.Get("X-Cache"); got != "hit" {
		t.Errorf("the kettle's page with tracking parameters: X-Cache = %q, want hit", got)
	}
	before := keys()
	for i := range 300 {
		p := s.visitor().get(fmt.Sprintf("/item?item=kettle&junk=%d", i))
		if p.status != http.StatusOK || p.header.Get("X-Cache") != "bypass" {
			t.Fatalf("junk request %d: status %d, X-Cache %q, want 200, bypass", i, p.status, p.header.Get("X-Cache"))
		}
	}
	after := keys()
	t.Logf("keys with the store's prefix: %d before 300 junk requests, %d after", before, after)
	if after-before > 0 || after > 20 {
		t.Errorf("keys with the store's prefix: %d before 300 junk requests, %d after; want no more (and at most 20 in all)", before, after)
	}
}

// TestShop_UnchangedPagesCostAtMostACommandOnRedis reloads, as a logged-in
// visitor with a cart, the pages a shop serves most (the cart, an item
// viewed already, the home page) 40 times each on a private redis-server,
// and counts the commands the server ran (INFO commandstats): nothing
// changes between the reloads, so the session, cart, values and recent
// items come from the client-side cache and the views wait in the process;
// only the home page reads the most viewed items.
func TestShop_UnchangedPagesCostAtMostACommandOnRedis(t *testing.T) {
	srv := privateServer(t)
	if !srv.Owned() {
		t.Skip("RETAIL_REDIS_ADDR names a server others may use: its command counts are not this test's")
	}
	store := openStore(t, srv, uniquePrefix())
	calls := func() int {
		n, err := srv.CommandCalls()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	v := newTestShopOn(t, store, shopOptions{}).visitor()
	v.login("alice")
	v.addToCart("kettle", "1")
	for _, path := range []string{"/cart", "/item?item=kettle", "/"} {
		for range 3 { // the first reads fill the cache
			v.get(path)
			time.Sleep(10 * time.Millisecond) // for invalidations in flight
		}
		before := calls()
		for range 40 {
			v.get(path)
		}
		n := calls() - before - 1 // the INFO that read before
		t.Logf("40 reloads of %s: %d commands", path, n)
		if n > 40 {
			t.Errorf("40 reloads of %s, changing nothing, sent %d commands, want at most 40", path, n)
		}
	}
}

// TestShop_RedisDownFailsRequestsAtTheDeadline stops the shop's private
// redis-server under a visitor with a session: their next page ends at the
// shop's request timeout with an error page, rather than hang while the
// client retries (with no deadline it hangs past the test client's own).
func TestShop_RedisDownFailsRequestsAtTheDeadline(t *testing.T) {
	srv := privateServer(t)
	store := openStore(t, srv, uniquePrefix())
	v := newTestShopOn(t, store, shopOptions{RequestTimeout: 500 * time.Millisecond}).visitor()
	if p := v.addToCart("kettle", "1"); p.status != http.StatusOK {
		t.Fatalf("adding a kettle to a guest's cart: status %d", p.status)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("stopping redis-server: %v", err)
	}
	if p := v.get("/cart"); p.status < 500 {
		t.Errorf("GET /cart with Redis down = %d, want a 5xx error page", p.status)
	}
}

// TestShop_RowsComeBackAfterRedisRestartsEmpty runs the shop's workers on a
// private redis-server, restarts it without its data (as a Redis without
// persistence restarts), and checks that a pass of scheduleMissing
// schedules every row again and that the row cacher then caches them all.
// Before the restart, a pass schedules nothing.
func TestShop_RowsComeBackAfterRedisRestartsEmpty(t *testing.T) {
	srv := privateServer(t)
	if !srv.Owned() {
		t.Skip("RETAIL_REDIS_ADDR names a server this test may not restart")
	}
	store := openStore(t, srv, uniquePrefix())
	cat := newCatalog()
	pages, err := retail.NewPageCache(store, retail.PageCacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	workers, err := startWorkers(ctx, store, cat, pages, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("startWorkers = %v", err)
	}
	t.Cleanup(func() { cancel(); workers.Wait() })

	allCached := func() bool {
		for _, id := range cat.ids() {
			if _, ok, err := store.Row(context.Background(), id); !ok || err != nil {
				return false
			}
		}
		return true
	}
	waitFor(t, "every row cached", allCached)
	if n, err := scheduleMissing(ctx, store, cat); n != 0 || err != nil {
		t.Errorf("scheduleMissing over cached rows = %d, %v; want 0, nil", n, err)
	}

	if err := srv.Restart(); err != nil {
		t.Fatalf("restarting redis-server: %v", err)
	}
	var n int
	waitFor(t, "a pass after the restart", func() bool {
		n, err = scheduleMissing(ctx, store, cat)
		return err == nil
	})
	if n != len(cat) {
		t.Errorf("scheduleMissing after the restart scheduled %d rows, want all %d", n, len(cat))
	}
	waitFor(t, "every row cached again", allCached)
}

// waitFor polls done until it reports true, failing the test if it has not
// within waitLimit.
func waitFor(t *testing.T, what string, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(waitLimit); !done(); {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", waitLimit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestShop_TwoProcessesOnRedis runs two shop processes on one private
// redis-server, each with a Store of its own (client-side caching, and the
// tables that keep sessions and logout marks decoded, through
// backends.Open), as behind a load balancer that sends a visitor's
// requests to either. A cart filled on one is shown by the other; a device
// that logs out the user's other devices on one ends a device the other
// serves; a logout on one ends the session on the other, whose cookie the
// visitor still sends there. Each must show within waitLimit: a process
// that missed the server's message would serve what it held for CacheTTL
// (a minute).
func TestShop_TwoProcessesOnRedis(t *testing.T) {
	srv := privateServer(t)
	prefix := uniquePrefix()
	open := func() *testShop { return newTestShopOn(t, openStore(t, srv, prefix), shopOptions{}) }
	a, b := open(), open()
	shows := func(v *visitor, user string, cart []string) func() bool {
		return func() bool {
			p := v.get("/cart")
			return loggedInAs(p) == user && cmp.Equal(cart, linksIn(p, "cart"))
		}
	}

	phone := a.visitor()
	phone.login("alice")
	phone.get("/cart") // A holds the session now
	cookie, ok := phone.sessionCookie()
	if !ok {
		t.Fatal("no session cookie after the login")
	}
	phoneOnB := b.replayCookie(cookie)
	waitFor(t, "B to show alice's empty cart", shows(phoneOnB, "alice", nil))
	phone.addToCart("kettle", "2")
	start := time.Now()
	waitFor(t, "B to show the kettle A put in the cart", shows(phoneOnB, "alice", []string{"Electric kettle"}))
	t.Logf("B showed the cart line %v after A's answer", time.Since(start))

	laptop := b.visitor()
	laptop.login("alice")
	laptop.get("/cart") // B holds the laptop's session
	if p := phone.post("/devices/end-others", nil); p.status != http.StatusOK {
		t.Fatalf("POST /devices/end-others on A: status %d", p.status)
	}
	waitFor(t, "B to end the laptop's session", shows(laptop, "", nil))
	// Ending the others moved the phone's session to a new token: the old
	// cookie is another device now, and B must end it too.
	waitFor(t, "B to end the phone's old cookie", shows(phoneOnB, "", nil))
	if cookie, ok = phone.sessionCookie(); !ok {
		t.Fatal("no session cookie after ending the other devices")
	}
	phoneOnB = b.replayCookie(cookie)
	waitFor(t, "B to go on serving the phone", shows(phoneOnB, "alice", []string{"Electric kettle"}))

	if p := phoneOnB.post("/logout", nil); loggedInAs(p) != "" {
		t.Fatalf("after POST /logout on B: logged in as %q", loggedInAs(p))
	}
	start = time.Now()
	waitFor(t, "A to end the session B logged out", shows(phone, "", nil))
	t.Logf("A showed the phone logged out %v after B's answer", time.Since(start))
}

// privateServer starts a redis-server of the test's own (or skips the
// test, see redistest.Skip), stopped when the test ends.
func privateServer(t *testing.T) *redistest.Server {
	t.Helper()
	srv, err := redistest.StartServer()
	if err != nil {
		redistest.Skip(t, "no Redis server: "+err.Error())
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// openStore opens the shop's Store on srv under prefix, as the shop's -redis
// flag does, closed when the test ends.
func openStore(t *testing.T, srv *redistest.Server, prefix string) retail.Store {
	t.Helper()
	store, _, closeStore, err := backends.Open([]string{srv.Addr()}, backends.Options{Prefix: prefix})
	if err != nil {
		t.Fatalf("backends.Open(%s) = %v", srv.Addr(), err)
	}
	t.Cleanup(closeStore)
	return store
}
