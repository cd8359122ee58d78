package rueidisbackend_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
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
	return func(tb testing.TB, clock retail.Clock) retail.Store {
		c, prefix := tg.client(tb, rueidis.ClientOption{})
		return mustNew(tb, c, rueidisbackend.Options{Prefix: prefix, Clock: clock, CacheTTL: cacheTTL})
	}
}

// BenchmarkMemoryPerSession loads 100,000 sessions into the server, the
// way the shop makes them (StartSession, a RefreshSession viewing an item,
// one cart line), as guests and as logged-in users, and in the book's key
// layout, and reports the growth of the server's used_memory per session
// for each.
func BenchmarkMemoryPerSession(b *testing.B) {
	if server == nil {
		unavailable(b, "Redis server", serverErr)
	}
	const sessions = 100_000
	measureOnce.Do(func() {
		c := newClient(b, rueidis.ClientOption{InitAddress: []string{server.Addr()}, ForceSingleClient: true})
		perSession = map[string]float64{}
		for _, v := range []struct {
			name string
			user func(i int) string
		}{
			{"guest", func(int) string { return "" }},
			{"user", func(i int) string { return fmt.Sprintf("user-%d", i) }},
		} {
			s := mustNew(b, c, rueidisbackend.Options{Prefix: uniquePrefix()})
			perSession[v.name] = usedMemoryDelta(b, c, func() {
				parallelDo(sessions, func(i int) error { return shopSession(s, i, v.user(i)) })
			}) / sessions
		}
		prefix := uniquePrefix()
		perSession["book"] = usedMemoryDelta(b, c, func() {
			parallelDo(sessions, func(i int) error { return bookUpdateToken(c, prefix, i) })
		}) / sessions
	})
	for range b.N {
	}
	b.ReportMetric(perSession["guest"], "guest-bytes/session")
	b.ReportMetric(perSession["user"], "user-bytes/session")
	b.ReportMetric(perSession["book"], "book-bytes/session")
}

// shopSession makes session i as the shop does.
func shopSession(s *rueidisbackend.Store, i int, user string) error {
	token, item := benchToken(i), fmt.Sprintf("item-%d", i%1000)
	if _, err := s.StartSession(bg, token, user); err != nil {
		return err
	}
	if _, _, err := s.RefreshSession(bg, token, item); err != nil {
		return err
	}
	return s.AddToCart(bg, token, item, 1)
}

var (
	measureOnce sync.Once
	perSession  map[string]float64
)

func benchToken(i int) string { return fmt.Sprintf("%032x", i) }

// bookUpdateToken is the book's update_token and add_to_cart, key for key:
// a login hash field, a recent entry, a viewed:TOKEN sorted set trimmed to
// 25, the global view count, and a cart:TOKEN hash.
func bookUpdateToken(c rueidis.Client, prefix string, i int) error {
	token, item := benchToken(i), fmt.Sprintf("item-%d", i%1000)
	ts := float64(time.Now().UnixMicro()) / 1e6
	for _, r := range c.DoMulti(bg,
		c.B().Hset().Key(prefix+"login:").FieldValue().FieldValue(token, fmt.Sprintf("user-%d", i)).Build(),
		c.B().Zadd().Key(prefix+"recent:").ScoreMember().ScoreMember(ts, token).Build(),
		c.B().Zadd().Key(prefix+"viewed:"+token).ScoreMember().ScoreMember(ts, item).Build(),
		c.B().Zremrangebyrank().Key(prefix+"viewed:"+token).Start(0).Stop(-26).Build(),
		c.B().Zincrby().Key(prefix+"viewed:").Increment(-1).Member(item).Build(),
		c.B().Hset().Key(prefix+"cart:"+token).FieldValue().FieldValue(item, "1").Build(),
	) {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}

func usedMemoryDelta(b *testing.B, c rueidis.Client, load func()) float64 {
	before := usedMemory(b, c)
	load()
	return float64(usedMemory(b, c) - before)
}

func usedMemory(b *testing.B, c rueidis.Client) int64 {
	info, err := c.Do(bg, c.B().Info().Section("memory").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("INFO memory has no used_memory")
	return 0
}

// parallelDo runs f(0..n-1) from 64 goroutines, panicking on error (this is
// benchmark setup).
func parallelDo(n int, f func(i int) error) {
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Go(func() {
			for i := w; i < n; i += 64 {
				if err := f(i); err != nil {
					panic(err)
				}
			}
		})
	}
	wg.Wait()
}
