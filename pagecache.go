package retail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The book's page-cache settings, used where a [PageCache] field is zero.
const (
	DefaultPageTTL      = 300 * time.Second // how long a rendered page is served from the cache
	DefaultMaxCacheRank = 10_000            // only items ranked below this (0 is the most viewed) are cached
)

// PageCache decides which pages are cached and caches them in a Store: the
// book's can_cache and cache_request.
//
// Only Store is required; zero values of the other fields take the book's
// defaults. A PageCache is safe for concurrent use and must not be copied
// after first use, because concurrent misses for one page are coalesced
// through state it holds.
type PageCache struct {
	// Store keeps the pages and ranks the items. A full [Store] will do.
	Store interface {
		Pages
		Views
	}

	// TTL is how long a cached page is served; DefaultPageTTL if zero. It
	// must be within the page TTL rule of [ValidateSetPage].
	TTL time.Duration

	// MaxRank is the rank an item must be below for its page to be cached;
	// DefaultMaxCacheRank if zero. It must not be negative.
	MaxRank int

	// Cacheable, if not nil, replaces the book's rule (see [CanCache]) in
	// deciding whether the page at a URL may be cached. The limits of the
	// page key still apply on top of it.
	Cacheable func(ctx context.Context, u *url.URL) (bool, error)

	flights flights[fillResult] // the renders in progress, by page key
}

// fillResult is what the render of a page gives the calls waiting on it.
type fillResult struct {
	body []byte
	hit  bool
	err  error
	// abandoned is set when the render failed only because the context of
	// the caller that ran it ended. Waiters whose own context is alive
	// retry instead of inheriting someone else's cancellation.
	abandoned bool
}

// flights coalesces concurrent misses for one page key: the first caller
// (the leader) renders, the others wait on its flight. [PageCache] and
// [PageMiddleware] share it; the zero value is ready to use.
type flights[T any] struct {
	mu sync.Mutex
	m  map[string]*flight[T]
}

// flight is one render in progress.
type flight[T any] struct {
	done chan struct{} // closed by the first release
	once sync.Once
	val  T // final once done is closed
}

// release sets f's value and wakes its waiters; later calls do nothing.
func (f *flight[T]) release(v T) {
	f.once.Do(func() {
		f.val = v
		close(f.done)
	})
}

// join returns the flight for key, or registers a new one, in which case
// leader is true and the caller must render, then call leave.
func (g *flights[T]) join(key string) (f *flight[T], leader bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f := g.m[key]; f != nil {
		return f, false
	}
	if g.m == nil {
		g.m = make(map[string]*flight[T])
	}
	f = &flight[T]{done: make(chan struct{})}
	g.m[key] = f
	return f, true
}

// leave ends the leader's flight for key: later misses start a new one.
func (g *flights[T]) leave(key string) {
	g.mu.Lock()
	delete(g.m, key)
	g.mu.Unlock()
}

var errRenderPanicked = errors.New("retail: CacheRequest: render panicked")

// CanCache reports whether the page at u may be cached: by c.Cacheable if it
// is set, otherwise by the book's rule with c.MaxRank (see [CanCache]).
// Errors from the Store or from c.Cacheable are returned wrapped; settings
// of c that are out of range yield an error matching [ErrInvalid].
func (c *PageCache) CanCache(ctx context.Context, u *url.URL) (bool, error) {
	if _, err := c.settings(); err != nil {
		return false, err
	}
	ok, err := c.decide(ctx, u)
	if err != nil {
		return false, fmt.Errorf("retail: CanCache: %w", err)
	}
	return ok, nil
}

// decide is CanCache without the checks and wrapping of CanCache.
func (c *PageCache) decide(ctx context.Context, u *url.URL) (bool, error) {
	if c.Cacheable != nil {
		return c.Cacheable(ctx, u)
	}
	maxRank := c.MaxRank
	if maxRank == 0 {
		maxRank = DefaultMaxCacheRank
	}
	return canCache(ctx, c.Store, u, maxRank)
}

// CacheRequest returns the page at u, served from the cache when it may be
// cached and is, or rendered by render otherwise; hit reports whether the
// body came from the cache. The page is cached under PageKey("GET", u), so
// CacheRequest is meant for GET requests.
//
// A page that may not be cached (see [PageCache.CanCache]), or whose key
// breaks the page key rule of [ValidatePage] (for example by being longer
// than [MaxPageKeyLen]), is rendered and nothing is stored. On a miss,
// concurrent calls for one page key on the same PageCache render once and
// all return that render's body; the body is then cached for c.TTL, unless
// it is longer than [MaxPageSize], in which case it is returned but not
// cached. If the call that runs render has its context canceled, the calls
// waiting on it render again under their own contexts rather than fail.
// Every call owns the body it gets back, even when the render was shared.
//
// An error from render is returned as it is, and nothing is cached. Errors
// from the Store or from c.Cacheable are returned wrapped; settings of c
// that are out of range yield an error matching [ErrInvalid] before
// anything else happens. A failure to read the cache is returned without
// rendering. If rendering succeeded but caching the body failed,
// CacheRequest returns the rendered body together with the error, so that
// a server may still send the page and report the failure; in every other
// case body is nil when err is not nil. If render panics, the panic
// propagates to the caller that ran it, and the calls waiting on it return
// an error.
func (c *PageCache) CacheRequest(ctx context.Context, u *url.URL, render func(context.Context) ([]byte, error)) (body []byte, hit bool, err error) {
	ttl, err := c.settings()
	if err != nil {
		return nil, false, err
	}
	ok, err := c.decide(ctx, u)
	if err != nil {
		return nil, false, wrapCacheRequest(err)
	}
	key := PageKey(http.MethodGet, u)
	if !ok || ValidatePage(key) != nil {
		body, err := render(ctx)
		if err != nil {
			return nil, false, err
		}
		return body, false, nil
	}
	body, ok, err = c.Store.Page(ctx, key)
	if err != nil {
		return nil, false, wrapCacheRequest(err)
	}
	if ok {
		return body, true, nil
	}
	for {
		f, leader := c.flights.join(key)
		if leader {
			c.run(ctx, f, key, ttl, render)
			return f.val.body, f.val.hit, f.val.err
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, false, wrapCacheRequest(ctx.Err())
		}
		if f.val.abandoned && ctx.Err() == nil {
			continue
		}
		// Each caller owns the body it gets, as from a Store.
		return bytes.Clone(f.val.body), f.val.hit, f.val.err
	}
}

