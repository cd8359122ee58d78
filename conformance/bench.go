package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retailkit/retail"
)

// Population sizes for Benchmark, overridable from the environment. The
// defaults suit an in-memory store; a networked one may want fewer.
const (
	sessionsEnv     = "RETAIL_BENCH_SESSIONS"
	itemsEnv        = "RETAIL_BENCH_ITEMS"
	defaultSessions = 1_000_000
	defaultItems    = 100_000
	benchPages      = 1_000
	benchPageSize   = 8 << 10
	cleanBatch      = 1_000
	benchCallers    = 64     // goroutines of the parallel benchmarks and the preload
	benchHot        = 10_000 // sessions active at once, for CheckToken
)

// zipfS skews item popularity: a few items get most views, as in a shop.
const zipfS = 1.1

// Benchmark measures the operations a web shop makes on every request, on
// stores created by newStore with the system clock and the default session
// times, and preloaded (outside
// the timer) with RETAIL_BENCH_SESSIONS sessions (default 1,000,000) that
// viewed RETAIL_BENCH_ITEMS items (default 100,000) with skewed popularity.
// Each sub-benchmark reports allocations and ops/s; those of one call
// also report cpu-µs/op, the CPU time the process spent a call (for a
// store on a redis-server, what its client costs; unreported where the
// system does not tell), and CleanSessions reports sessions/s.
func Benchmark(b *testing.B, newStore Factory) {
	p := population{sessions: envInt(b, sessionsEnv, defaultSessions), items: envInt(b, itemsEnv, defaultItems)}
	p.tokens = make([]string, p.sessions)
	p.users = make([]string, p.sessions)
	for i := range p.tokens {
		p.tokens[i] = fmt.Sprintf("bench-token-%08d", i)
		p.users[i] = fmt.Sprintf("user-%08d", i)
	}
	p.itemNames = make([]string, p.items)
	for i := range p.itemNames {
		p.itemNames[i] = fmt.Sprintf("item-%06d", i)
	}
	var seed atomic.Uint64

	// A sub-benchmark with sub-benchmarks runs once, so the preloaded store
	// is shared by its serial and parallel measurements.
	b.Run("UpdateToken", func(b *testing.B) {
		s := p.store(b, newStore)
		b.Run("serial", func(b *testing.B) {
			r, z := p.picker(seed.Add(1))
			measure(b, func(ctx context.Context, _ int) error {
				i := r.IntN(p.sessions)
				return s.UpdateToken(ctx, p.tokens[i], p.users[i], p.itemNames[z.Uint64()])
			})
		})
		b.Run("parallel", func(b *testing.B) {
			measureParallel(b, &p, &seed, func(ctx context.Context, r *rand.Rand, z *rand.Zipf) error {
				i := r.IntN(p.sessions)
				return s.UpdateToken(ctx, p.tokens[i], p.users[i], p.itemNames[z.Uint64()])
			})
		})
	})
	// RefreshSession is what a server calls on every request of a
	// visitor with a session.
	b.Run("RefreshSession", func(b *testing.B) {
		s := p.store(b, newStore)
		refresh := func(ctx context.Context, i int, item string) error {
			if _, ok, err := s.RefreshSession(ctx, p.tokens[i], item); err != nil || !ok {
				return fmt.Errorf("RefreshSession(%q, %q) = %v, %v, want a hit", p.tokens[i], item, ok, err)
			}
			return nil
		}
		b.Run("serial", func(b *testing.B) {
			r, z := p.picker(seed.Add(1))
			measure(b, func(ctx context.Context, _ int) error {
				return refresh(ctx, r.IntN(p.sessions), p.itemNames[z.Uint64()])
			})
		})
		b.Run("parallel", func(b *testing.B) {
			measureParallel(b, &p, &seed, func(ctx context.Context, r *rand.Rand, z *rand.Zipf) error {
				return refresh(ctx, r.IntN(p.sessions), p.itemNames[z.Uint64()])
			})
		})
	})
	// StartSession is a login or a guest's first cart: a new token each
	// time, built in the loop (its allocations are counted).
	b.Run("StartSession", func(b *testing.B) {
		s := p.store(b, newStore)
		var next atomic.Int64
		startOne := func(ctx context.Context) error {
			n := next.Add(1)
			token := "bench-new-" + strconv.FormatInt(n, 10)
			if created, err := s.StartSession(ctx, token, p.users[int(n)%p.sessions]); err != nil || !created {
				return fmt.Errorf("StartSession(%q) = %v, %v, want true, nil", token, created, err)
			}
			return nil
		}
		b.Run("serial", func(b *testing.B) {
			measure(b, func(ctx context.Context, _ int) error { return startOne(ctx) })
		})
		b.Run("parallel", func(b *testing.B) {
			measureParallel(b, &p, &seed, func(ctx context.Context, _ *rand.Rand, _ *rand.Zipf) error { return startOne(ctx) })
		})
	})
	// CheckToken reads the sessions of the people browsing now: a hot set of
	// benchHot tokens, each read many times, as a shop's requests are. A
	// store with a client-side cache serves these from memory.
	b.Run("CheckToken", func(b *testing.B) {
		s := p.store(b, newStore)
		hot := min(p.sessions, benchHot)
		check := func(ctx context.Context, i int) error {
			if _, ok, err := s.CheckToken(ctx, p.tokens[i]); err != nil || !ok {
				return fmt.Errorf("CheckToken(%q) = %v, %v, want a hit", p.tokens[i], ok, err)
			}
			return nil
		}
		b.Run("serial", func(b *testing.B) {
			measure(b, func(ctx context.Context, i int) error { return check(ctx, i%hot) })
		})
		b.Run("parallel", func(b *testing.B) {
			measureParallel(b, &p, &seed, func(ctx context.Context, r *rand.Rand, _ *rand.Zipf) error {
				return check(ctx, r.IntN(hot))
			})
		})
	})
	b.Run("AddToCart", func(b *testing.B) {
		s := p.store(b, newStore)
		r, z := p.picker(seed.Add(1))
		measure(b, func(ctx context.Context, i int) error {
			return s.AddToCart(ctx, p.tokens[r.IntN(p.sessions)], p.itemNames[z.Uint64()], 1+i%5)
		})
	})
	// IncrementCart adds an item to a session's cart, and takes it out
	// again the next time round the population, so carts stay small
	// however long the benchmark runs.
	b.Run("IncrementCart", func(b *testing.B) {
		s := p.store(b, newStore)
		z := p.zipf(seed.Add(1))
		cartItems := make([]string, p.sessions)
		for i := range cartItems {
			cartItems[i] = p.itemNames[z.Uint64()]
		}
		measure(b, func(ctx context.Context, i int) error {
			j, n := i%p.sessions, 1-2*(i/p.sessions%2)
			_, err := s.IncrementCart(ctx, p.tokens[j], cartItems[j], n)
			return err
		})
	})
	// CountView is a page view of a visitor without a session.
	b.Run("CountView", func(b *testing.B) {
		s := p.store(b, newStore)
		z := p.zipf(seed.Add(1))
		measure(b, func(ctx context.Context, _ int) error {
			return s.CountView(ctx, p.itemNames[z.Uint64()])
		})
	})
	b.Run("ItemRank", func(b *testing.B) {
		s := p.store(b, newStore)
		z := p.zipf(seed.Add(1))
		measure(b, func(ctx context.Context, _ int) error {
			_, _, err := s.ItemRank(ctx, p.itemNames[z.Uint64()])
			return err
		})
	})
	b.Run("TopItems10", func(b *testing.B) {
		s := p.store(b, newStore)
		measure(b, func(ctx context.Context, _ int) error {
			_, err := s.TopItems(ctx, 10)
			return err
		})
	})
	b.Run("PageHit", func(b *testing.B) {
		s := newStore(b, retail.SystemClock{}, defaultConfig)
		b.Cleanup(func() { s.Close() })
		body := make([]byte, benchPageSize)
		keys := make([]string, benchPages)
		for i := range keys {
			keys[i] = fmt.Sprintf("GET shop.example/item?item=%d", i)
			if err := s.SetPage(context.Background(), keys[i], body, time.Hour); err != nil {
				b.Fatalf("SetPage(%q, %d bytes, 1h) = %v, want nil", keys[i], len(body), err)
			}
		}
		measure(b, func(ctx context.Context, i int) error {
			if _, ok, err := s.Page(ctx, keys[i%len(keys)]); err != nil || !ok {
				return fmt.Errorf("Page(%q) = %v, %v, want a hit", keys[i%len(keys)], ok, err)
			}
			return nil
		})
	})
	b.Run("CleanSessions", func(b *testing.B) {
		s := p.store(b, newStore)
		ctx := context.Background()
		live, removed := p.sessions, 0
		b.ReportAllocs()
		for b.Loop() {
			if live == 0 {
				b.StopTimer()
				p.preload(b, s)
				live = p.sessions
				b.StartTimer()
			}
			n, err := s.CleanSessions(ctx, 0, cleanBatch)
			if err != nil {
				b.Fatalf("CleanSessions(0, %d) = %v, want nil error", cleanBatch, err)
			}
			if want := min(live, cleanBatch); n != want {
				b.Fatalf("CleanSessions(0, %d) = %d, want %d", cleanBatch, n, want)
			}
			live -= n
			removed += n
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		b.ReportMetric(float64(removed)/b.Elapsed().Seconds(), "sessions/s")
	})
}

// population is the preloaded state: session i is tokens[i] logged in as
// users[i], and viewed one item drawn from a Zipf distribution.
type population struct {
	sessions, items int
	tokens, users   []string
	itemNames       []string
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// picker returns a random source that picks sessions and a Zipf item picker,
// both seeded with seed. The measurements of calls on the preloaded sessions
// pick them with it, at random, serial and parallel alike, as a shop's
// requests come: taken in order, the sessions of consecutive tokens, created
// one after another, often sit side by side in memory, which made one
// goroutine look as fast as 64 (with 1,000,000 sessions of the memory
// backend, UpdateToken ran 1.0-1.2M calls/s from one goroutine over tokens
// in order, 0.55-0.58M/s over tokens at random).
func (p *population) picker(seed uint64) (*rand.Rand, *rand.Zipf) {
	return rand.New(rand.NewPCG(seed, 0xbe7c4)), p.zipf(seed)
}

// zipf returns a picker of item indexes with Zipf popularity, seeded with
// seed.
func (p *population) zipf(seed uint64) *rand.Zipf {
	return rand.NewZipf(rand.New(rand.NewPCG(seed, 0x5eed)), zipfS, 1, uint64(p.items-1))
}

// store returns a new store with the system clock, preloaded.
func (p *population) store(b *testing.B, newStore Factory) retail.Store {
	s := newStore(b, retail.SystemClock{}, defaultConfig)
	b.Cleanup(func() { s.Close() })
	p.preload(b, s)
	return s
}

// preload creates every session of the population from many goroutines, so
// that a networked store pipelines them.
func (p *population) preload(b *testing.B, s retail.Store) {
	workers := max(benchCallers, runtime.GOMAXPROCS(0))
	var (
		wg       sync.WaitGroup
		failOnce sync.Once
		failure  error
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for w := range workers {
		wg.Go(func() {
			z := p.zipf(uint64(w))
			for i := w; i < p.sessions && ctx.Err() == nil; i += workers {
				if err := s.UpdateToken(ctx, p.tokens[i], p.users[i], p.itemNames[z.Uint64()]); err != nil {
					failOnce.Do(func() {
						failure = fmt.Errorf("preload: UpdateToken(%q) = %w", p.tokens[i], err)
						cancel()
					})
					return
				}
			}
		})
	}
	wg.Wait()
	if failure != nil {
		b.Fatal(failure)
	}
}

// measure times op(ctx, i) for i = 0, 1, ... and reports ops/s.
func measure(b *testing.B, op func(ctx context.Context, i int) error) {
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	cpu := startCPU()
	for b.Loop() {
		if err := op(ctx, i); err != nil {
			b.Fatal(err)
		}
		i++
	}
	cpu.report(b)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// cpuMeter measures the CPU time this process spends on a benchmark's
// calls: the store's client side, and its server too when that runs in the
// process (the memory backend, miniredis), but not a redis-server's.
type cpuMeter struct {
	start time.Duration
	ok    bool
}

func startCPU() cpuMeter {
	start, ok := processCPU()
	return cpuMeter{start, ok}
}

// report adds the CPU µs a call, if the system tells process CPU time.
func (m cpuMeter) report(b *testing.B) {
	if end, ok := processCPU(); m.ok && ok && b.N > 0 {
		b.ReportMetric(float64(end-m.start)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	}
}

// measureParallel times op from benchCallers goroutines (at least one a
// CPU), each with its own random source and Zipf item picker, and reports
// ops/s. Many callers are what a web server has, and what lets a networked
// store batch round trips.
func measureParallel(b *testing.B, p *population, seed *atomic.Uint64, op func(ctx context.Context, r *rand.Rand, z *rand.Zipf) error) {
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(max(1, benchCallers/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	cpu := startCPU()
	b.RunParallel(func(pb *testing.PB) {
		r, z := p.picker(seed.Add(1))
		for pb.Next() {
			if err := op(ctx, r, z); err != nil {
				b.Error(err)
				return
			}
		}
	})
	cpu.report(b)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
