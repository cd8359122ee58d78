package rueidisbackend_test

import (
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
	"github.com/retailkit/retail/internal/redistest"
)

// TestTouch_UnchangedVisitsSendNoCommand counts, with INFO commandstats on
// a server of its own, the commands that 40 visits of a logged-in session
// send: reloads of a page without an item, of the item viewed last, and
// their view counts. Within TouchEvery they change nothing, so at most a
// few reads fill the client-side cache; with TouchEvery off every visit
// runs the refresh script, which the test checks too, so that it can fail.
func TestTouch_UnchangedVisitsSendNoCommand(t *testing.T) {
	srv := ownServer(t, "its command counts are not this test's")
	for _, tc := range []struct {
		name     string
		touch    time.Duration
		min, max int
	}{
		{"default TouchEvery", 0, 0, 6},
		{"TouchEvery off", -1, 80, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, rueidis.ClientOption{InitAddress: []string{srv.Addr()}})
			clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
			s := mustNew(t, c, rueidisbackend.Options{Prefix: uniquePrefix(), Clock: clock, TouchEvery: tc.touch, ViewFlush: time.Hour})
			if _, err := s.StartSession(bg, "visitor", "alice"); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.RefreshSession(bg, "visitor", "kettle"); err != nil {
				t.Fatal(err)
			}
			// The tracker of the logout marks sends its setup commands
			// first (and then a probe a second, see tracker.go).
			waitFor(t, func() bool { _, tracking := rueidisbackend.MarkTracking(s); return tracking })
			// Let the first reads fill the cache.
			for range 3 {
				if _, _, err := s.RefreshSession(bg, "visitor", "kettle"); err != nil {
					t.Fatal(err)
				}
				time.Sleep(10 * time.Millisecond) // for invalidations in flight
			}
			before := commandCalls(t, srv)
			for i := range 40 {
				clock.Advance(time.Second)
				item := ""
				if i%2 == 0 {
					item = "kettle"
				}
				if user, ok, err := s.RefreshSession(bg, "visitor", item); user != "alice" || !ok || err != nil {
					t.Fatalf("RefreshSession = %q, %v, %v", user, ok, err)
				}
			}
			n := commandCalls(t, srv) - before - 1 // the INFO that read before
			t.Logf("40 visits: %d commands", n)
			if n < tc.min || n > tc.max {
				t.Errorf("40 unchanged visits sent %d commands, want %d..%d", n, tc.min, tc.max)
			}
			if err := s.FlushViews(bg); err != nil {
				t.Fatal(err)
			}
			if top, err := s.TopItems(bg, 1); err != nil || len(top) != 1 || top[0].Views != 24 {
				t.Errorf("TopItems(1) = %v, %v, want kettle with 24 views (every visit counted)", top, err)
			}
		})
	}
}

// commandCalls returns how many commands srv has run.
func commandCalls(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	n, err := srv.CommandCalls()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// ownServer starts a redis-server of the test's own, with the arguments
// extra, stopped when the test ends; it skips the test, for the reason why,
// where RETAIL_REDIS_ADDR names a server that others may use.
func ownServer(t *testing.T, why string, extra ...string) *redistest.Server {
	t.Helper()
	srv, err := redistest.StartServer(extra...)
	if err != nil {
		unavailable(t, "Redis server", err)
	}
	t.Cleanup(func() { srv.Close() })
	if !srv.Owned() {
		t.Skip("RETAIL_REDIS_ADDR names a server others may use: " + why)
	}
	return srv
}

// stallable starts a redis-server of the test's own that takes DEBUG, for
// a test that stalls it (DEBUG SLEEP) while other tests run on the
// package's server, and returns its address and the target that connects
// to it.
func stallable(t *testing.T) (string, target) {
	t.Helper()
	srv := ownServer(t, "DEBUG SLEEP stalls the whole server", debugCommand...)
	return srv.Addr(), target{"redis", true, func(tb testing.TB, opt rueidis.ClientOption) (rueidis.Client, string) {
		return singleClient(tb, srv.Addr(), opt), uniquePrefix()
	}}
}

// stallableCluster is stallable for a 3-master cluster: it returns the
// addresses of its masters.
func stallableCluster(t *testing.T) []string {
	t.Helper()
	cl, err := redistest.StartCluster(3, debugCommand...)
	if err != nil {
		unavailable(t, "Redis Cluster", err)
	}
	t.Cleanup(func() { cl.Close() })
	if !cl.Owned() {
		t.Skip("RETAIL_REDIS_CLUSTER_ADDRS names a cluster others may use: DEBUG SLEEP stalls a whole node")
	}
	return cl.Addrs()
}
