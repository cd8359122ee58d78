package main

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// startTestRedis starts a private server for t, or skips t without
// redis-server on PATH (unless RETAIL_REQUIRE_REDIS is set).
func startTestRedis(t *testing.T, masters int) *servers {
	t.Helper()
	srv, err := startRedis(masters)
	if errors.Is(err, errNoRedis) {
		if os.Getenv("RETAIL_REQUIRE_REDIS") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	return srv
}

// TestContendersPass runs the checks every contender must pass before it
// is timed, on a private redis-server and on a private 3-master cluster.
func TestContendersPass(t *testing.T) {
	for _, tc := range []struct {
		name    string
		masters int
	}{{"standalone", 0}, {"cluster", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startTestRedis(t, tc.masters)
			b := &bench{cfg: config{conc: 8, batches: []int{100}}, srv: srv, pop: newPopulation(300, 50)}
			t.Cleanup(b.close)
			for name, err := range b.verify(context.Background()) {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
}

// TestMemoryReports runs the memory group on a few sessions: every layout
// grows used_memory, every part taken apart frees some, and the databases
// are left empty. The figures themselves are the report's, not asserted.
func TestMemoryReports(t *testing.T) {
	srv := startTestRedis(t, 0)
	const n = 2000
	b := &bench{cfg: config{conc: 8, sessions: n}, srv: srv, pop: newPopulation(n, 50)}
	t.Cleanup(b.close)
	ctx := context.Background()
	rows, err := b.memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d layouts reported, want 3: %+v", len(rows), rows)
	}
	for _, r := range rows {
		if r.total <= 0 {
			t.Errorf("%s: %.1f bytes a session", r.name, r.total)
		}
		for _, p := range r.parts {
			if p.name != "other" && p.bytes <= 0 {
				t.Errorf("%s: part %s freed %.1f bytes a session", r.name, p.name, p.bytes)
			}
		}
	}
	for _, want := range []struct {
		name  string
		parts int
	}{{"retail, guest", 4}, {"retail, logged in", 0}, {"book", 5}} {
		if i := slices.IndexFunc(rows, func(r memLayout) bool { return r.name == want.name }); i < 0 || len(rows[i].parts) != want.parts {
			t.Errorf("%s: want %d parts (with other) in %+v", want.name, want.parts, rows)
		}
	}
	for _, db := range []int{dbGuest, dbUser, dbBook} {
		c := redis.NewClient(&redis.Options{Addr: srv.addrs[0], DB: db})
		keys, err := c.DBSize(ctx).Result()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if keys != 0 {
			t.Errorf("database %d: %d keys left", db, keys)
		}
	}
	var out strings.Builder
	printMemory(&out, n, rows)
	t.Log(out.String())
}
