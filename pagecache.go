package retail

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/retailkit/retail/internal/hooks"
)

// The book's page-cache settings, used where a [PageCacheOptions] field is
// zero.
const (
	DefaultPageTTL      = 300 * time.Second // how long a rendered page is served from the cache
	DefaultMaxCacheRank = 10_000            // only items ranked below this (0 is the most viewed) are cached
)

// PageCacheOptions configures a [PageCache]. Zero fields take the defaults
// named on each.
type PageCacheOptions struct {
	// TTL is how long a cached page is served, in [MinDuration]..[MaxPageTTL];
	// DefaultPageTTL if zero.
	TTL time.Duration

	// MaxRank is the rank an item must be below for its page to be cached;
	// DefaultMaxCacheRank if zero. It must not be negative.
	MaxRank int

	// Cacheable, if not nil, replaces the book's rule (see [CanCache]) in
	// deciding whether the page at a URL may be cached. The limits of the
	// page key still apply on top of it.
	Cacheable func(ctx context.Context, u *url.URL) (bool, error)

	// Hosts are the names the site answers to. A request whose host
	// (lowercased, without a trailing dot or the default port :80 or
	// :443) is one of them is cached under Hosts[0], so that www.shop.test
	// and shop.test share entries; a request for any other host is served
	// but not cached. If Hosts is empty the host is not part of the key:
	// every host is taken to be one site. Set it on a server that answers
	// to more than one site, or to any Host header a client sends.
	Hosts []string

	// TrackingParams are query parameters left out of the key, such as
	// the ad and mail campaign tags that make every visit's URL unique; an
	// entry ending in "*" names every parameter with that prefix.
	// DefaultTrackingParams if nil; none if empty but not nil.
	TrackingParams []string

	// Params are the query parameters, beside "item", that tell pages
	// apart; none by default. A request with any other parameter (that is
	// not a tracking parameter), or with one of these twice, is served but
	// not cached, so that junk query strings cannot fill the cache; one of
	// these without a value is left out of the key and of the request the
	// handler gets. The handler should answer values it does not know with
	// a status other than 200, which is never cached. "_" marks a dynamic page and
	// is never cached unless it is listed here and Cacheable allows it.
	Params []string

	// Clock tells the cache the time, for the age and remaining lifetime
	// of the pages it serves; SystemClock if nil. Give it the Store's
	// clock.
	Clock Clock

	// RankEvery is how old the ranks may be by which the book's rule
	// decides: the cache keeps the ranks of the MaxRank most viewed items
	// in its process, read with one TopItems call and read again in the
	// background once they are RankEvery old (by the system's clock), so
	// that deciding costs the Store nothing. DefaultViewFlush if zero,
	// which matches how often a Store sends its process's views. If
	// negative, or MaxRank is above MaxTopItems, every decision asks the
	// Store's ItemRank instead.
	RankEvery time.Duration
}

// PageCache decides which pages are cached and caches them in a Store: the
// book's can_cache and cache_request. Every entry it stores is a
// [CachedPage] (status, header, body, and when it was stored and expires)
// under the key [PageCache.Key] gives for u, whichever of its methods
// stored it, so [PageCache.CacheRequest] and an HTTP middleware built on
// [PageCache.Fetch] share one cache.
//
// A PageCache is safe for concurrent use. Concurrent misses for one page on
// the same PageCache render once, so a server keeps one PageCache.
//
// Every request it answers counts in the Store's [Stats], as a hit, a miss
// or a bypass; see Fetch, Lookup and CacheRequest.
type PageCache struct {
	store interface {
		Pages
		Views
	}
	opts    PageCacheOptions
	hosts   map[string]bool // the normalised Hosts option
	params  map[string]bool // "item" and the Params option
	flights flights         // the renders in progress, by page key
	stats   *counters       // the Store's (see Stats)
	ranks   rankSnapshots   // the ranks the book's rule decides by
}

// NewPageCache returns a page cache over s, which counts into s's [Stats].
// It returns an error matching [ErrInvalid] if s is nil, an option is out
// of range or a name in Hosts is empty.
func NewPageCache(s Store, opts PageCacheOptions) (*PageCache, error) {
	const op = "NewPageCache"
	if s == nil {
		return nil, invalid(op, "store", "nil")
	}
	if opts.TTL == 0 {
		opts.TTL = DefaultPageTTL
	}
	if err := checkPageTTL(op, "TTL", opts.TTL); err != nil {
		return nil, err
	}
	if opts.MaxRank == 0 {
		opts.MaxRank = DefaultMaxCacheRank
	}
	if err := checkNotNegative(op, "MaxRank", opts.MaxRank); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = SystemClock{}
	}
	if opts.RankEvery == 0 {
		opts.RankEvery = DefaultViewFlush
	}
	if opts.TrackingParams == nil {
		opts.TrackingParams = DefaultTrackingParams
	}
	opts.TrackingParams = slices.Clone(opts.TrackingParams)
	c := &PageCache{store: s, hosts: make(map[string]bool), params: map[string]bool{"item": true}, stats: s.statCounters(), ranks: rankSnapshots{first: make(chan struct{}, 1)}}
	opts.Hosts = slices.Clone(opts.Hosts)
	for i, h := range opts.Hosts {
		h = normalHost(h)
		if h == "" {
			return nil, invalid(op, "Hosts", "an empty host")
		}
		opts.Hosts[i] = h
		c.hosts[h] = true
	}
	for _, p := range opts.Params {
		c.params[p] = true
	}
	c.opts = opts
	return c, nil
}

