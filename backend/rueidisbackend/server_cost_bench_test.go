package rueidisbackend_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// BenchmarkServerCost measures what a session call costs the server, and
// why, in CPU time (INFO cpu) and INFO commandstats, as the README's
// "Performance" section reports them. Its parts:
//
//   - strings=N: a script that does nothing, called with N strings a
//     session (half keys, half arguments), 20 sessions a call, as the
//     batched session scripts are: what passing a call's strings costs.
//   - read/keys=K/ttl=T: the same script reading one random key of K (with
//     or without TTLs) a session: what a key lookup costs once the
//     keyspace outgrows the CPU's caches.
//   - rewrite/keys=200000: reading and rewriting one random key a session,
//     keeping its TTL: the least a session script that keeps a session in
//     one key could cost.
//   - update_token, add_to_cart and clean_sessions: the Store's own calls
//     over 20,000 sessions, with the time the server spent in each command
//     they run (µs a call, or a removed session), from INFO commandstats; a
//     script's time includes the commands it runs.
//   - book_add_to_cart: the book's add_to_cart, one HSET a call, as the
//     peers send it, over as many carts: what the cart script is measured
//     against.
//
// Run it with
//
//	go test -run '^$' -bench ServerCost ./backend/rueidisbackend/
//
// The key sets live in a database of their own, emptied first, and the
// server's statistics are reset, so it needs a server the tests started
// (not RETAIL_REDIS_ADDR). Real batches hold as many calls as arrive
// while two are on their way (up to 256); the scripts here take 20.
func BenchmarkServerCost(b *testing.B) {
	if server == nil {
		unavailable(b, "Redis server", serverErr)
	}
	if !server.Owned() {
		b.Skip("resets the server's statistics and empties a database: needs a server the tests started, not RETAIL_REDIS_ADDR")
	}
	for _, n := range []int{2, 6, 10, 14} {
		b.Run(fmt.Sprintf("strings=%d", n), func(b *testing.B) {
			c := costClient(b, 0)
			scriptCost(b, c, "return 1", n, func(_ *rand.Rand, i int) string { return costKey(i) })
		})
	}
	for _, keys := range []int{1_000, 1_000_000} {
		for _, ttl := range []bool{true, false} {
			b.Run(fmt.Sprintf("read/keys=%d/ttl=%v", keys, ttl), func(b *testing.B) {
				c := keyspace(b, keys, ttl)
				scriptCost(b, c, `for i = 1, #KEYS do redis.call('GET', KEYS[i]) end return 1`, 2,
					func(r *rand.Rand, _ int) string { return costKey(r.IntN(keys)) })
			})
		}
	}
	b.Run("rewrite/keys=200000", func(b *testing.B) {
		c := keyspace(b, 200_000, true)
		scriptCost(b, c, `for i = 1, #KEYS do redis.call('SET', KEYS[i], redis.call('GET', KEYS[i]), 'KEEPTTL') end return 1`, 2,
			func(r *rand.Rand, _ int) string { return costKey(r.IntN(200_000)) })
	})
	b.Run("update_token", func(b *testing.B) {
		const sessions, items = 20_000, 1_000
		c := costClient(b, 0)
		s := mustNew(b, c, rueidisbackend.Options{Prefix: uniquePrefix()})
		user := func(i int) string { return "user-" + strconv.Itoa(i) }
		parallelDo(sessions, func(i int) error { return s.UpdateToken(bg, benchToken(i), user(i), "item-0") })
		drawn := zipfItems(items)
		resetStats(b, c)
		cpu := serverCPU(b, c, func() {
			rate(b, sessions, func(r *rand.Rand, i int) error {
				return s.UpdateToken(bg, benchToken(i), user(i), drawn[r.IntN(len(drawn))])
			})
		})
		b.ReportMetric(cpu.Seconds()*1e6/float64(b.N), "server-µs/op")
		reportCommands(b, c, b.N, "op", "evalsha", "mget", "set", "zincrby")
	})
	b.Run("add_to_cart", func(b *testing.B) {
		const sessions, items = 20_000, 1_000
		c := costClient(b, 0)
		s := mustNew(b, c, rueidisbackend.Options{Prefix: uniquePrefix()})
		parallelDo(sessions, func(i int) error { return shopSession(s, i, "user-"+strconv.Itoa(i)) })
		resetStats(b, c)
		cpu := serverCPU(b, c, func() {
			rate(b, sessions, func(r *rand.Rand, i int) error {
				return s.AddToCart(bg, benchToken(i), "item-"+strconv.Itoa(r.IntN(items)), 1+r.IntN(3))
			})
		})
		b.ReportMetric(cpu.Seconds()*1e6/float64(b.N), "server-µs/op")
		reportCommands(b, c, b.N, "op", "evalsha", "get", "hset", "hlen", "pexpire")
	})
	b.Run("book_add_to_cart", func(b *testing.B) {
		// The book's add_to_cart, HSET of the cart's line, as the peers
		// send it: one command a call, auto-pipelined.
		const sessions, items = 20_000, 1_000
		c := costClient(b, 0)
		prefix := uniquePrefix()
		resetStats(b, c)
		cpu := serverCPU(b, c, func() {
			rate(b, sessions, func(r *rand.Rand, i int) error {
				return c.Do(bg, c.B().Hset().Key(prefix+"cart:"+benchToken(i)).FieldValue().
					FieldValue("item-"+strconv.Itoa(r.IntN(items)), strconv.Itoa(1+r.IntN(3))).Build()).Error()
			})
		})
		b.ReportMetric(cpu.Seconds()*1e6/float64(b.N), "server-µs/op")
		reportCommands(b, c, b.N, "op", "hset")
	})
	b.Run("clean_sessions", func(b *testing.B) {
		const sessions = 20_000
		c := costClient(b, 0)
		var cpu float64
		stats := map[string]float64{}
		for range b.N {
			b.StopTimer()
			s := mustNew(b, c, rueidisbackend.Options{Prefix: uniquePrefix()})
			parallelDo(sessions, func(i int) error { return shopSession(s, i, "user-"+strconv.Itoa(i)) })
			resetStats(b, c)
			b.StartTimer()
			cpu += serverCPU(b, c, func() {
				for {
					n, err := s.CleanSessions(bg, 0, 1000)
					if err != nil {
						b.Fatal(err)
					}
					if n == 0 {
						return
					}
				}
			}).Seconds()
			for name, usec := range commandUsec(b, c) {
				stats[name] += usec
			}
		}
		removed := float64(b.N * sessions)
		b.ReportMetric(cpu*1e6/removed, "server-µs/removed")
		stats["scripts"] = stats["evalsha"] + stats["eval"] // a new Store's first script call is an EVAL
		for _, name := range []string{"scripts", "del", "mget", "zrem", "zrangebyscore"} {
			b.ReportMetric(stats[name]/removed, name+"-µs/removed")
		}
	})
}

