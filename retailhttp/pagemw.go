package retailhttp

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"time"
)

// The values of the X-Cache header that a [PageMiddleware] sets on the GET
// and HEAD responses it handles.
const (
	CacheHit  = "hit"  // served without running the handler for this request
	CacheMiss = "miss" // the handler ran for this request
)

// PageMiddlewareOptions configures a [PageMiddleware]. Zero fields take
// the defaults.
type PageMiddlewareOptions struct {
	// Skip reports whether a request bypasses the cache: it is neither
	// served from nor stored in it. IsPersonalRequest if nil, so that pages
	// rendered for a logged-in user are never shared with others. Set it
	// to a function that returns false to cache for everyone, when every
	// personal page says Cache-Control: private.
	Skip func(r *http.Request) bool

	// Logger receives the errors the middleware survives; slog.Default()
	// if nil.
	Logger *slog.Logger
}

// PageMiddleware serves pages through a [PageCache]: the book's
// cache_request as net/http middleware. Create one with NewPageMiddleware
// and wrap a handler with its Handler method.
//
// Only GET and HEAD requests are considered; others pass through, as do
// requests that Options.Skip selects. A GET request whose page may be
// cached (by [PageCache.CanCache] on its URL with the request's Host) is
// served from the cache if the page is there; otherwise the handler
// renders it, and the response is cached for the PageCache's TTL if it is
// cacheable:
//   - its status is 200 OK;
//   - it sets no cookie;
//   - its Cache-Control has none of private, no-store and no-cache;
//   - it has no Vary header and declares no trailers;
//   - it fits, with its header, in [MaxPageSize] bytes, and the handler
//     did not flush it early.
//
// The cache key is [PageKey]("GET", u), where u is the request's host,
// path and query, so query order and host case do not matter. HEAD
// requests are served from the GET entry of their URL, without the body;
// a HEAD request that misses is passed to the handler and nothing is
// stored, since a handler may answer HEAD without a body.
//
// Concurrent misses for one key render once: the first runs the handler
// and the others wait for it and are served its response, if it is
// cacheable. If it is not (it may be personal, or an error), or the first
// request's context ended, each waiting request runs the handler itself.
//
// Every GET and HEAD response gets an X-Cache header: [CacheHit] if the
// handler did not run for it (served from the cache, or from a concurrent
// render of the same page), [CacheMiss] otherwise.
//
// The cache never makes a page unavailable: if deciding, reading or
// writing fails, the error is logged and the handler serves the request.
// Cached entries hold the status, the header and the body in a small
// versioned format; an entry that does not decode is treated as a miss and
// overwritten.
//
// A cached page is served to every visitor who asks for its URL. Pages
// that differ by visitor must either be skipped (the default skips
// requests with a session, see [IsPersonalRequest]) or say
// Cache-Control: private. Put compression and other middleware that
// varies the response by request header outside the PageMiddleware. A PageMiddleware is safe for
// concurrent use.
type PageMiddleware struct {
	cache *PageCache
	opts  PageMiddlewareOptions

	// The renders in progress, by page key; a flight's value is nil if
	// its response cannot be shared.
	flights flights[*cachedPage]
}

// NewPageMiddleware returns a middleware that caches pages with c. It
// panics if c or c.Store is nil, which is a programming error. Settings of
// c that are out of range are reported by the middleware as errors on each
// request, which it then serves uncached.
func NewPageMiddleware(c *PageCache, opts PageMiddlewareOptions) *PageMiddleware {
	if c == nil || c.Store == nil {
		panic("retail: NewPageMiddleware: nil PageCache or Store")
	}
	if opts.Skip == nil {
		opts.Skip = IsPersonalRequest
	}
	return &PageMiddleware{cache: c, opts: opts}
}

// IsPersonalRequest is the default [PageMiddlewareOptions].Skip: it
// reports whether r carries a [Session] in its context (put there by
// [SessionManager.Handler], which must then wrap the page middleware) or
// an Authorization header, since the page rendered for such a request may
// show personal data.
func IsPersonalRequest(r *http.Request) bool {
	if _, ok := SessionFrom(r.Context()); ok {
		return true
	}
	return r.Header.Get("Authorization") != ""
}

