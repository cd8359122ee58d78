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
	return func(tb testing.TB, clock retail.Clock, cfg conformance.Config) retail.Store {
		c, prefix := tg.client(tb, rueidis.ClientOption{})
		return mustNew(tb, c, rueidisbackend.Options{
			Prefix: prefix, Clock: clock, CacheTTL: cacheTTL,
			IdleTimeout: cfg.IdleTimeout, Lifetime: cfg.Lifetime, TouchEvery: cfg.TouchEvery,
		})
	}
}

// BenchmarkMemoryPerSession loads 100,000 sessions into the server, the
// way the shop makes them (StartSession, a RefreshSession viewing an item,
// one cart line), as guests and as logged-in users, and in the book's key
// layout, and reports the growth of the server's used_memory per session
// for each. It then takes the guests' and the book's sessions apart, part
// by part, and reports what each part held: for the guests, the key's
// TTL, then the session's hash and the session index; for the
// book, the login hash field, the recent entry, the viewed sorted set and
// the cart. A hash table's bucket array goes with the part whose removal
// empties the table: the keyspace's with the last kind of key removed, the
// TTL table's with the TTLs. What no part frees (the shared view counts) is
// reported as other.
func BenchmarkMemoryPerSession(b *testing.B) {
	if server == nil {
		unavailable(b, "Redis server", serverErr)
	}
	if !server.Owned() {
		b.Skip("empties databases of its own: needs a server the tests started, not RETAIL_REDIS_ADDR")
	}
	const sessions = 100_000
	measureOnce.Do(func() {
		perSession = map[string]float64{}
		for db, v := range []struct {
			name string
			user func(i int) string
		}{
			{"guest", func(int) string { return "" }},
			{"user", func(i int) string { return fmt.Sprintf("user-%d", i) }},
		} {
			c := layoutClient(b, 13+db)
			prefix := uniquePrefix()
			s := mustNew(b, c, rueidisbackend.Options{Prefix: prefix})
			perSession[v.name] = usedMemoryDelta(b, c, func() {
				parallelDo(sessions, func(i int) error { return shopSession(s, i, v.user(i)) })
			}) / sessions
			if v.name == "guest" {
				takeApart(b, c, "guest", perSession["guest"], sessions, []memoryPart{
					part("ttl", func(i int) rueidis.Completed { return c.B().Persist().Key(benchSessionKey(prefix, i)).Build() }),
					part("session", func(i int) rueidis.Completed { return c.B().Del().Key(benchSessionKey(prefix, i)).Build() }),
					part("index", func(i int) rueidis.Completed {
						return c.B().Zrem().Key(prefix + "{sessions}:seen").Member(retail.SessionID(benchToken(i))).Build()
					}),
				})
			}
		}
		c := layoutClient(b, 15)
		prefix := uniquePrefix()
		perSession["book"] = usedMemoryDelta(b, c, func() {
			parallelDo(sessions, func(i int) error { return bookUpdateToken(c, prefix, i) })
		}) / sessions
		takeApart(b, c, "book", perSession["book"], sessions, []memoryPart{
			part("login", func(i int) rueidis.Completed { return c.B().Hdel().Key(prefix + "login:").Field(benchToken(i)).Build() }),
			part("recent", func(i int) rueidis.Completed {
				return c.B().Zrem().Key(prefix + "recent:").Member(benchToken(i)).Build()
			}),
			part("viewed", func(i int) rueidis.Completed { return c.B().Del().Key(prefix + "viewed:" + benchToken(i)).Build() }),
			part("cart", func(i int) rueidis.Completed { return c.B().Del().Key(prefix + "cart:" + benchToken(i)).Build() }),
		})
	})
	for range b.N {
	}
	for _, name := range []string{"guest", "user", "book"} {
		b.ReportMetric(perSession[name], name+"-bytes/session")
	}
	for _, name := range memoryParts {
		b.ReportMetric(perSession[name], name+"-bytes/session")
	}
}

// layoutClient returns a client of the test server's database db, emptied
// first: each layout is measured in a database of its own, so that it pays
// for its own hash tables' growth, whatever was measured before it.
func layoutClient(b *testing.B, db int) rueidis.Client {
	c := newClient(b, rueidis.ClientOption{InitAddress: []string{server.Addr()}, ForceSingleClient: true, SelectDB: db})
	if err := c.Do(bg, c.B().Flushdb().Build()).Error(); err != nil {
		b.Fatal(err)
	}
	return c
}

// benchSessionKey is the key of benchmark session i in the Store's layout
// (see the package doc).
func benchSessionKey(prefix string, i int) string {
	return sessionKey(prefix, retail.SessionID(benchToken(i)))
}

// memoryPart is one part of the sessions that takeApart measures: the
// commands that remove it from session i (or, for TTLs, strip it).
type memoryPart struct {
	name string
	cmds []func(i int) rueidis.Completed
}

func part(name string, cmds ...func(i int) rueidis.Completed) memoryPart {
	return memoryPart{name, cmds}
}

// memoryParts lists the parts' metric names in the order takeApart measured
// them.
var memoryParts []string

// takeApart removes the parts of the sessions of a layout in turn, noting
// the memory each freed per session as perSession[layout-part], and what
// none freed of the layout's total as perSession[layout-other].
func takeApart(b *testing.B, c rueidis.Client, layout string, total float64, sessions int, parts []memoryPart) {
	other := total
	for _, p := range parts {
		name := layout + "-" + p.name
		perSession[name] = -usedMemoryDelta(b, c, func() {
			for from := 0; from < sessions; from += 1000 {
				var cmds rueidis.Commands
				for i := from; i < min(from+1000, sessions); i++ {
					for _, cmd := range p.cmds {
						cmds = append(cmds, cmd(i))
					}
				}
				for _, r := range c.DoMulti(bg, cmds...) {
					if err := r.Error(); err != nil {
						b.Fatal(err)
					}
				}
			}
			// Redis shrinks a hash table that deletions left nearly empty
			// in its cron, ten times a second: let it, so that the
			// table's bucket array is credited to the part whose removal
			// emptied it, not to whichever comes next.
			time.Sleep(300 * time.Millisecond)
		}) / float64(sessions)
		other -= perSession[name]
		memoryParts = append(memoryParts, name)
	}
	perSession[layout+"-other"] = other
	memoryParts = append(memoryParts, layout+"-other")
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
