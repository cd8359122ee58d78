package retailhttp

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/internal/hooks"
)

// The values of the X-Cache header that a [PageMiddleware] sets on the GET
// and HEAD responses it handles.
const (
	CacheHit    = "hit"    // served without running the handler for this request
	CacheMiss   = "miss"   // looked up and not found: the handler ran for this request
	CacheBypass = "bypass" // not looked up (skipped, or the page may not be cached): the handler ran
)

// PageMiddlewareOptions configures a [PageMiddleware]. Zero fields take the
// defaults named on each.
type PageMiddlewareOptions struct {
	// Skip reports whether a request bypasses the cache: it is neither
	// served from nor stored in it. IsPersonalRequest if nil, so that pages
	// rendered for a visitor with a session (a guest's or a logged-in
	// user's) are never shared with others. Set it to a function that
	// returns false to cache for everyone, when every personal page says
	// Cache-Control: private. The responses to skipped requests say
	// Cache-Control: no-store unless the handler sets its own.
	Skip func(r *http.Request) bool

	// PublicMaxAge is how long browsers and shared caches may show a page
	// served from the cache again without asking: such responses say
	// Cache-Control: public, max-age=N, where N is the whole seconds of
	// PublicMaxAge or of what is left of the page's TTL, whichever is
	// less. Set it only if a cached page is right for every visitor for
	// that long, including one who logs in meanwhile: a browser shows
	// its copy without asking. If zero they say Cache-Control: no-cache, so
	// that a browser asks each time; the ETag makes that a 304 Not
	// Modified while the page is unchanged, and a visitor who has logged
	// in since gets the personal page. It must not be negative.
	PublicMaxAge time.Duration

	// Logger receives the errors the middleware survives; slog.Default()
	// if nil.
	Logger *slog.Logger
}

// PageMiddleware serves pages through a [retail.PageCache]: the book's
// cache_request as net/http middleware. Create one with NewPageMiddleware
// and wrap a handler with its Handler method.
//
// Only GET and HEAD requests are considered; others pass through, as do
// requests that the Skip option selects. A GET request whose page may be
// cached (by [retail.PageCache.CanCache] on its URL with the request's
// Host) is served from the cache if the page is there; otherwise the
// handler renders it, and the response is cached for the PageCache's TTL
// if it is cacheable:
//   - the handler wrote it, completely, through the middleware's writer:
//     a handler that wrote nothing through it (a router adapter that
//     writes to its own writer), panicked, hijacked the connection or
//     reached the underlying writer through Unwrap stores nothing;
//   - its status is 200 OK;
//   - it sets no cookie;
//   - its Cache-Control has none of private, no-store and no-cache;
//   - it has no Vary header and declares or sets no trailers (a response
//     that does is passed through, its trailers included);
//   - it fits, with its header, in [retail.MaxPageSize] bytes, and the
//     handler did not flush it early.
//
// Entries are [retail.CachedPage] values (status, header and body) under
// [retail.PageCache.Key] of the request's host, path and query, so query
// order, host case and tracking parameters do not matter. A page stored
// for a request with tracking parameters is rendered without them (the
// handler sees the URL without them), since it is served to every visitor
// of its key: a page that showed them could be filled with a link of an
// attacker's making. A page has one
// key: a request whose path is not spelled in its canonical form (an
// escaped letter, lower-case hex, a dot segment, a doubled or trailing
// slash: /%69tem, /x/../item, /item/) is served by the handler as a
// bypass and stored nowhere, so that spellings of one URL cannot fill the
// cache. Link to pages by their canonical paths. They are the entries
// [retail.PageCache.CacheRequest] reads and writes: a page cached by one is
// served by the other. HEAD requests are served from the GET entry of
// their URL, without the body; a HEAD request that misses is passed to the
// handler and nothing is stored, since a handler may answer HEAD without a
// body.
//
// Concurrent misses for one page render once (see [retail.PageCache.Fetch]):
// the first runs the handler and the others wait for it and are served its
// response, if it is cacheable. If it is not (it may be personal, or an
// error), or the first request's context ended, each waiting request runs
// the handler itself once the first response is complete. A request whose
// own context ends while it waits is not answered: its client is gone.
//
// Every GET and HEAD response gets an X-Cache header: [CacheHit] if the
// handler did not run for it (served from the cache, or from a concurrent
// render of the same page), [CacheMiss] if the cache was looked up and
// the handler ran, [CacheBypass] if the cache was not consulted (Skip
// said so, or the page may not be cached). Each such request also counts
// once in the [retail.Stats] of the Store under the PageCache, as its
// X-Cache header says: in PageHits, PageMisses or PageBypasses (a request
// whose client left while it waited for another's render counts as a
// miss).
//
// Cached responses (hits, and the response that filled the entry) carry
// the entry's strong ETag, an Age header (whole seconds since the page
// was stored, by the PageCache's clock) and Cache-Control: no-cache, or
// public with a max-age if the PublicMaxAge option is set (private if
// middleware around this one set a cookie on the response, as the session
// manager does when it clears a dead one); this replaces
// any Cache-Control the handler set, since the cache decides how the page
// is kept. A request whose If-None-Match matches the ETag (weak
// comparison, a list, or "*") gets 304 Not Modified with those headers
// and no body. By default, then, browsers keep cached pages but ask
// before each use, so that a visitor who logs in gets their own page when
// they next load it, not the copy they were served anonymously: a request
// with a session skips the cache, and its If-None-Match goes to the
// handler.
//
// Responses to requests that Skip selects say Cache-Control: no-store
// unless the handler sets its own: what the cache does not share, no
// cache should keep, and a browser should not show again from its
// history, where no-cache is no bar: after a logout, the back button
// would show the page of the visitor who just left.
//
// No header keeps every page out of a browser's history, though. A
// history navigation (the back button) shows the browser's HTTP-cache
// copy without asking, no-cache or not, so an anonymous page, cached
// here or not, comes back to a visitor who has logged in since; and
// Chromium's back/forward cache restores even no-store pages when no
// cookie changed meanwhile, as when another device logged the visitor
// out. A page that must never be shown again in another state says so
// in script: a pageshow listener that loads the page again, by path and
// query (a replace with a #fragment would not fetch), when
// event.persisted, or when the navigation timing entry is a back_forward
// one with a transferSize of 0 (see the example shop's templates).
//
// The cache never makes a page unavailable: if deciding, reading or
// writing fails, the error is logged and the handler serves the request.
//
// A cached page is served to every visitor who asks for its URL. Pages
// that differ by visitor must either be skipped (the default skips
// requests with a session, see [IsPersonalRequest]) or say
// Cache-Control: private. Put compression and other middleware that
// varies the response by request header outside the PageMiddleware.
//
// A PageMiddleware is safe for concurrent use.
type PageMiddleware struct {
	cache *retail.PageCache
	opts  PageMiddlewareOptions
}