// TTL returns how long the cache keeps a page.
func (c *PageCache) TTL() time.Duration { return c.opts.TTL }

// Now returns the time by the cache's clock (the Clock option), the time
// that [CachedPage.Stored] and [CachedPage.Expires] are measured by.
func (c *PageCache) Now() time.Time { return c.opts.Clock.Now() }

// CanCache reports whether the page at u may be cached: it must have a
// key (see [PageCache.Key]), and be allowed by the Cacheable option if it
// is set, otherwise by the book's rule (see [CanCache]) with the MaxRank
// option. Errors from the Store are returned as the Store returned them;
// errors from Cacheable are wrapped.
func (c *PageCache) CanCache(ctx context.Context, u *url.URL) (bool, error) {
	if _, ok := c.Key(u); !ok {
		return false, nil
	}
	if c.opts.Cacheable != nil {
		ok, err := c.opts.Cacheable(ctx, u)
		if err != nil {
			return false, fmt.Errorf("retail: PageCache: Cacheable: %w", err)
		}
		return ok, nil
	}
	rank := c.store.ItemRank
	if c.opts.RankEvery > 0 && c.opts.MaxRank <= MaxTopItems {
		rank = c.rank
	}
	return canCache(ctx, rank, u, c.opts.MaxRank)
}

// Lookup returns the page cached for u, without rendering and without
// asking CanCache. A miss, an expired page, a URL without a key (see
// [PageCache.Key]) and an entry that does not decode (such as one stored
// in an older format) all give ok == false and a nil error. The page
// belongs to the caller.
//
// Lookup is how a server answers a request from the cache alone (a HEAD
// request, say), so each call counts in the Store's [Stats] as one: a hit
// if it found the page, a bypass for a URL without a key, a miss
// otherwise.
func (c *PageCache) Lookup(ctx context.Context, u *url.URL) (p *CachedPage, ok bool, err error) {
	key, ok := c.Key(u)
	if !ok {
		c.stats.pageBypasses.Add(1)
		return nil, false, nil
	}
	p, ok, err = c.lookup(ctx, key)
	if ok {
		c.stats.pageHits.Add(1)
	} else {
		c.stats.pageMisses.Add(1)
	}
	return p, ok, err
}

// Fetch, Lookup and CacheRequest count the requests they answer;
// retailhttp.PageMiddleware counts those it passes by through this hook, so
// that the Stats account for every request.
func init() {
	hooks.CountPageBypass = func(c any) { c.(*PageCache).stats.pageBypasses.Add(1) }
	hooks.KeyedQuery = func(c any, u *url.URL) (string, bool) { return c.(*PageCache).keyedQuery(u) }
}

func (c *PageCache) lookup(ctx context.Context, key string) (*CachedPage, bool, error) {
	data, ok, err := c.store.Page(ctx, key)
	if err != nil || !ok {
		return nil, false, err
	}
	p, ok := decodePage(data)
	return p, ok, nil
}