// Handler returns next wrapped by the cache.
func (m *PageMiddleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		if !m.serveCached(w, r, next) {
			w.Header().Set("X-Cache", CacheMiss)
			next.ServeHTTP(w, r)
		}
	})
}

// serveCached serves r through the cache, and reports false if r is to be
// passed to next as it is.
func (m *PageMiddleware) serveCached(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
	if m.opts.Skip(r) {
		return false
	}
	ctx := r.Context()
	ttl, err := m.cache.settings()
	if err != nil {
		m.logError(ctx, "retail: page cache settings are invalid; not caching", err)
		return false
	}
	u := &url.URL{Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	ok, err := m.cache.decide(ctx, u)
	if err != nil {
		m.logError(ctx, "retail: deciding whether a page may be cached failed; not caching", err)
		return false
	}
	key := PageKey(http.MethodGet, u)
	if !ok || ValidatePage(key) != nil {
		return false
	}
	p, ok, err := m.lookup(ctx, key)
	if err != nil {
		m.logError(ctx, "retail: reading the page cache failed; not caching", err, slog.String("key", key))
		return false
	}
	if ok {
		p.serve(w, r, CacheHit)
		return true
	}
	if r.Method == http.MethodHead {
		return false
	}
	m.fill(w, r, next, key, ttl)
	return true
}

// fill runs next for a GET request that missed, or waits for the request
// already running it.
func (m *PageMiddleware) fill(w http.ResponseWriter, r *http.Request, next http.Handler, key string, ttl time.Duration) {
	ctx := r.Context()
	f, leader := m.flights.join(key)
	if !leader {
		select {
		case <-f.done:
		case <-ctx.Done():
			return // the client is gone; there is no one to answer
		}
		if f.val != nil {
			f.val.serve(w, r, CacheHit)
			return
		}
		w.Header().Set("X-Cache", CacheMiss)
		next.ServeHTTP(w, r)
		return
	}
	defer func() {
		// Release the waiters even if next panics: they render
		// themselves.
		m.flights.leave(key)
		f.release(nil)
	}()
	// A render for key may have finished and cached the page between this
	// request's miss and its turn to render: look again, so that a page is
	// rendered once however the requests interleave.
	if p, ok, err := m.lookup(ctx, key); err == nil && ok {
		f.release(p)
		p.serve(w, r, CacheHit)
		return
	}
	rec := &pageRecorder{w: w, header: make(http.Header), onPass: func() { f.release(nil) }}
	next.ServeHTTP(rec, r)
	p := rec.page()
	if p == nil || ctx.Err() != nil {
		// Not cacheable, or perhaps cut short: not for sharing. Passing
		// releases the waiters (onPass).
		rec.pass()
		return
	}
	if enc := p.encode(); len(enc) <= MaxPageSize {
		if err := m.cache.Store.SetPage(ctx, key, enc, ttl); err != nil {
			m.logError(ctx, "retail: writing the page cache failed", err, slog.String("key", key))
		}
	}
	f.release(p)
	p.serve(w, r, CacheMiss)
}

// lookup reads and decodes the entry under key. An entry that does not
// decode is a miss.
func (m *PageMiddleware) lookup(ctx context.Context, key string) (*cachedPage, bool, error) {
	data, ok, err := m.cache.Store.Page(ctx, key)
	if err != nil || !ok {
		return nil, false, err
	}
	p, ok := decodePage(data)
	return p, ok, nil
}

func (m *PageMiddleware) logError(ctx context.Context, msg string, err error, attrs ...slog.Attr) {
	if ctx.Err() != nil {
		return // the request is over; its errors say only that
	}
	l := m.opts.Logger
	if l == nil {
		l = slog.Default()
	}
	l.LogAttrs(ctx, slog.LevelError, msg, append(attrs, slog.Any("err", err))...)
}