// NewPageMiddleware returns a middleware that caches pages with c. It
// returns an error matching [retail.ErrInvalid] if c is nil or
// PublicMaxAge is negative.
func NewPageMiddleware(c *retail.PageCache, opts PageMiddlewareOptions) (*PageMiddleware, error) {
	const op = "NewPageMiddleware"
	if c == nil {
		return nil, invalid(op, "cache", "nil")
	}
	if opts.PublicMaxAge < 0 {
		return nil, invalid(op, "PublicMaxAge", "negative")
	}
	if opts.Skip == nil {
		opts.Skip = IsPersonalRequest
	}
	return &PageMiddleware{cache: c, opts: opts}, nil
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
		switch {
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			next.ServeHTTP(w, r)
		case m.opts.Skip(r):
			hooks.CountPageBypass(m.cache)
			w.Header().Set("X-Cache", CacheBypass)
			w.Header().Set("Cache-Control", "no-store")
			next.ServeHTTP(w, r)
		case !m.canCache(r):
			hooks.CountPageBypass(m.cache)
			w.Header().Set("X-Cache", CacheBypass)
			next.ServeHTTP(w, r)
		case r.Method == http.MethodHead:
			m.serveHead(w, r, next)
		default:
			m.serveGet(w, r, next)
		}
	})
}

// passMiss passes r to next, uncached.
func passMiss(w http.ResponseWriter, r *http.Request, next http.Handler) {
	w.Header().Set("X-Cache", CacheMiss)
	next.ServeHTTP(w, r)
}

