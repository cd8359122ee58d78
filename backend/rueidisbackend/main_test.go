package rueidisbackend_test

import (
	"context"
	"errors"
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

func TestMain(m *testing.M) {
	server, serverErr = redistest.StartServer()
	cluster, clusterErr = redistest.StartCluster(3)
	code := m.Run()
	if server != nil {
		server.Close()
	}
	if cluster != nil {
		cluster.Close()
	}
	os.Exit(code)
}

// A target is a place the Store runs: an in-process miniredis, a real
// server, or a real 3-master cluster.
type target struct {
	name string
	// client returns a client for a fresh, empty keyspace and its prefix.
	client func(tb testing.TB, opt rueidis.ClientOption) (rueidis.Client, string)
}

var targets = []target{
	{"miniredis", miniredisClient},
	{"redis", func(tb testing.TB, opt rueidis.ClientOption) (rueidis.Client, string) {
		if server == nil {
			redistest.Skip(tb, "no Redis server: "+serverErr.Error())
		}
		opt.InitAddress = []string{server.Addr()}
		opt.ForceSingleClient = true
		return newClient(tb, opt), uniquePrefix()
	}},
	{"cluster", func(tb testing.TB, opt rueidis.ClientOption) (rueidis.Client, string) {
		if cluster == nil {
			redistest.Skip(tb, "no Redis Cluster: "+clusterErr.Error())
		}
		opt.InitAddress = cluster.Addrs()
		c := newClient(tb, opt)
		if c.Mode() != rueidis.ClientModeCluster {
			tb.Fatalf("client mode = %v, want cluster", c.Mode())
		}
		return c, uniquePrefix()
	}},
}

// miniredisClient starts a miniredis for each store, so its keyspace is
// empty. miniredis has no client tracking, so caching is off.
func miniredisClient(tb testing.TB, opt rueidis.ClientOption) (rueidis.Client, string) {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		tb.Fatalf("miniredis: %v", err)
	}
	tb.Cleanup(mr.Close)
	opt.InitAddress = []string{mr.Addr()}
	opt.DisableCache = true
	opt.ForceSingleClient = true
	return newClient(tb, opt), rueidisbackend.DefaultPrefix
}

func newClient(tb testing.TB, opt rueidis.ClientOption) rueidis.Client {
	c, err := rueidis.NewClient(opt)
	if err != nil {
		tb.Fatalf("rueidis.NewClient(%v) = %v", opt.InitAddress, err)
	}
	tb.Cleanup(c.Close)
	return c
}

var prefixes atomic.Int64

// uniquePrefix isolates a store on a shared server: no test flushes a
// server, so each store gets keys of its own.
func uniquePrefix() string {
	return fmt.Sprintf("t%d-%d:", time.Now().UnixNano()%1e9, prefixes.Add(1))
}

// newStore returns a Store on t for a fresh keyspace.
func newStore(tb testing.TB, t target, clock retail.Clock) (*rueidisbackend.Store, rueidis.Client, string) {
	c, prefix := t.client(tb, rueidis.ClientOption{})
	s, err := rueidisbackend.New(c, rueidisbackend.Options{Prefix: prefix, Clock: clock})
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
	if _, err := rueidisbackend.New(nil, rueidisbackend.Options{}); !errors.Is(err, rueidisbackend.ErrOptions) {
		t.Errorf("New(nil) = %v, want ErrOptions", err)
	}
	c, _ := miniredisClient(t, rueidis.ClientOption{})
	if _, err := rueidisbackend.New(c, rueidisbackend.Options{Prefix: "a{b}:"}); !errors.Is(err, rueidisbackend.ErrOptions) {
		t.Errorf("New(prefix with braces) = %v, want ErrOptions", err)
	}
}

var bg = context.Background()
