package rueidisbackend_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// BenchmarkVersusBook measures the Store against the book's commands sent
// the fastest way a Go engineer would write them (one rueidis DoMulti a
// call, auto-pipelined), on the same private server, in the same run, from
// 64 goroutines over the same sessions and Zipf-popular items. Each
// sub-benchmark runs b.N calls of each contender (b.N cleanings of the
// whole population for clean_sessions) and reports both rates and their
// ratio (retail/book above 1: the Store is faster), and the CPU time the
// server spent a call (a session removed, for clean_sessions) on each, from
// INFO cpu: on a machine where the server is the bottleneck, that is what
// bounds the rates.
//
//	go test -run '^$' -bench VersusBook ./backend/rueidisbackend/
//
// ../shared/peerbench makes the same comparison at a larger scale and with
// more peers; this one keeps the measurement next to the code.
func BenchmarkVersusBook(b *testing.B) {
	if server == nil {
		unavailable(b, "Redis server", serverErr)
	}
	const sessions, items = 20_000, 1_000
	c := costClient(b, 0)
	s := mustNew(b, c, rueidisbackend.Options{Prefix: uniquePrefix()})
	book := uniquePrefix()
	user := func(i int) string { return "user-" + strconv.Itoa(i) }
	drawn := zipfItems(items)
	item := func(r *rand.Rand) string { return drawn[r.IntN(len(drawn))] }
	parallelDo(sessions, func(i int) error {
		if err := s.UpdateToken(bg, benchToken(i), user(i), "item-0"); err != nil {
			return err
		}
		return bookUpdateToken(c, book, i)
	})

	bookUpdate := func(r *rand.Rand, i int) error {
		token, it := benchToken(i), item(r)
		ts := float64(time.Now().UnixMicro()) / 1e6
		for _, res := range c.DoMulti(bg,
			c.B().Hset().Key(book+"login:").FieldValue().FieldValue(token, user(i)).Build(),
			c.B().Zadd().Key(book+"recent:").ScoreMember().ScoreMember(ts, token).Build(),
			c.B().Zadd().Key(book+"viewed:"+token).ScoreMember().ScoreMember(ts, it).Build(),
			c.B().Zremrangebyrank().Key(book+"viewed:"+token).Start(0).Stop(-26).Build(),
			c.B().Zincrby().Key(book+"viewed:").Increment(-1).Member(it).Build(),
		) {
			if err := res.Error(); err != nil {
				return err
			}
		}
		return nil
	}
	bookCart := func(r *rand.Rand, i int) error {
		n, key := r.IntN(4), book+"cart:"+benchToken(i)
		if n == 0 {
			return c.Do(bg, c.B().Hdel().Key(key).Field(item(r)).Build()).Error()
		}
		return c.Do(bg, c.B().Hset().Key(key).FieldValue().FieldValue(item(r), strconv.Itoa(n)).Build()).Error()
	}
	bookCheck := func(r *rand.Rand, i int) error {
		u, err := c.Do(bg, c.B().Hget().Key(book+"login:").Field(benchToken(i)).Build()).ToString()
		if err == nil && u != user(i) {
			err = fmt.Errorf("book check_token(%d) = %q", i, u)
		}
		return err
	}
	retailCheck := func(r *rand.Rand, i int) error {
		u, ok, err := s.CheckToken(bg, benchToken(i))
		if err == nil && (!ok || u != user(i)) {
			err = fmt.Errorf("CheckToken(%d) = %q, %v", i, u, ok)
		}
		return err
	}

	for _, op := range []struct {
		name         string
		retail, book func(r *rand.Rand, i int) error
	}{
		{"update_token", func(r *rand.Rand, i int) error { return s.UpdateToken(bg, benchToken(i), user(i), item(r)) }, bookUpdate},
		{"add_to_cart", func(r *rand.Rand, i int) error { return s.AddToCart(bg, benchToken(i), item(r), r.IntN(4)) }, bookCart},
		{"check_token", retailCheck, bookCheck},
	} {
		b.Run(op.name, func(b *testing.B) {
			var retailRate, bookRate float64
			retailCPU := serverCPU(b, c, func() { retailRate = rate(b, sessions, op.retail) })
			bookCPU := serverCPU(b, c, func() { bookRate = rate(b, sessions, op.book) })
			b.ReportMetric(retailRate, "retail-ops/s")
			b.ReportMetric(bookRate, "book-ops/s")
			b.ReportMetric(retailRate/bookRate, "retail/book")
			b.ReportMetric(retailCPU.Seconds()*1e6/float64(b.N), "retail-server-µs/op")
			b.ReportMetric(bookCPU.Seconds()*1e6/float64(b.N), "book-server-µs/op")
		})
	}

	// clean_sessions: sessions removed per second by one goroutine that
	// cleans a fresh population down to nothing, with CleanSessions(0,
	// 1000) and with the book's clean_full_sessions loop in batches of
	// 1,000 (ZCARD, ZRANGE, DEL of the viewed and cart keys, HDEL of the
	// logins, ZREM from recent:). Each iteration loads both populations
	// anew, outside the timing.
	b.Run("clean_sessions", func(b *testing.B) {
		var retailTime, bookTime, retailCPU, bookCPU time.Duration
		removed := 0
		for range b.N {
			b.StopTimer()
			rs := mustNew(b, c, rueidisbackend.Options{Prefix: uniquePrefix()})
			bp := uniquePrefix()
			parallelDo(sessions, func(i int) error {
				if err := shopSession(rs, i, user(i)); err != nil {
					return err
				}
				return bookUpdateToken(c, bp, i)
			})
			b.StartTimer()
			t0 := time.Now()
			retailCPU += serverCPU(b, c, func() {
				for {
					n, err := rs.CleanSessions(bg, 0, 1000)
					if err != nil {
						b.Fatal(err)
					}
					if n == 0 {
						break
					}
					removed += n
				}
			})
			retailTime += time.Since(t0)
			t0 = time.Now()
			bookCPU += serverCPU(b, c, func() {
				if n, err := bookClean(c, bp, 1000); err != nil || n != sessions {
					b.Fatalf("book clean removed %d, %v; want %d", n, err, sessions)
				}
			})
			bookTime += time.Since(t0)
		}
		if removed != b.N*sessions {
			b.Fatalf("CleanSessions removed %d, want %d", removed, b.N*sessions)
		}
		retailRate := float64(b.N*sessions) / retailTime.Seconds()
		bookRate := float64(b.N*sessions) / bookTime.Seconds()
		b.ReportMetric(retailRate, "retail-removed/s")
		b.ReportMetric(bookRate, "book-removed/s")
		b.ReportMetric(retailRate/bookRate, "retail/book")
		b.ReportMetric(retailCPU.Seconds()*1e6/float64(b.N*sessions), "retail-server-µs/op")
		b.ReportMetric(bookCPU.Seconds()*1e6/float64(b.N*sessions), "book-server-µs/op")
	})
}

