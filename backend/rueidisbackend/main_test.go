package rueidisbackend_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
	"github.com/retailkit/retail/internal/redistest"
)

// The private servers of this test binary, started by TestMain when
// redis-server is available; nil with the reason otherwise.
var (
	server     *redistest.Server
	serverErr  error
	cluster    *redistest.Cluster
	clusterErr error
)

// debugCommand lets the tests' own connections send DEBUG (Redis 7 refuses
// it by default), which TestDeadline_StalledServer stalls the servers with.
var debugCommand = []string{"--enable-debug-command", "local"}

func TestMain(m *testing.M) {
	// Most tests that run in parallel wait on servers (a private cluster
	// starting, a stall, a failover) rather than use a CPU, so more of
	// them run at once than -parallel's default, GOMAXPROCS, unless the
	// command line says otherwise.
	flag.Parse()
	if !flagSet("test.parallel") {
		flag.Set("test.parallel", "8")
	}
	server, serverErr = redistest.StartServer(debugCommand...)
	cluster, clusterErr = redistest.StartCluster(3, debugCommand...)
	code := redistest.Main(m)
	if server != nil {
		server.Close()
	}
	if cluster != nil {
		cluster.Close()
	}
	os.Exit(code)
}

// flagSet reports whether the command line set the flag name.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// A target is a place the Store runs: an in-process miniredis, a real
// server, or a real 3-master cluster.
type target struct {
	name string
	// caching is whether the server has client tracking, so that reads are
	// served from the client-side cache; miniredis has none.
	caching bool
	// client returns a client for a fresh, empty keyspace and its prefix.
	client func(tb testing.TB, opt rueidis.ClientOption) (rueidis.Client, string)
}

var targets = []target{
	{"miniredis", false, miniredisClient},
	{"redis", true, func(tb testing.TB, opt rueidis.ClientOption) (rueidis.Client, string) {
		if server == nil {
			unavailable(tb, "Redis server", serverErr)
		}
		return singleClient(tb, server.Addr(), opt), uniquePrefix()
	}},
	{"cluster", true, func(tb testing.TB, opt rueidis.ClientOption) (rueidis.Client, string) {
		if cluster == nil {
			unavailable(tb, "Redis Cluster", clusterErr)
		}
		opt.InitAddress = cluster.Addrs()
		c := newClient(tb, opt)
		if c.Mode() != rueidis.ClientModeCluster {
			tb.Fatalf("client mode = %v, want cluster", c.Mode())
		}
		return c, uniquePrefix()
	}},
}

// unavailable skips tb if what could not be started is not installed
// (failing it under RETAIL_REQUIRE_REDIS=1), and fails it if it was there
// but would not start.
func unavailable(tb testing.TB, what string, err error) {
	tb.Helper()
	if errors.Is(err, redistest.ErrUnavailable) {
		redistest.Skip(tb, "no "+what+": "+err.Error())
	}
	tb.Fatalf("starting a %s: %v", what, err)
}

// miniredisClient starts a miniredis for each store, so its keyspace is
// empty.
func miniredisClient(tb testing.TB, opt rueidis.ClientOption) (rueidis.Client, string) {
	return miniredisClientOf(tb, startMiniredis(tb), opt), rueidisbackend.DefaultPrefix
}

func startMiniredis(tb testing.TB) *miniredis.Miniredis {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		tb.Fatalf("miniredis: %v", err)
	}
	tb.Cleanup(mr.Close)
	return mr
}

// miniredisClientOf connects to mr. miniredis has no client tracking, so
// caching is off.
func miniredisClientOf(tb testing.TB, mr *miniredis.Miniredis, opt rueidis.ClientOption) rueidis.Client {
	opt.InitAddress = []string{mr.Addr()}
	opt.DisableCache = true
	opt.ForceSingleClient = true
	return newClient(tb, opt)
}

func newClient(tb testing.TB, opt rueidis.ClientOption) rueidis.Client {
	c, err := rueidis.NewClient(opt)
	if err != nil {
		tb.Fatalf("rueidis.NewClient(%v) = %v", opt.InitAddress, err)
	}
	tb.Cleanup(c.Close)
	return c
}

// singleClient connects to the single server at addr with opt.
func singleClient(tb testing.TB, addr string, opt rueidis.ClientOption) rueidis.Client {
	opt.InitAddress = []string{addr}
	opt.ForceSingleClient = true
	return newClient(tb, opt)
}

var prefixes atomic.Int64

// uniquePrefix isolates a store on a shared server: no test flushes a
// server, so each store gets keys of its own.
func uniquePrefix() string {
	return fmt.Sprintf("t%d-%d:", time.Now().UnixNano()%1e9, prefixes.Add(1))
}

// newStore returns a Store on t for a fresh keyspace.
func newStore(tb testing.TB, t target, clock retail.Clock) (*rueidisbackend.Store, rueidis.Client, string) {
	return newStoreWith(tb, t, rueidisbackend.Options{Clock: clock})
}

// newStoreWith returns a Store with opts on t for a fresh keyspace; the
// target chooses the prefix.
func newStoreWith(tb testing.TB, t target, opts rueidisbackend.Options) (*rueidisbackend.Store, rueidis.Client, string) {
	c, prefix := t.client(tb, rueidis.ClientOption{})
	opts.Prefix = prefix
	s, err := rueidisbackend.New(c, opts)
	if err != nil {
		tb.Fatalf("New() = %v", err)
	}
	return s, c, prefix
}

// forEachTarget runs f as a subtest named after each target.
func forEachTarget(t *testing.T, f func(t *testing.T, tg target)) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) { f(t, tg) })
	}
}

func TestNew_RejectsBadOptions(t *testing.T) {
	c, _ := miniredisClient(t, rueidis.ClientOption{})
	tests := []struct {
		name   string
		client rueidis.Client
		opts   rueidisbackend.Options
		arg    string
	}{
		{"nil client", nil, rueidisbackend.Options{}, "client"},
		{"prefix with braces", c, rueidisbackend.Options{Prefix: "a{b}:"}, "Prefix"},
		{"prefix with a closing brace", c, rueidisbackend.Options{Prefix: "a}:"}, "Prefix"},
		{"negative RecentLimit", c, rueidisbackend.Options{RecentLimit: -1}, "RecentLimit"},
		{"negative MaxSessionsPerUser", c, rueidisbackend.Options{MaxSessionsPerUser: -1}, "MaxSessionsPerUser"},
		{"negative TTLSlack", c, rueidisbackend.Options{TTLSlack: -time.Millisecond}, "TTLSlack"},
		{"negative IdleTimeout", c, rueidisbackend.Options{IdleTimeout: -time.Second}, "IdleTimeout"},
		{"IdleTimeout below a millisecond", c, rueidisbackend.Options{IdleTimeout: time.Microsecond}, "IdleTimeout"},
		{"Lifetime too long", c, rueidisbackend.Options{Lifetime: retail.MaxSessionTime + time.Millisecond}, "Lifetime"},
	}
	for _, tt := range tests {
		s, err := rueidisbackend.New(tt.client, tt.opts)
		var inputErr *retail.InputError
		if s != nil || !errors.Is(err, retail.ErrInvalid) || !errors.As(err, &inputErr) ||
			inputErr.Op != "rueidisbackend.New" || inputErr.Arg != tt.arg {
			t.Errorf("New(%s) = %v, %v; want nil and an *retail.InputError for rueidisbackend.New, %s", tt.name, s, err, tt.arg)
		}
	}
}

var bg = context.Background()
