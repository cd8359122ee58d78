package webshop

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/examples/internal/backends"
)

// rowDelay is how often the row cacher refreshes each item's cached row.
const rowDelay = 10 * time.Second

// scheduleCheck is how often the shop schedules again the rows that have no
// cached copy (see keepScheduled): as often as a row is refreshed, so that
// after a Redis restarted empty the rows are cached again within seconds
// (a minute's check took 56 s under load). A check over rows that are all
// cached reads them from the client-side cache and sends Redis nothing.
const scheduleCheck = rowDelay

// shutdownGrace bounds how long requests in flight may finish at shutdown.
const shutdownGrace = 5 * time.Second

// Extension adds to the shop what a variant of it needs: flags, a decorator
// of its Store, routes. The zero Extension adds nothing.
type Extension struct {
	// Flags, if not nil, defines the variant's flags on the shop's flag
	// set, before the arguments are parsed.
	Flags func(fs *flag.FlagSet)

	// Setup, if not nil, is called once the arguments are parsed and the
	// Store is open, with the Store and its backend's name ("memory",
	// "Redis" or "Redis Cluster"). An error stops the shop before it
	// serves.
	Setup func(store retail.Store, backend string) (Setup, error)
}

// Setup is what an Extension's Setup adds to the shop.
type Setup struct {
	// Store, if not nil, is what the shop, its page cache and its workers
	// use instead of the Store given to Setup: a decorator that embeds it.
	Store retail.Store

	// Routes are served beside the shop's, outside its middlewares (as
	// /debug/vars is), by pattern: "GET /metrics".
	Routes map[string]http.Handler

	// Close, if not nil, is called once the shop has stopped serving and
	// its workers have stopped, before the Store is closed.
	Close func()
}

// Run serves the shop until ctx ends, then shuts it down: the server first,
// letting requests in flight finish, then the workers, then the store. args
// are the command line's arguments; ext adds a variant's flags and parts.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, ext Extension) error {
	fs := flag.NewFlagSet("shop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "address to serve on")
	redisAddrs := fs.String("redis", "", "use Redis at `ADDR[,ADDR...]` instead of memory (several addresses: a cluster)")
	cookieKey := fs.String("cookie-key", "", "`HEX` key of at least 32 bytes: use signed session cookies instead of token cookies")
	secure := fs.Bool("secure", false, "mark the session cookie Secure and name it __Host-retail_session (serve behind HTTPS)")
	idle := fs.Duration("idle-timeout", retail.DefaultIdleTimeout, "end a session not used for this long")
	lifetime := fs.Duration("lifetime", retail.DefaultLifetime, "end a session this long after it started or logged in")
	remember := fs.Duration("remember", 30*24*time.Hour, "end a session logged in with \"remember me\" this long after the login")
	if ext.Flags != nil {
		ext.Flags(fs)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	opts := shopOptions{Secure: *secure, Lifetime: *lifetime, Remember: *remember, Logger: logger}
	if *cookieKey != "" {
		key, err := hex.DecodeString(*cookieKey)
		if err != nil {
			return fmt.Errorf("-cookie-key: %w", err)
		}
		opts.SigningKey = key
	}

	var addrs []string
	if *redisAddrs != "" {
		addrs = strings.Split(*redisAddrs, ",")
	}
	store, backend, closeStore, err := backends.Open(addrs, backends.Options{IdleTimeout: *idle, Lifetime: max(*lifetime, *remember)})
	if err != nil {
		return fmt.Errorf("-redis %s: %w", *redisAddrs, err)
	}
	defer closeStore()
	if ext.Setup != nil {
		setup, err := ext.Setup(store, backend)
		if err != nil {
			return err
		}
		if setup.Close != nil {
			defer setup.Close() // deferred after closeStore: runs before it
		}
		if setup.Store != nil {
			store = setup.Store
		}
		opts.Routes = setup.Routes
	}

	cat := newCatalog()
	// One page cache for the pages and the row cacher: a row refreshed with
	// new data (a price change) purges its item's cached pages.
	if opts.Pages, err = retail.NewPageCache(store, retail.PageCacheOptions{}); err != nil {
		return err
	}
	handler, err := newShop(store, cat, opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := newServer(handler, logger)

	workCtx, stopWorkers := context.WithCancel(context.Background())
	defer stopWorkers()
	workers, err := startWorkers(workCtx, store, cat, opts.Pages, logger)
	if err != nil {
		return err
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "shop: serving on http://%s (%s backend); stop with Ctrl-C\n", ln.Addr(), backend)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		serveErr = errors.Join(serveErr, err)
	}
	stopWorkers()
	workers.Wait()
	fmt.Fprintln(stdout, "shop: stopped")
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}

// The server's limits on a connection. Without ReadTimeout a client that
// stops sending in the middle of a request's body holds its connection,
// its goroutine and what the body's parsing has buffered (up to 10 MB for
// a form) for as long as it likes; without IdleTimeout a keep-alive
// connection is held forever after its last request. Either lets one
// client hold memory in proportion to the connections it opens.
const (
	readHeaderTimeout = 10 * time.Second // the request line and header
	readTimeout       = 30 * time.Second // the whole request, body included
	idleTimeout       = 2 * time.Minute  // a keep-alive connection between requests
)

// newServer returns the shop's server of handler, with the limits above.
func newServer(handler http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelError),
	}
}