// Fetch returns the page cached for u or, on a miss, renders it with
// render and caches it for the TTL option. It does not ask CanCache: the
// caller has decided that u may be cached. hit reports whether the page
// came from the cache or from a concurrent render of the same page. A nil
// render gives an error matching [ErrInvalid].
//
// A page that Fetch stores gets its Stored and Expires times, by the Clock
// option and the TTL option, and a strong ETag header computed from its
// body unless it has one; the page returned to the caller that rendered
// it and to the waiting calls is the stored one. A page that is not
// stored is returned as render returned it.
//
// render returns the page to cache and share, or a nil page and a nil
// error for a page that it rendered but that must be neither cached nor
// shared (it turned out personal, or it was already sent to a client).
// The page is served to every visitor of its key, so it must not show
// anything of u that the key leaves out, such as its tracking parameters;
// retailhttp's middleware renders without them.
// Concurrent misses for one key on the same PageCache render once: the
// other calls wait and get the page that render returned; if it returned
// none, or failed only because its caller's context ended, each waiting
// call runs its own render. An error from render is returned as it is,
// to the waiting calls too, and nothing is cached. If render panics, the
// panic propagates to the call that ran it and the waiting calls get an
// error. render runs on the goroutine that called Fetch.
//
// A page without a key (see [PageCache.Key]), or whose entry would be
// longer than [MaxPageSize] or cannot be encoded (a header line holding a
// newline), is rendered and returned but not cached. A failure to read the
// cache is returned without rendering. If rendering succeeded but caching
// failed, Fetch returns the page together with the error. The page belongs
// to the caller.
//
// Each call counts in the Store's [Stats]: as a hit if it returns hit ==
// true, as a bypass for a page without a key, as a miss otherwise.
func (c *PageCache) Fetch(ctx context.Context, u *url.URL, render func(context.Context) (*CachedPage, error)) (p *CachedPage, hit bool, err error) {
	if render == nil {
		return nil, false, invalid("PageCache.Fetch", "render", "nil")
	}
	key, ok := c.Key(u)
	if !ok {
		c.stats.pageBypasses.Add(1)
		p, err := render(ctx)
		return p, false, err
	}
	// Deferred so that a call whose render panics counts too, as a miss.
	defer func() {
		if hit {
			c.stats.pageHits.Add(1)
		} else {
			c.stats.pageMisses.Add(1)
		}
	}()
	return c.fetch(ctx, key, pageItem(u), render)
}

// fetch is Fetch for a page with a key.
func (c *PageCache) fetch(ctx context.Context, key, item string, render func(context.Context) (*CachedPage, error)) (*CachedPage, bool, error) {
	p, ok, err := c.lookup(ctx, key)
	if err != nil {
		return nil, false, err
	}
	if ok {
		return p, true, nil
	}
	for {
		f, leader := c.flights.join(key)
		if leader {
			r := c.run(ctx, f, key, item, render)
			return r.page, r.hit, r.err
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, false, fmt.Errorf("retail: PageCache: %w", ctx.Err())
		}
		r := f.val
		switch {
		case r.abandoned && ctx.Err() == nil:
			continue
		case r.page == nil && r.err == nil:
			p, err := render(ctx)
			return p, false, err
		}
		if r.page == nil {
			return nil, false, r.err
		}
		// Each caller owns the page it gets, as from a Store. A page from
		// another call's render is a hit for this one.
		c.stats.coalescedRenders.Add(1)
		return r.page.clone(), true, r.err
	}
}

// CacheRequest returns the body of the page at u: the book's
// cache_request. If CanCache allows it, the page is served from the cache
// (hit is true) or rendered by render and cached as a 200 page (see
// [PageCache.Fetch], whose rules on coalescing, panics and failures apply);
// otherwise it is rendered and nothing is stored. A nil render gives an
// error matching [ErrInvalid]. An entry stored by an
// HTTP middleware for u is served too: its body is returned.
//
// An error from render is returned as it is, and nothing is cached.
// Errors from CanCache or the Store are returned without rendering, except
// that if rendering succeeded but caching failed, the body is returned
// together with the error, so that a server may still send the page.
func (c *PageCache) CacheRequest(ctx context.Context, u *url.URL, render func(context.Context) ([]byte, error)) (body []byte, hit bool, err error) {
	if render == nil {
		return nil, false, invalid("PageCache.CacheRequest", "render", "nil")
	}
	ok, err := c.CanCache(ctx, u)
	if err != nil {
		c.stats.pageBypasses.Add(1)
		return nil, false, err
	}
	if !ok {
		c.stats.pageBypasses.Add(1)
		body, err := render(ctx)
		if err != nil {
			return nil, false, err
		}
		return body, false, nil
	}
	p, hit, err := c.Fetch(ctx, u, func(ctx context.Context) (*CachedPage, error) {
		body, err := render(ctx)
		if err != nil {
			return nil, err
		}
		return &CachedPage{Status: 200, Body: body}, nil
	})
	if p == nil {
		return nil, false, err
	}
	return p.Body, hit, err
}

// fillResult is what the render of a page gives the calls waiting on it.
type fillResult struct {
	page *CachedPage // nil: not to be shared
	hit  bool
	err  error
	// abandoned is set when the render failed only because the context of
	// the caller that ran it ended. Waiters whose own context is alive
	// retry instead of inheriting someone else's cancellation.
	abandoned bool
}

var errRenderPanicked = errors.New("retail: PageCache: the render of this page panicked")

// run renders for the flight f, releases its waiters, even if render
// panics, and returns the leader's result. The waiters share a copy of the
// page made before run returns: the page the leader gets is its own, and
// so may be the memory render returned it in (a pooled buffer, say), which
// the leader may reuse as soon as Fetch returns.
func (c *PageCache) run(ctx context.Context, f *flight, key, item string, render func(context.Context) (*CachedPage, error)) (r fillResult) {
	shared := fillResult{err: errRenderPanicked} // kept only if fill panics
	defer func() {
		// Leave before releasing, so that a waiter that retries starts a
		// new flight instead of finding this one again.
		c.flights.leave(key)
		f.release(shared)
	}()
	r.page, r.hit, r.err = c.fill(ctx, key, item, render)
	r.abandoned = r.err != nil && ctx.Err() != nil
	shared = r
	shared.page = r.page.clone()
	return r
}

