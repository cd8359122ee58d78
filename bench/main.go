// Command bench compares retail's Redis backend with what a Go engineer
// would write instead for "Redis in Action" chapter 2, on a private
// redis-server (or Redis Cluster) that it starts on free loopback ports and
// stops at the end:
//
//	cd bench && go run . -d 5s              # one redis-server
//	cd bench && go run . -d 5s -cluster 3   # a Redis Cluster of 3 masters
//	cd bench && go run . -only memory       # used_memory a session (memory.go)
//
// It first checks every contender's results on a small keyspace (see
// verify.go) and times only those that pass; then it times each operation
// from -c goroutines over -sessions loaded sessions and prints ops/s,
// latency percentiles and the server's CPU time a call. The contenders are
// in contenders.go (the per-request operations and cleaning) and http.go
// (the session middlewares). The memory group (-only memory, not among
// the defaults) times nothing: it measures the server's memory a session
// in each layout (see memory.go), first, on the fresh server, and needs one
// redis-server, not a cluster. Everything needs redis-server on PATH.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
)

type config struct {
	dur, warm             time.Duration
	conc, sessions, items int
	cluster               int   // masters; 0 for one redis-server
	batches               []int // cleaning batch sizes
	groups                map[string]bool
	verifyOnly            bool
}

// bench is one run: its servers, population and the clients it made.
type bench struct {
	cfg     config
	srv     *servers
	pop     *population
	closers []func()
}

func main() {
	var cfg config
	var batches, only string
	flag.DurationVar(&cfg.dur, "d", 5*time.Second, "measured time per contender and operation")
	flag.DurationVar(&cfg.warm, "warmup", -1, "unmeasured time before each measurement (default d/5, at most 1s)")
	flag.IntVar(&cfg.conc, "c", 64, "concurrent callers")
	flag.IntVar(&cfg.sessions, "sessions", 100_000, "sessions loaded before timing (and removed by each cleaning); for memory, a layout")
	flag.IntVar(&cfg.items, "items", 10_000, "distinct items, viewed with Zipf popularity")
	flag.IntVar(&cfg.cluster, "cluster", 0, "run on a Redis Cluster of this many masters instead of one redis-server")
	flag.StringVar(&batches, "batches", "100,1000", "cleaning batch sizes (sessions a pass)")
	flag.StringVar(&only, "only", "ops,clean,http", "what to run: ops, clean, http (timed), memory (used_memory a session; one redis-server only)")
	flag.BoolVar(&cfg.verifyOnly, "verify-only", false, "check the contenders and stop")
	flag.Parse()
	if cfg.warm < 0 {
		cfg.warm = min(cfg.dur/5, time.Second)
	}
	for _, s := range strings.Split(batches, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fatalf("-batches: %q is no batch size", s)
		}
		cfg.batches = append(cfg.batches, n)
	}
	cfg.groups = map[string]bool{}
	for _, g := range strings.Split(only, ",") {
		if g = strings.TrimSpace(g); g != "ops" && g != "clean" && g != "http" && g != "memory" {
			fatalf("-only: unknown group %q (ops, clean, http, memory)", g)
		}
		cfg.groups[g] = true
	}
	if cfg.dur <= 0 || cfg.conc < 1 || cfg.sessions < 1 || cfg.items < 2 || cfg.cluster < 0 {
		fatalf("-d, -c and -sessions must be positive, -items at least 2, -cluster not negative")
	}
	if cfg.groups["memory"] && cfg.cluster > 0 {
		fatalf("-only memory needs one redis-server (it SELECTs databases): drop -cluster")
	}

	srv, err := startRedis(cfg.cluster)
	if err != nil {
		fatalf("%v", err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		srv.stop()
		os.Exit(130)
	}()
	b := &bench{cfg: cfg, srv: srv, pop: newPopulation(cfg.sessions, cfg.items)}
	err = b.run(context.Background(), os.Stdout)
	b.close()
	srv.stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run measures memory a session if asked, on the server still fresh;
// then checks the contenders, times those that pass and prints the table.
// It returns an error if a contender failed its checks or a timed call.
func (b *bench) run(ctx context.Context, w io.Writer) error {
	cfg := b.cfg
	fmt.Fprintf(w, "bench: %s, redis %s; %s, GOMAXPROCS %d; -c %d -d %v (+%v warm-up) -sessions %d -items %d (Zipf s=%g)\n",
		b.srv, b.srv.version(ctx), runtime.Version(), runtime.GOMAXPROCS(0), cfg.conc, cfg.dur, cfg.warm, cfg.sessions, cfg.items, zipfS)
	var errs []error
	if cfg.groups["memory"] && !cfg.verifyOnly {
		errs = append(errs, b.timeMemory(ctx, w))
	}
	timed := []struct {
		name string
		run  func(context.Context, map[string]error) ([]*result, error)
	}{{"ops", b.timeOps}, {"clean", b.timeClean}, {"http", b.timeHTTP}}
	anyTimed := cfg.verifyOnly
	for _, g := range timed {
		anyTimed = anyTimed || cfg.groups[g.name]
	}
	if !anyTimed {
		return errors.Join(errs...) // memory alone: no contender's calls to check
	}
	logf("checking every contender")
	failed := b.verify(ctx)
	if len(failed) == 0 {
		fmt.Fprintf(w, "checks: every contender passed (%s)\n", checks)
	}
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		fmt.Fprintf(w, "checks: %s FAILED, not timed:\n  %s\n", name, strings.ReplaceAll(failed[name].Error(), "\n", "\n  "))
	}
	if len(failed) > 0 {
		errs = append(errs, fmt.Errorf("%d contender(s) failed their checks", len(failed)))
	}
	if cfg.verifyOnly {
		return errors.Join(errs...)
	}
	var rows []*result
	for _, g := range timed {
		if cfg.groups[g.name] {
			r, err := g.run(ctx, failed)
			rows, errs = append(rows, r...), append(errs, err)
		}
	}
	fmt.Fprintln(w)
	printTable(w, rows)
	for _, r := range rows {
		if r.errs > 0 {
			errs = append(errs, fmt.Errorf("%s %s: %d calls failed", r.op, r.name, r.errs))
		}
	}
	return errors.Join(errs...)
}