// startWorkers runs the book's three background loops until ctx ends. Rows
// of every item are scheduled for caching first, so that item pages read
// them from the row cache.
func startWorkers(ctx context.Context, store retail.Store, cat catalog, pages *retail.PageCache, logger *slog.Logger) (*sync.WaitGroup, error) {
	for id := range cat {
		if err := store.ScheduleRowCache(ctx, id, rowDelay); err != nil {
			return nil, err
		}
	}
	load := func(_ context.Context, id string) (any, error) {
		it, ok := cat[id]
		if !ok {
			return nil, fmt.Errorf("no item %q", id)
		}
		return it, nil
	}
	cleaner, errC := retail.NewSessionCleaner(store, retail.SessionCleanerOptions{Logger: logger})
	// A changed item purges its cached pages, so that a new price shows at
	// once instead of when the pages expire.
	purge := func(ctx context.Context, id string) error {
		_, err := pages.PurgeItem(ctx, id)
		return err
	}
	cacher, errR := retail.NewRowCacher(store, load, retail.RowCacherOptions{OnChange: purge, Logger: logger})
	rescaler, errV := retail.NewViewRescaler(store, retail.ViewRescalerOptions{Logger: logger})
	if err := errors.Join(errC, errR, errV); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	for name, w := range map[string]interface{ Run(context.Context) error }{
		"session cleaner": cleaner,
		"row cacher":      cacher,
		"view rescaler":   rescaler,
		"row schedule":    runner(func(ctx context.Context) error { return keepScheduled(ctx, store, cat, logger) }),
	} {
		wg.Go(func() {
			if err := w.Run(ctx); err != nil {
				logger.Error("shop: worker stopped", "worker", name, "err", err)
			}
		})
	}
	return &wg, nil
}

// runner makes a function a worker.
type runner func(ctx context.Context) error

func (r runner) Run(ctx context.Context) error { return r(ctx) }

// keepScheduled calls scheduleMissing every scheduleCheck until ctx ends. A
// Redis restarted without persistence has lost the rows' schedule with the
// rows: without this the row cacher would never cache them again, nor purge
// an item's pages when its row changes.
func keepScheduled(ctx context.Context, store retail.Store, cat catalog, logger *slog.Logger) error {
	tick := time.NewTicker(scheduleCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if n, err := scheduleMissing(ctx, store, cat); err != nil && ctx.Err() == nil {
			logger.Error("shop: scheduling rows again", "err", err)
		} else if n > 0 {
			logger.Warn("shop: scheduled rows that had no cached copy", "rows", n)
		}
	}
}

// scheduleMissing schedules again the catalog's rows that have no cached
// copy, and returns how many it scheduled. The rows are read through the
// client-side cache, so a pass over rows cached and unchanged costs Redis
// nothing.
func scheduleMissing(ctx context.Context, store retail.Store, cat catalog) (int, error) {
	n := 0
	for _, id := range cat.ids() {
		_, ok, err := store.Row(ctx, id)
		if err != nil {
			return n, err
		}
		if ok {
			continue
		}
		if err := store.ScheduleRowCache(ctx, id, rowDelay); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