// fill renders the page under key and caches it, as one of item's pages
// if item is not empty.
func (c *PageCache) fill(ctx context.Context, key, item string, render func(context.Context) (*CachedPage, error)) (*CachedPage, bool, error) {
	// A render for key may have finished and cached the page between this
	// caller's miss and its turn to render: look again, so that a page is
	// rendered once however the calls interleave.
	if p, ok, err := c.lookup(ctx, key); err != nil || ok {
		return p, ok, err
	}
	p, err := render(ctx)
	if err != nil || p == nil {
		return nil, false, err
	}
	now := c.Now()
	stored := p.stamped(now, now.Add(c.opts.TTL))
	data, ok := stored.encode()
	if !ok || len(data) > MaxPageSize {
		return p, false, nil
	}
	if item != "" {
		err = c.store.SetItemPage(ctx, item, key, data, c.opts.TTL)
	} else {
		err = c.store.SetPage(ctx, key, data, c.opts.TTL)
	}
	if err != nil {
		return p, false, err
	}
	return stored, false, nil
}

// Purge deletes the page cached for u (under the key [PageCache.Key]
// gives, or would give to u's path in its canonical form), so that the
// next request renders it again. A URL without a key, or without a cached
// page, is a no-op.
func (c *PageCache) Purge(ctx context.Context, u *url.URL) error {
	key, _, ok := c.key(u)
	if !ok {
		return nil
	}
	return c.store.DeletePage(ctx, key)
}

// PurgeItem deletes every cached page of item, in every variant (host,
// parameters, HEAD and GET share entries), and returns how many it
// deleted. The pages of an item are those whose URL names it as the
// book's rule does: exactly one "item" query parameter that is a valid
// id. A page rendered before a change but stored while PurgeItem runs
// may survive it (see [Pages.PurgeItemPages]). An invalid item id gives an
// error matching [ErrInvalid].
func (c *PageCache) PurgeItem(ctx context.Context, item string) (int, error) {
	return c.store.PurgeItemPages(ctx, item)
}

// pageItem returns the item the page at u shows under the book's rule: the
// one "item" query parameter, if it is a valid id; "" otherwise.
func pageItem(u *url.URL) string {
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return ""
	}
	items := q["item"]
	if len(items) != 1 || checkID("", "", items[0]) != nil {
		return ""
	}
	return items[0]
}

// CanCache reports whether the page at u may be cached under the book's
// rule with its default rank limit, [DefaultMaxCacheRank]: u must be an item
// page (exactly one non-empty "item" query parameter), must not be dynamic
// (no "_" query parameter), and the item must be ranked by views below the
// limit. A query that does not parse, or an item id that breaks the input
// rules, makes the page not cacheable rather than an error: such a page is
// simply rendered every time. Errors from views are returned as they are;
// a nil views gives an error matching [ErrInvalid].
func CanCache(ctx context.Context, views Views, u *url.URL) (bool, error) {
	if views == nil {
		return false, invalid("CanCache", "views", "nil")
	}
	return canCache(ctx, views.ItemRank, u, DefaultMaxCacheRank)
}

func canCache(ctx context.Context, itemRank func(context.Context, string) (int, bool, error), u *url.URL, maxRank int) (bool, error) {
	if u == nil {
		return false, nil
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		// Which item is asked for is ambiguous; the cache must not guess.
		return false, nil
	}
	items := q["item"]
	if len(items) != 1 || items[0] == "" || q.Has("_") {
		return false, nil
	}
	if checkID("", "", items[0]) != nil {
		return false, nil
	}
	rank, ok, err := itemRank(ctx, items[0])
	if err != nil {
		return false, err
	}
	return ok && rank < maxRank, nil
}

// CacheRequest is [PageCache.CacheRequest] with the book's defaults over s.
// Each call stands alone: it asks the Store for the item's rank (ItemRank),
// as the book does, and concurrent misses for one page each render it. A
// server should keep one PageCache instead, so that they render once and
// decide by its snapshot of the ranks.
func CacheRequest(ctx context.Context, s Store, u *url.URL, render func(context.Context) ([]byte, error)) (body []byte, hit bool, err error) {
	// A snapshot of the ranks would cost a TopItems of DefaultMaxCacheRank
	// items a call, for one decision.
	c, err := NewPageCache(s, PageCacheOptions{RankEvery: -1})
	if err != nil {
		return nil, false, err
	}
	return c.CacheRequest(ctx, u, render)
}