// zipfItems returns item names drawn ahead, with Zipf popularity (s = 1.1)
// among items, as shoppers' views are skewed; each call of a benchmark
// picks one of them at random.
func zipfItems(items int) []string {
	drawn := make([]string, 1<<16)
	z := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.1, 1, uint64(items-1))
	for i := range drawn {
		drawn[i] = "item-" + strconv.FormatUint(z.Uint64(), 10)
	}
	return drawn
}

// serverCPU runs f and returns the CPU time the server spent meanwhile
// (user and system, from INFO cpu; the server's own background work is
// counted too, but a private server idles between calls).
func serverCPU(b *testing.B, c rueidis.Client, f func()) time.Duration {
	before := usedCPU(b, c)
	f()
	return usedCPU(b, c) - before
}

// usedCPU returns the server's used_cpu_user + used_cpu_sys.
func usedCPU(b *testing.B, c rueidis.Client) time.Duration {
	info, err := c.Do(bg, c.B().Info().Section("cpu").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	found := 0
	for _, line := range strings.Split(info, "\r\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || name != "used_cpu_user" && name != "used_cpu_sys" {
			continue
		}
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil {
			b.Fatalf("INFO cpu: %s: %v", line, err)
		}
		total += time.Duration(secs * float64(time.Second))
		found++
	}
	if found != 2 {
		b.Fatalf("INFO cpu has no used_cpu_user and used_cpu_sys:\n%s", info)
	}
	return total
}

// bookClean is the book's clean_full_sessions loop with no limit, in
// batches of batch: it removes every session of the book's layout under
// prefix and returns how many.
func bookClean(c rueidis.Client, prefix string, batch int) (int, error) {
	removed := 0
	for {
		size, err := c.Do(bg, c.B().Zcard().Key(prefix+"recent:").Build()).AsInt64()
		if err != nil || size == 0 {
			return removed, err
		}
		tokens, err := c.Do(bg, c.B().Zrange().Key(prefix+"recent:").Min("0").Max(strconv.FormatInt(min(size, int64(batch))-1, 10)).Build()).AsStrSlice()
		if err != nil {
			return removed, err
		}
		keys := make([]string, 0, 2*len(tokens))
		for _, t := range tokens {
			keys = append(keys, prefix+"viewed:"+t, prefix+"cart:"+t)
		}
		for _, cmd := range []rueidis.Completed{
			c.B().Del().Key(keys...).Build(),
			c.B().Hdel().Key(prefix + "login:").Field(tokens...).Build(),
			c.B().Zrem().Key(prefix + "recent:").Member(tokens...).Build(),
		} {
			if err := c.Do(bg, cmd).Error(); err != nil {
				return removed, err
			}
		}
		removed += len(tokens)
	}
}

// rate runs f b.N times over random sessions from 64 goroutines and returns
// the calls per second.
func rate(b *testing.B, sessions int, f func(r *rand.Rand, i int) error) float64 {
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	start := time.Now()
	for w := range 64 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
			for next.Add(1) <= int64(b.N) {
				if err := f(r, r.IntN(sessions)); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	return float64(b.N) / time.Since(start).Seconds()
}