// scriptCost calls src b.N times a session, 20 sessions a call, from 8
// goroutines, each session with n strings: n/2 keys from key and n/2
// arguments, and reports the server's CPU time a session.
func scriptCost(b *testing.B, c rueidis.Client, src string, n int, key func(r *rand.Rand, i int) string) {
	const perCall = 20
	script := rueidis.NewLuaScript(src)
	if err := script.Exec(bg, c, nil, nil).Error(); err != nil { // loaded before the timing
		b.Fatal(err)
	}
	calls := (b.N + perCall - 1) / perCall
	var wg sync.WaitGroup
	var failed error
	var once sync.Once
	cpu := serverCPU(b, c, func() {
		for g := range 8 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 7))
				for j := g; j < calls; j += 8 {
					keys := make([]string, 0, perCall*n/2)
					args := make([]string, 0, perCall*n/2)
					for i := range perCall * n / 2 {
						keys = append(keys, key(r, i))
						args = append(args, strconv.FormatFloat(1764080000000+float64(i)/1024, 'f', -1, 64))
					}
					if err := script.Exec(bg, c, keys, args).Error(); err != nil {
						once.Do(func() { failed = err })
						return
					}
				}
			})
		}
		wg.Wait()
	})
	if failed != nil {
		b.Fatal(failed)
	}
	b.ReportMetric(cpu.Seconds()*1e6/float64(calls*perCall), "server-µs/session")
}

