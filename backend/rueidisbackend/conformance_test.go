package rueidisbackend_test

import (
	"testing"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
	"github.com/retailkit/retail/conformance"
)

// TestConformance runs the whole suite on miniredis, a real server and a
// real cluster, the three at once (each store has a keyspace of its own).
// On the cluster, rueidis refuses (panics on) any script or multi-key
// command whose keys span slots, so a pass proves that none does.
func TestConformance(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target) {
		t.Parallel()
		conformance.Run(t, func(tb testing.TB, clock retail.Clock, cfg conformance.Config) retail.Store {
			s, _, _ := newStoreWith(tb, tg, rueidisbackend.Options{
				Clock: clock, IdleTimeout: cfg.IdleTimeout, Lifetime: cfg.Lifetime, TouchEvery: cfg.TouchEvery,
			})
			return s
		})
	})
}
