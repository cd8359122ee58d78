// Command loadgen simulates the "Fake Web Retailer" of "Redis in Action"
// chapter 2 against a retail.Store and reports throughput and latency per
// operation.
//
//	go run ./examples/loadgen                                 # memory, 10 s
//	go run ./examples/loadgen -redis 127.0.0.1:6380           # one Redis
//	go run ./examples/loadgen -redis 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003
//
// Each of -users simulated users visits the shop again and again: it logs in
// with a fresh session, views 1 to 10 items whose popularity follows a
// Zipf law over -items items (each view is what the shop does for an item
// page: CheckToken, UpdateToken, the page cache and the item's cached row),
// puts some of them in the cart, looks at the cart, and sometimes logs
// out. The session cleaner (keeping -keep sessions), the row cacher
// (refreshing every item's row every 5 s) and the view rescaler (every
// -rescale) run meanwhile. A progress line is printed every second, and at
// the end a table and the store's counters (retail.Stats).
//
// With -redis, loadgen only connects to loopback addresses, keeps its keys
// under a prefix of its own and deletes its sessions, views and rows at the
// end; the rest expires on its own within a day (cached pages in minutes,
// each user's index of sessions a session lifetime after the user's last
// login). If redis-benchmark is on PATH it then
// measures the server's pipelined ceiling (-P 16, SET and GET) and prints
// our ratio to it; it skips a server on port 6379 unless -ceiling on.
// redis-benchmark writes the key "key:__rand_int__".
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/examples/internal/backends"
)

// progressEvery is the time between progress lines; tests shorten it.
var progressEvery = time.Second

// rowDelay is how often the row cacher refreshes each item's row.
const rowDelay = 5 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "loadgen:", err)
		}
		os.Exit(2)
	}
}

