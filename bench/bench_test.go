package main

import (
	"context"
	"errors"
	"os"
	"testing"
)

// TestContendersPass runs the checks every contender must pass before it
// is timed, on a private redis-server and on a private 3-master cluster.
func TestContendersPass(t *testing.T) {
	for _, tc := range []struct {
		name    string
		masters int
	}{{"standalone", 0}, {"cluster", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := startRedis(tc.masters)
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
			b := &bench{cfg: config{conc: 8, batches: []int{100}}, srv: srv, pop: newPopulation(300, 50)}
			t.Cleanup(b.close)
			for name, err := range b.verify(context.Background()) {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
}