// pageURL is the URL of r's page as the cache sees it.
func pageURL(r *http.Request) *url.URL {
	return &url.URL{Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
}

// canCache reports whether r's page may be cached. A failure to decide
// is logged and makes the page uncached.
func (m *PageMiddleware) canCache(r *http.Request) bool {
	ok, err := m.cache.CanCache(r.Context(), pageURL(r))
	if err != nil {
		logError(r.Context(), m.opts.Logger, "retailhttp: deciding whether a page may be cached failed; not caching", err, m.keyAttr(r))
		return false
	}
	return ok
}

// serveHead serves a HEAD request for a cacheable page from the GET
// entry, or passes it to next.
func (m *PageMiddleware) serveHead(w http.ResponseWriter, r *http.Request, next http.Handler) {
	p, ok, err := m.cache.Lookup(r.Context(), pageURL(r))
	if err != nil {
		logError(r.Context(), m.opts.Logger, "retailhttp: reading the page cache failed; not caching", err, m.keyAttr(r))
	}
	if !ok {
		passMiss(w, r, next)
		return
	}
	serve(w, r, p, CacheHit, m.cache.Now(), m.opts.PublicMaxAge)
}

// serveGet serves a GET request for a cacheable page from the cache, or
// from a concurrent render of it, or runs next and caches its response.
func (m *PageMiddleware) serveGet(w http.ResponseWriter, r *http.Request, next http.Handler) {
	// The render runs on this goroutine, inside Fetch, or not at all:
	// rendered says whether the handler ran for r, and own is the
	// response it recorded, or nil if that was passed through to w.
	var (
		rendered bool
		own      *retail.CachedPage
	)
	render := func(ctx context.Context) (*retail.CachedPage, error) {
		rendered = true
		rec := &pageRecorder{w: w, header: make(http.Header)}
		completed := false
		defer func() {
			if !completed {
				// The handler panicked: whatever it wrote is not a
				// page to keep. The panic goes on up.
				rec.passed = true
			}
		}()
		next.ServeHTTP(rec, asKeyed(m.cache, r))
		completed = true
		if err := ctx.Err(); err != nil {
			// The response may be cut short: send what there is and
			// share nothing. The error lets waiters whose clients are
			// still there render again instead of giving up.
			rec.finish()
			return nil, err
		}
		own = rec.page()
		return own, nil
	}
	ctx := r.Context()
	p, _, err := m.cache.Fetch(ctx, pageURL(r), render)
	switch {
	case rendered:
		if err != nil {
			logError(ctx, m.opts.Logger, "retailhttp: writing the page cache failed", err, m.keyAttr(r))
		}
		if own != nil {
			if p == nil {
				p = own
			}
			// p is the stored page, with its ETag and times, or own
			// if it was not stored.
			serve(w, r, p, CacheMiss, m.cache.Now(), m.opts.PublicMaxAge)
		}
	case p != nil:
		// Served from the cache or from another request's render. An
		// error with it is that render's failure to cache the page,
		// which that request logs.
		serve(w, r, p, CacheHit, m.cache.Now(), m.opts.PublicMaxAge)
	case ctx.Err() != nil:
		// The client is gone while waiting: there is no one to answer.
	default:
		if err != nil {
			logError(ctx, m.opts.Logger, "retailhttp: reading the page cache failed; not caching", err, m.keyAttr(r))
		}
		passMiss(w, r, next)
	}
}

// asKeyed returns r, or, if its query is spelled otherwise than its page's
// key spells it (with tracking parameters, which the key leaves out, in
// another order, escaped otherwise, with empty pairs), a shallow copy
// of r whose URL has the key's query, so that the page rendered for it,
// and served to every request of the key, is the page of its key, not of
// one visitor's spelling.
func asKeyed(c *retail.PageCache, r *http.Request) *http.Request {
	query, differs := hooks.KeyedQuery(c, r.URL)
	if !differs {
		return r
	}
	u := *r.URL
	u.RawQuery = query
	// Only the query of the request-target changes: a middleware outside
	// (http.StripPrefix) may have rewritten r.URL's path.
	uri, _, _ := strings.Cut(r.RequestURI, "?")
	if !strings.HasPrefix(uri, "/") { // absolute-form, or none (a test's request)
		uri = u.EscapedPath()
	}
	if query != "" {
		uri += "?" + query
	}
	r = r.WithContext(r.Context())
	r.URL, r.RequestURI, r.Form = &u, uri, nil
	return r
}

// keyAttr is the cache key of r's page, for the log. The errors it goes
// with come from deciding, reading or writing a page with a key; a page
// without one would be logged by its request URI.
func (m *PageMiddleware) keyAttr(r *http.Request) slog.Attr {
	if key, ok := m.cache.Key(pageURL(r)); ok {
		return slog.String("key", key)
	}
	return slog.String("uri", r.URL.RequestURI())
}