// timeOps times update_token, check_token, add_to_cart and item_rank of
// each shop over one loaded keyspace per layout (retail's, the book's).
func (b *bench) timeOps(ctx context.Context, failed map[string]error) ([]*result, error) {
	loader, err := b.retail("r:", true)
	if err != nil {
		return nil, err
	}
	logf("loading %d sessions in retail's layout and in the book's", b.cfg.sessions)
	if err := errors.Join(loadShop(ctx, loader, b.pop, b.cfg.sessions, b.cfg.conc), loadBook(ctx, b.goredis(), "b:", b.pop, b.cfg.sessions)); err != nil {
		return nil, err
	}
	shops := map[string]shop{}
	for _, name := range shopNames {
		prefix := "b:"
		if strings.HasPrefix(name, "retail") {
			prefix = "r:"
		}
		if shops[name], err = b.newShop(name, prefix); err != nil {
			return nil, err
		}
	}
	errWrongUser := errors.New("check_token returned a miss or another user")
	ops := []struct {
		name string
		fn   func(s shop, w *worker) error
	}{
		{"update_token", func(s shop, w *worker) error {
			i := w.session()
			return s.UpdateToken(ctx, b.pop.tokens[i], b.pop.users[i], w.item())
		}},
		{"check_token", func(s shop, w *worker) error {
			i := w.session()
			u, ok, err := s.CheckToken(ctx, b.pop.tokens[i])
			if err == nil && (!ok || u != b.pop.users[i]) {
				err = errWrongUser
			}
			return err
		}},
		{"add_to_cart", func(s shop, w *worker) error {
			i := w.session()
			return s.AddToCart(ctx, b.pop.tokens[i], w.item(), w.r.IntN(4)) // 0 removes the line
		}},
		{"item_rank", func(s shop, w *worker) error {
			_, _, err := s.ItemRank(ctx, w.item())
			return err
		}},
	}
	var rows []*result
	for oi, op := range ops {
		for _, name := range shopNames {
			if name == namePipelined && op.name != "update_token" {
				continue // one command, sent as the naive contender sends it
			}
			if failed[name] != nil {
				rows = append(rows, &result{op: op.name, name: name, note: "failed its checks"})
				continue
			}
			s := shops[name]
			if op.name == "check_token" {
				// The steady state of a server that has run a while: every
				// user seen once, so retail's client-side cache holds them.
				if err := parallel(b.cfg.sessions, b.cfg.conc, func(i int) error {
					_, _, err := s.CheckToken(ctx, b.pop.tokens[i])
					return err
				}); err != nil {
					return rows, err
				}
			}
			logf("%s: %s", op.name, name)
			r, err := b.measure(ctx, op.name, name, uint64(oi+1), func(w *worker) error { return op.fn(s, w) })
			if err != nil {
				return rows, err
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// timeClean times removing every loaded session, for each cleaner on a
// fresh load. Cleaning is one goroutine, as the book's daemon and retail's
// SessionCleaner are.
func (b *bench) timeClean(ctx context.Context, failed map[string]error) ([]*result, error) {
	var rows []*result
	for _, batch := range b.cfg.batches {
		op := "clean_sessions/" + strconv.Itoa(batch)
		for _, book := range []bool{false, true} {
			name := cleanerName(book, batch)
			if failed[name] != nil {
				rows = append(rows, &result{op: op, name: name, note: "failed its checks"})
				continue
			}
			c, err := b.newCleaner(book, batch, fmt.Sprintf("c%d%v:", batch, book), b.pop)
			if err != nil {
				return rows, err
			}
			logf("%s: loading %d sessions for %s", op, b.cfg.sessions, name)
			if err := c.load(ctx, b.cfg.sessions); err != nil {
				return rows, err
			}
			logf("%s: %s", op, name)
			r := &result{op: op, name: name}
			var removed int
			if err := b.window(ctx, r, func() {
				removed, err = c.clean(ctx, func(d time.Duration) { r.lat = append(r.lat, d) })
			}); err != nil {
				return rows, err
			}
			if r.calls = uint64(removed); err == nil && removed != b.cfg.sessions {
				err = fmt.Errorf("removed %d sessions of %d", removed, b.cfg.sessions)
			}
			if err == nil {
				err = c.left(ctx, min(b.cfg.sessions, 2000))
			}
			if err != nil {
				r.errs, r.firstErr = 1, err
			}
			slices.Sort(r.lat)
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// timeHTTP times a GET / through each session middleware, every loaded
// session logged in.
func (b *bench) timeHTTP(ctx context.Context, failed map[string]error) ([]*result, error) {
	var rows []*result
	for _, web := range []struct {
		name, prefix string
		make         func(prefix string) (*webShop, error)
	}{{nameHTTPRetail, "h:", b.retailWeb}, {nameHTTPSCS, "s:", b.scsWeb}} {
		if failed[web.name] != nil {
			rows = append(rows, &result{op: "http_session", name: web.name, note: "failed its checks"})
			continue
		}
		s, err := web.make(web.prefix)
		if err != nil && b.srv.cluster && web.name == nameHTTPSCS {
			rows = append(rows, &result{op: "http_session", name: web.name, note: err.Error()})
			continue
		}
		if err != nil {
			return rows, err
		}
		logf("http_session: loading %d sessions for %s", b.cfg.sessions, s.name)
		if err := s.load(ctx, b.cfg.sessions); err != nil {
			return rows, err
		}
		// Every user's session requested once, as on a server that has run
		// a while (it fills retail's client-side cache; scs has none).
		if err := parallel(b.cfg.sessions, b.cfg.conc, func(i int) error { return s.get(b.pop, i) }); err != nil {
			return rows, err
		}
		logf("http_session: %s", s.name)
		r, err := b.measure(ctx, "http_session", s.name, 99, func(w *worker) error { return s.get(b.pop, w.session()) })
		if err != nil {
			return rows, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// rueidis returns a new client with rueidis's defaults, client-side
// caching on unless disableCache.
func (b *bench) rueidis(disableCache bool) (rueidis.Client, error) {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: b.srv.addrs, DisableCache: disableCache})
	if err != nil {
		return nil, err
	}
	b.onClose(c.Close)
	return c, nil
}

// goredis returns a new go-redis client with its defaults but PoolSize,
// raised to -c so that no call waits for a connection.
func (b *bench) goredis() redis.UniversalClient {
	var c redis.UniversalClient
	if b.srv.cluster {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: b.srv.addrs, PoolSize: b.cfg.conc})
	} else {
		c = redis.NewClient(&redis.Options{Addr: b.srv.addrs[0], PoolSize: b.cfg.conc})
	}
	b.onClose(func() { c.Close() })
	return c
}

// onClose registers f to run at close, after those registered later.
func (b *bench) onClose(f func()) { b.closers = append(b.closers, f) }

func (b *bench) close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
	b.closers = nil
}

var _ shop = retail.Store(nil) // every Store is a contender as it is

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(2)
}

// logf reports progress on stderr, so that stdout is the report alone.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}