// costClient returns a client of the test server's database db.
func costClient(b *testing.B, db int) rueidis.Client {
	return newClient(b, rueidis.ClientOption{InitAddress: []string{server.Addr()}, ForceSingleClient: true, SelectDB: db})
}

// keyspace returns a client of database 12, emptied and filled with n keys
// holding a login's worth of bytes (with a TTL of an hour if ttl), unless it
// holds them already (a marker that expires before the keys says so); the
// filling is not timed.
func keyspace(b *testing.B, n int, ttl bool) rueidis.Client {
	b.StopTimer()
	defer b.StartTimer()
	c := costClient(b, 12)
	want := fmt.Sprintf("%d %v", n, ttl)
	if have, _ := c.Do(bg, c.B().Get().Key("retail:cost:keyspace").Build()).ToString(); have == want {
		return c
	}
	if err := c.Do(bg, c.B().Flushdb().Build()).Error(); err != nil {
		b.Fatal(err)
	}
	const fill = `for i = ARGV[1], ARGV[2] do
  local k = string.format('retail:cost:{%032x}', i)
  redis.call('SET', k, '1764080000000.5 1764081800000 user-' .. i)
  if ARGV[3] == '1' then redis.call('PEXPIRE', k, 3600000) end
end
return 1`
	flag := "0"
	if ttl {
		flag = "1"
	}
	for lo := 0; lo < n; lo += 100_000 {
		hi := min(lo+100_000, n) - 1
		if err := c.Do(bg, c.B().Eval().Script(fill).Numkeys(0).Arg(strconv.Itoa(lo), strconv.Itoa(hi), flag).Build()).Error(); err != nil {
			b.Fatal(err)
		}
	}
	if err := c.Do(bg, c.B().Set().Key("retail:cost:keyspace").Value(want).Px(30*time.Minute).Build()).Error(); err != nil {
		b.Fatal(err)
	}
	return c
}

// costKey is keyspace's i-th key.
func costKey(i int) string { return fmt.Sprintf("retail:cost:{%032x}", i) }

func resetStats(b *testing.B, c rueidis.Client) {
	if err := c.Do(bg, c.B().ConfigResetstat().Build()).Error(); err != nil {
		b.Fatal(err)
	}
}

// commandUsec returns the µs the server spent in each command since its
// statistics were reset, from INFO commandstats.
func commandUsec(b *testing.B, c rueidis.Client) map[string]float64 {
	info, err := c.Do(bg, c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	usec := map[string]float64{}
	for _, line := range strings.Split(info, "\r\n") {
		stat, ok := strings.CutPrefix(line, "cmdstat_")
		name, fields, found := strings.Cut(stat, ":")
		if !ok || !found {
			continue
		}
		for _, f := range strings.Split(fields, ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatalf("INFO commandstats: %s: %v", line, err)
				}
				usec[name] = n
			}
		}
	}
	return usec
}

// reportCommands reports the µs the server spent in each named command a
// unit (ops of them), since its statistics were reset.
func reportCommands(b *testing.B, c rueidis.Client, ops int, unit string, names ...string) {
	usec := commandUsec(b, c)
	for _, name := range names {
		b.ReportMetric(usec[name]/float64(ops), name+"-µs/"+unit)
	}
}