type config struct {
	redis    []string
	duration time.Duration
	users    int
	items    int
	keep     int
	rescale  time.Duration
	ceiling  string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	redisAddrs := fs.String("redis", "", "use Redis at loopback `ADDR[,ADDR...]` instead of memory (several addresses: a cluster)")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to run (at most 10m)")
	fs.IntVar(&c.users, "users", 64, "simulated users browsing at once")
	fs.IntVar(&c.items, "items", 10_000, "items in the shop")
	fs.IntVar(&c.keep, "keep", 100_000, "sessions the session cleaner keeps")
	fs.DurationVar(&c.rescale, "rescale", 5*time.Second, "time between view rescales (the book's is 5m)")
	fs.StringVar(&c.ceiling, "ceiling", "auto", "measure the redis-benchmark ceiling: auto (if on PATH and not port 6379), on, off")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *redisAddrs != "" {
		c.redis = strings.Split(*redisAddrs, ",")
	}
	switch {
	case c.duration <= 0 || c.duration > 10*time.Minute:
		return c, errors.New("-duration must be in (0, 10m]")
	case c.users < 1 || c.users > 10_000:
		return c, errors.New("-users must be in 1..10000")
	case c.items < 1 || c.items > 1_000_000:
		return c, errors.New("-items must be in 1..1000000")
	case c.keep < 1:
		return c, errors.New("-keep must be positive")
	case c.rescale <= 0:
		return c, errors.New("-rescale must be positive")
	case c.ceiling != "auto" && c.ceiling != "on" && c.ceiling != "off":
		return c, errors.New("-ceiling must be auto, on or off")
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	var prefix string
	if len(cfg.redis) > 0 {
		// Keys of its own, deleted at the end: the server outlives the run.
		prefix = fmt.Sprintf("retail-loadgen-%d:", time.Now().UnixNano())
	}
	store, backend, closeFn, err := backends.Open(cfg.redis, backends.Options{Prefix: prefix, CheckAddr: checkLoopback})
	if err != nil {
		return fmt.Errorf("-redis: %w", err)
	}
	defer closeFn()
	if len(cfg.redis) > 0 {
		backend += " " + strings.Join(cfg.redis, ",")
	}
	backend += " backend"

	fmt.Fprintf(stdout, "loadgen: %s, %d users, %d items, %v (GOMAXPROCS %d)\n", backend, cfg.users, cfg.items, cfg.duration, runtime.GOMAXPROCS(0))
	var out sync.Mutex
	printErr := func(s string) {
		out.Lock()
		defer out.Unlock()
		fmt.Fprintln(stderr, s)
	}
	errs := &errorLog{print: printErr}
	s, err := newSim(store, cfg.items, errs.log)
	if err != nil {
		return err
	}

	if err := scheduleRows(ctx, store, s.items, rowDelay); err != nil {
		return fmt.Errorf("scheduling rows: %w", err)
	}
	workCtx, stopWorkers := context.WithCancel(context.Background())
	defer stopWorkers()
	workers, err := startWorkers(workCtx, store, cfg, logger)
	if err != nil {
		return err
	}

	res := simulate(ctx, s, cfg, stdout, &out)

	stopWorkers()
	workers.Wait()
	res.sessions, res.sessErr = store.SessionCount(context.Background())
	res.store = store.Stats()

	if len(cfg.redis) > 0 && cfg.ceiling != "off" {
		res.benchmark, err = measureCeiling(context.Background(), cfg.redis, cfg.ceiling == "on")
		if err != nil {
			fmt.Fprintln(stdout, "loadgen: no redis-benchmark ceiling:", err)
		}
	}
	fmt.Fprintln(stdout)
	res.writeTable(stdout)

	if len(cfg.redis) > 0 {
		cleanCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cleanupStore(cleanCtx, store, s.items); err != nil {
			return fmt.Errorf("deleting the run's data: %w", err)
		}
	}
	return nil
}

// simulate runs the users for cfg.duration, or until ctx ends, printing
// progress every second, and returns what they measured.
func simulate(ctx context.Context, s *sim, cfg config, stdout io.Writer, out *sync.Mutex) *result {
	runCtx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	users := make([]*user, cfg.users)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range users {
		users[i] = s.newUser(i)
		wg.Go(func() { users[i].run(runCtx) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	var lastOps uint64
	lastAt := start
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		case now := <-tick.C:
			var ops, pages, hits uint64
			for _, u := range users {
				ops += u.ops.Load()
				pages += u.pages.Load()
				hits += u.hits.Load()
			}
			sessions, err := s.store.SessionCount(runCtx)
			ratio := 0.0
			if pages > 0 {
				ratio = 100 * float64(hits) / float64(pages)
			}
			out.Lock()
			fmt.Fprintf(stdout, "[%3.0fs] %12s ops  %10s ops/s  page hits %5.1f%%  sessions %s\n",
				now.Sub(start).Seconds(), rate(float64(ops)), rate(float64(ops-lastOps)/now.Sub(lastAt).Seconds()), ratio, sessionsText(sessions, err))
			out.Unlock()
			lastOps, lastAt = ops, now
		}
	}
	res := &result{elapsed: time.Since(start)}
	if res.elapsed > cfg.duration {
		// Calls cut short at the end are not counted; neither is the
		// time the users took to notice.
		res.elapsed = cfg.duration
	}
	for _, u := range users {
		for o := range numOps {
			res.hists[o].merge(&u.hists[o])
			res.errors[o] += u.errors[o]
		}
		res.pageHits += u.hits.Load()
		res.visits += u.visits
		res.relogins += u.relogins
	}
	return res
}

// scheduleRows schedules every item's row for caching every delay (delay
// 0 unschedules them), a few calls at a time.
func scheduleRows(ctx context.Context, store retail.Store, items []string, delay time.Duration) error {
	const parallel = 32
	errs := make([]error, parallel)
	var wg sync.WaitGroup
	for p := range parallel {
		wg.Go(func() {
			for i := p; i < len(items) && errs[p] == nil; i += parallel {
				errs[p] = store.ScheduleRowCache(ctx, items[i], delay)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startWorkers runs the book's three background loops until ctx ends.
func startWorkers(ctx context.Context, store retail.Store, cfg config, logger *slog.Logger) (*sync.WaitGroup, error) {
	load := func(_ context.Context, id string) (any, error) {
		return json.RawMessage(`{"id":"` + id + `","price":1999,"stock":42}`), nil
	}
	cleaner, errC := retail.NewSessionCleaner(store, retail.SessionCleanerOptions{Keep: cfg.keep, Logger: logger})
	cacher, errR := retail.NewRowCacher(store, load, retail.RowCacherOptions{Logger: logger})
	rescaler, errV := retail.NewViewRescaler(store, retail.ViewRescalerOptions{Every: cfg.rescale, Logger: logger})
	if err := errors.Join(errC, errR, errV); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	for _, w := range []interface{ Run(context.Context) error }{cleaner, cacher, rescaler} {
		wg.Go(func() {
			if err := w.Run(ctx); err != nil {
				logger.Error("loadgen: worker stopped", "err", err)
			}
		})
	}
	return &wg, nil
}

// cleanupStore deletes what a run left in a Store that outlives it:
// every session (with carts and recent items), every view count and every
// row. Cached pages, users' indexes and worker claims expire on their own.
func cleanupStore(ctx context.Context, store retail.Store, items []string) error {
	for {
		n, err := store.CleanSessions(ctx, 0, 10_000)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	if err := store.RescaleViews(ctx, 0, 1); err != nil {
		return err
	}
	if err := scheduleRows(ctx, store, items, 0); err != nil {
		return err
	}
	for range len(items)/retail.MaxClaimRows + 1 {
		if _, err := store.ClaimDueRows(ctx, retail.MaxClaimRows); err != nil {
			return err
		}
	}
	return nil
}
