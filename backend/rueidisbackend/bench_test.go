package rueidisbackend_test

import (
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
	"github.com/retailkit/retail/conformance"
)

// BenchmarkStore runs the suite's benchmarks on a real server with and
// without client-side caching, on a cluster, and on miniredis. Run it with
// the memory backend's in one go for a baseline measured in the same run:
//
//	go test -run '^$' -bench . ./backend/...
//
// RETAIL_BENCH_SESSIONS and RETAIL_BENCH_ITEMS size the population.
func BenchmarkStore(b *testing.B) {
	for _, tg := range targets[1:] {
		b.Run(tg.name, func(b *testing.B) { conformance.Benchmark(b, benchFactory(tg, 0)) })
		if tg.name == "redis" {
			b.Run("redis-nocache", func(b *testing.B) { conformance.Benchmark(b, benchFactory(tg, -1)) })
		}
	}
}

func benchFactory(tg target, cacheTTL time.Duration) conformance.Factory {
	return func(tb testing.TB, clock retail.Clock, cfg conformance.Config) retail.Store {
		c, prefix := tg.client(tb, rueidis.ClientOption{})
		return mustNew(tb, c, rueidisbackend.Options{
			Prefix: prefix, Clock: clock, CacheTTL: cacheTTL,
			IdleTimeout: cfg.IdleTimeout, Lifetime: cfg.Lifetime, TouchEvery: cfg.TouchEvery,
		})
	}
}
