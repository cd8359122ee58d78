package rueidisbackend_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
	"github.com/retailkit/retail/backend/rueidisbackend/rueidistest"
	"github.com/retailkit/retail/conformance"
)

// TestConformance runs the whole suite on miniredis, a real server and a
// real cluster, the three at once. On the cluster, rueidis refuses (panics
// on) any script or multi-key command whose keys span slots, so a pass
// proves that none does.
//
// On the real server and cluster the suite runs as a user's test runs it on
// their own Redis, through rueidistest.Factory, on a keyspace that already
// holds keys of others (see writeForeignKeys), which must come out of it
// untouched, while no key of the suite's stores may remain (checked on the
// servers this test binary started, which no one else uses).
func TestConformance(t *testing.T) {
	t.Parallel()
	t.Run("miniredis", func(t *testing.T) {
		t.Parallel()
		// Where the real server and cluster run every race in full, a
		// quarter of the trials here: miniredis runs each script in a new
		// Lua interpreter, which made its races most of the suite's time.
		var opts conformance.Options
		if server != nil && cluster != nil {
			opts.RaceTrials = 1_000
		}
		conformance.RunWith(t, func(tb testing.TB, clock retail.Clock, cfg conformance.Config) retail.Store {
			s, _, _ := newStoreWith(tb, targets[0], rueidisbackend.Options{
				Clock: clock, IdleTimeout: cfg.IdleTimeout, Lifetime: cfg.Lifetime, TouchEvery: cfg.TouchEvery,
				MaxSessionsPerUser: cfg.MaxSessionsPerUser,
			})
			return s
		}, opts)
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		if server == nil {
			unavailable(t, "Redis server", serverErr)
		}
		runOnOwnRedis(t, rueidis.ClientOption{InitAddress: []string{server.Addr()}}, server.Owned())
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		if cluster == nil {
			unavailable(t, "Redis Cluster", clusterErr)
		}
		runOnOwnRedis(t, rueidis.ClientOption{InitAddress: cluster.Addrs()}, cluster.Owned())
	})
}

// runOnOwnRedis writes foreign keys on the Redis opt names, runs the suite
// there through rueidistest.Factory, and then checks that the foreign keys
// are as they were and that, if the server is this test binary's own
// (owned), no key of the suite's stores is left.
func runOnOwnRedis(t *testing.T, opt rueidis.ClientOption, owned bool) {
	c := newClient(t, opt)
	foreign := writeForeignKeys(t, c)
	before := snapshot(t, c, foreign)
	conformance.Run(t, rueidistest.Factory(opt))
	if t.Failed() {
		return
	}
	if diff := cmp.Diff(before, snapshot(t, c, foreign)); diff != "" {
		t.Fatalf("the foreign keys changed (-before +after):\n%s", diff)
	}
	if !owned {
		t.Log("not checking that no key of the suite is left: others may run it on this server")
		return
	}
	var left []string
	for _, k := range scanKeys(t, c, rueidistest.KeyPrefix) {
		if !slices.Contains(foreign.keys, k) {
			left = append(left, k)
		}
	}
	if len(left) > 0 {
		slices.Sort(left)
		t.Fatalf("%d keys under %q are left, the first %q", len(left), rueidistest.KeyPrefix, left[0])
	}
}

// foreignKeys are keys the suite did not write: the prefixes they are
// all under, and the raw keys among them.
type foreignKeys struct {
	prefixes []string
	keys     []string
}

// writeForeignKeys fills the keyspace with keys a run of the suite must
// leave alone: another shop's data (sessions, a cart, counted views, a
// page, a scheduled row), and keys whose names are close to those of the
// suite's stores, one of them under rueidistest.KeyPrefix as if another
// run were using the server.
func writeForeignKeys(t *testing.T, c rueidis.Client) foreignKeys {
	shop := "shop-" + uniquePrefix()
	s := mustNew(t, c, rueidisbackend.Options{Prefix: shop})
	for _, tok := range []string{"alice-token", "guest-token"} {
		if err := s.UpdateToken(bg, tok, strings.TrimSuffix(tok, "-token"), "kettle"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddToCart(bg, "guest-token", "kettle", 2); err != nil {
		t.Fatal(err)
	}
	if err := s.SetItemPage(bg, "kettle", "GET /item?item=kettle", []byte("<h1>kettle</h1>"), retail.MaxPageTTL); err != nil { // outlives the slowest run
		t.Fatal(err)
	}
	if err := s.ScheduleRowCache(bg, "row-1", retail.DefaultPageTTL); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // sends the views
		t.Fatal(err)
	}
	id := strings.TrimSuffix(uniquePrefix(), ":")
	f := foreignKeys{
		prefixes: []string{shop, rueidistest.KeyPrefix + id, strings.TrimSuffix(rueidistest.KeyPrefix, ":") + id},
		keys: []string{
			rueidistest.KeyPrefix + id + ":{sessions}:seen", // another run's
			rueidistest.KeyPrefix + id + ":page:GET /",
			strings.TrimSuffix(rueidistest.KeyPrefix, ":") + id, // no colon: not under KeyPrefix
		},
	}
	for _, k := range f.keys {
		if err := c.Do(bg, c.B().Set().Key(k).Value("foreign").Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if got := scanKeys(t, c, shop); len(got) < 6 {
		t.Fatalf("the foreign shop wrote %d keys, %q; want at least 6", len(got), got)
	}
	// They go when the test ends, so that a run of it with -count=N
	// finds no foreign key of an earlier run left under KeyPrefix.
	t.Cleanup(func() {
		for _, p := range f.prefixes {
			for _, k := range scanKeys(t, c, p) {
				if err := c.Do(bg, c.B().Del().Key(k).Build()).Error(); err != nil {
					t.Errorf("deleting the foreign key %q: %v", k, err)
				}
			}
		}
	})
	return f
}

// snapshot returns every key under f's prefixes, each with its DUMP and
// whether it has a TTL.
func snapshot(t *testing.T, c rueidis.Client, f foreignKeys) map[string]string {
	got := map[string]string{}
	for _, p := range f.prefixes {
		for _, k := range scanKeys(t, c, p) {
			dump, err := c.Do(bg, c.B().Dump().Key(k).Build()).ToString()
			if err != nil {
				t.Fatalf("DUMP %q: %v", k, err)
			}
			ttl, err := c.Do(bg, c.B().Pttl().Key(k).Build()).AsInt64()
			if err != nil {
				t.Fatalf("PTTL %q: %v", k, err)
			}
			got[k] = map[bool]string{true: "ttl ", false: "persistent "}[ttl > 0] + dump
		}
	}
	if len(got) == 0 {
		t.Fatalf("no key under %q", f.prefixes)
	}
	return got
}