// run renders for the flight f and releases its waiters, even if render
// panics.
func (c *PageCache) run(ctx context.Context, f *flight[fillResult], key string, ttl time.Duration, render func(context.Context) ([]byte, error)) {
	r := fillResult{err: errRenderPanicked} // kept only if fill panics
	defer func() {
		// Leave before releasing, so that a waiter that retries starts a
		// new flight instead of finding this one again.
		c.flights.leave(key)
		f.release(r)
	}()
	r.body, r.hit, r.err = c.fill(ctx, key, ttl, render)
	r.abandoned = r.err != nil && ctx.Err() != nil
}

// fill renders the page under key and caches it.
func (c *PageCache) fill(ctx context.Context, key string, ttl time.Duration, render func(context.Context) ([]byte, error)) (body []byte, hit bool, err error) {
	// A render for key may have finished and cached the page between this
	// caller's miss and its turn to render: look again, so that a page is
	// rendered once however the calls interleave.
	body, ok, err := c.Store.Page(ctx, key)
	if err != nil {
		return nil, false, wrapCacheRequest(err)
	}
	if ok {
		return body, true, nil
	}
	body, err = render(ctx)
	if err != nil {
		return nil, false, err
	}
	if len(body) > MaxPageSize {
		return body, false, nil
	}
	if err := c.Store.SetPage(ctx, key, body, ttl); err != nil {
		return body, false, wrapCacheRequest(err)
	}
	return body, false, nil
}

// settings checks c's fields and returns the TTL to cache pages for.
func (c *PageCache) settings() (ttl time.Duration, err error) {
	ttl = c.TTL
	if ttl == 0 {
		ttl = DefaultPageTTL
	}
	if ttl < MinDuration || ttl > MaxPageTTL {
		return 0, invalid("PageCache", "TTL", "not in "+MinDuration.String()+".."+days(MaxPageTTL))
	}
	if c.MaxRank < 0 {
		return 0, invalid("PageCache", "MaxRank", "negative")
	}
	return ttl, nil
}

func wrapCacheRequest(err error) error {
	return fmt.Errorf("retail: CacheRequest: %w", err)
}

// PageKey returns the canonical cache key of a request: the method, a space,
// the lowercased host, the escaped path ("/" if empty) and, if the query is
// not empty, "?" and the query with its keys sorted and each key's values in
// their original order, e.g. "GET test.com/?a=1&item=x". The scheme, user
// information and fragment are not part of the key. Requests that differ
// only in query order or host case share a key.
//
// A query that does not parse is kept as it was sent. Such a key never
// equals the key of a query that parses, because the canonical encoding
// never contains what makes a query unparsable (a bad escape, a ";", too
// many parameters); [CanCache] refuses such pages anyway.
func PageKey(method string, u *url.URL) string {
	var b strings.Builder
	b.WriteString(method)
	b.WriteByte(' ')
	b.WriteString(strings.ToLower(u.Host))
	if p := u.EscapedPath(); p != "" {
		b.WriteString(p)
	} else {
		b.WriteByte('/')
	}
	query := u.RawQuery
	if q, err := url.ParseQuery(query); err == nil {
		query = q.Encode()
	}
	if query != "" {
		b.WriteByte('?')
		b.WriteString(query)
	}
	return b.String()
}

// CanCache reports whether the page at u may be cached under the book's
// rule with its default rank limit, [DefaultMaxCacheRank]: u must be an item
// page (exactly one non-empty "item" query parameter), must not be dynamic
// (no "_" query parameter), and the item must be ranked by views below the
// limit. A query that does not parse, or an item id that breaks the input
// rules, makes the page not cacheable rather than an error: such a page is
// simply rendered every time. Errors from views are returned wrapped.
func CanCache(ctx context.Context, views Views, u *url.URL) (bool, error) {
	ok, err := canCache(ctx, views, u, DefaultMaxCacheRank)
	if err != nil {
		return false, fmt.Errorf("retail: CanCache: %w", err)
	}
	return ok, nil
}

func canCache(ctx context.Context, views Views, u *url.URL, maxRank int) (bool, error) {
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		// Which item is asked for is ambiguous; the cache must not guess.
		return false, nil
	}
	items := q["item"]
	if len(items) != 1 || items[0] == "" || q.Has("_") {
		return false, nil
	}
	if ValidateItemRank(items[0]) != nil {
		return false, nil
	}
	rank, ok, err := views.ItemRank(ctx, items[0])
	if err != nil {
		return false, err
	}
	return ok && rank < maxRank, nil
}

// CacheRequest is [PageCache.CacheRequest] with the book's defaults over s.
// Each call stands alone: concurrent misses for one page each render it. A
// server should keep one PageCache instead, so that they render once.
func CacheRequest(ctx context.Context, s Store, u *url.URL, render func(context.Context) ([]byte, error)) (body []byte, hit bool, err error) {
	c := PageCache{Store: s}
	return c.CacheRequest(ctx, u, render)
}
