package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/go-chi/chi/v5"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
	"github.com/retailkit/retail/retailhttp"
)

// The page these tests cache: ?item=rankedItem is cacheable once the item
// has a view, by the book's rank rule.
const (
	rankedItem = "x"
	pagePath   = "/page"
	pageTarget = pagePath + "?item=" + rankedItem
)

func init() { gin.SetMode(gin.TestMode) }

// newCacheStack returns a page middleware over a fresh memory store in
// which rankedItem is ranked, and its PageCache.
func newCacheStack(t *testing.T) (*retailhttp.PageMiddleware, *retail.PageCache) {
	t.Helper()
	s, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatalf("memory.New = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.CountView(context.Background(), rankedItem); err != nil {
		t.Fatalf("CountView(%q) = %v", rankedItem, err)
	}
	c, err := retail.NewPageCache(s, retail.PageCacheOptions{})
	if err != nil {
		t.Fatalf("NewPageCache = %v", err)
	}
	mw, err := retailhttp.NewPageMiddleware(c, retailhttp.PageMiddlewareOptions{})
	if err != nil {
		t.Fatalf("NewPageMiddleware = %v", err)
	}
	return mw, c
}

// counter counts renders; body returns the body of render n.
type counter struct{ n atomic.Int64 }

func (c *counter) next() string {
	return fmt.Sprintf("<p>item %s, render %d</p>", rankedItem, c.n.Add(1))
}

// handler is a plain net/http page handler.
func (c *counter) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, c.next())
	})
}

// ginHandler is a gin-native page handler: it writes to c.Writer.
func (c *counter) ginHandler() gin.HandlerFunc {
	return func(ctx *gin.Context) {
		ctx.Data(http.StatusOK, "text/html; charset=utf-8", []byte(c.next()))
	}
}

// result is a response as these tests look at it.
type result struct {
	status int
	header http.Header
	body   string
}

func do(h http.Handler, method, target string, header http.Header) result {
	req := httptest.NewRequest(method, "http://shop.test"+target, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return result{rec.Code, rec.Result().Header, rec.Body.String()}
}

// checkCaching runs the flow every correctly mounted middleware must pass:
// a miss then a hit with the same body and ETag, a 304 for that ETag, and
// HEAD served from the GET entry without a body.
func checkCaching(t *testing.T, h http.Handler, renders *counter) {
	t.Helper()
	first := do(h, http.MethodGet, pageTarget, nil)
	if first.status != http.StatusOK || first.header.Get("X-Cache") != retailhttp.CacheMiss || first.body == "" {
		t.Fatalf("first GET: status %d, X-Cache %q, body %q; want 200, miss and a body", first.status, first.header.Get("X-Cache"), first.body)
	}
	etag := first.header.Get("ETag")
	if etag == "" {
		t.Errorf("first GET (the one that filled the entry) has no ETag")
	}
	second := do(h, http.MethodGet, pageTarget, nil)
	if second.status != http.StatusOK || second.header.Get("X-Cache") != retailhttp.CacheHit {
		t.Fatalf("second GET: status %d, X-Cache %q; want 200, hit", second.status, second.header.Get("X-Cache"))
	}
	if second.body != first.body {
		t.Errorf("second GET body %q, want the first's %q", second.body, first.body)
	}
	if got := second.header.Get("ETag"); got == "" || got != etag {
		t.Errorf("second GET ETag %q, want the first's %q", got, etag)
	}
	if second.header.Get("Age") == "" || second.header.Get("Cache-Control") == "" {
		t.Errorf("hit lacks Age or Cache-Control: %v", second.header)
	}
	if n := renders.n.Load(); n != 1 {
		t.Errorf("handler ran %d times for a miss and a hit, want 1", n)
	}

	nm := do(h, http.MethodGet, pageTarget, http.Header{"If-None-Match": {etag}})
	if nm.status != http.StatusNotModified || nm.body != "" {
		t.Errorf("GET with If-None-Match %s: status %d, body %q; want 304 and no body", etag, nm.status, nm.body)
	}
	if got := nm.header.Get("ETag"); got != etag {
		t.Errorf("304 ETag %q, want %q", got, etag)
	}

	head := do(h, http.MethodHead, pageTarget, nil)
	if head.status != http.StatusOK || head.header.Get("X-Cache") != retailhttp.CacheHit {
		t.Errorf("HEAD: status %d, X-Cache %q; want 200, hit (from the GET entry)", head.status, head.header.Get("X-Cache"))
	}
	if head.body != "" {
		t.Errorf("HEAD body %q, want none", head.body)
	}
	if got := head.header.Get("ETag"); got != etag {
		t.Errorf("HEAD ETag %q, want %q", got, etag)
	}
	if n := renders.n.Load(); n != 1 {
		t.Errorf("handler ran %d times in all, want 1", n)
	}
}

// checkNotStored runs the flow of a handler that writes past the
// middleware's writer: nothing is stored, and the next request renders
// again rather than being served an empty hit.
func checkNotStored(t *testing.T, h http.Handler, c *retail.PageCache, renders *counter) {
	t.Helper()
	for i := 1; i <= 2; i++ {
		res := do(h, http.MethodGet, pageTarget, nil)
		want := fmt.Sprintf("<p>item %s, render %d</p>", rankedItem, i)
		if res.status != http.StatusOK || res.body != want {
			t.Errorf("GET %d: status %d, body %q; want 200, %q", i, res.status, res.body, want)
		}
		if res.header.Get("X-Cache") == retailhttp.CacheHit {
			t.Errorf("GET %d: X-Cache hit, but nothing may have been stored", i)
		}
		u, _ := url.Parse("http://shop.test" + pageTarget)
		if p, ok, err := c.Lookup(context.Background(), u); ok || err != nil {
			t.Errorf("after GET %d: Lookup = %v, %v, %v; want nothing stored", i, p, ok, err)
		}
	}
	if n := renders.n.Load(); n != 2 {
		t.Errorf("handler ran %d times for two requests, want 2", n)
	}
}

func TestChi_MiddlewareWithUse(t *testing.T) {
	mw, _ := newCacheStack(t)
	var renders counter
	r := chi.NewRouter()
	r.Use(mw.Handler)
	r.Get(pagePath, renders.handler().ServeHTTP)
	checkCaching(t, r, &renders)
}

func TestChi_MiddlewarePerRoute(t *testing.T) {
	mw, _ := newCacheStack(t)
	var renders counter
	r := chi.NewRouter()
	r.With(mw.Handler).Get(pagePath, renders.handler().ServeHTTP)
	// chi does not route HEAD to GET routes: the HEAD route has the
	// middleware too, and is served from the GET entry.
	r.With(mw.Handler).Head(pagePath, renders.handler().ServeHTTP)
	r.Get("/other", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "uncached") })
	checkCaching(t, r, &renders)
	if res := do(r, http.MethodGet, "/other?item="+rankedItem, nil); res.header.Get("X-Cache") != "" {
		t.Errorf("a route without the middleware got X-Cache %q", res.header.Get("X-Cache"))
	}
}

func TestChi_HandlerWritingElsewhereStoresNothing(t *testing.T) {
	mw, c := newCacheStack(t)
	var renders counter
	r := chi.NewRouter()
	// A middleware outside the page cache hands the inner handler its own
	// writer through the context: the handler writes past the page
	// middleware's writer.
	type outerKey struct{}
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), outerKey{}, w)))
		})
	})
	r.Use(mw.Handler)
	r.Get(pagePath, func(_ http.ResponseWriter, r *http.Request) {
		w := r.Context().Value(outerKey{}).(http.ResponseWriter)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, renders.next())
	})
	checkNotStored(t, r, c, &renders)
}

func TestGin_WrapH(t *testing.T) {
	mw, _ := newCacheStack(t)
	var renders counter
	e := gin.New()
	h := gin.WrapH(mw.Handler(renders.handler()))
	e.GET(pagePath, h)
	e.HEAD(pagePath, h)
	checkCaching(t, e, &renders)
}

// naiveGinAdapter is the gin adapter bug: it runs the rest of gin's chain
// inside the page middleware, but the gin handlers keep writing to
// c.Writer, so the middleware's writer is bypassed.
func naiveGinAdapter(mw *retailhttp.PageMiddleware) gin.HandlerFunc {
	return func(c *gin.Context) {
		mw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			c.Next()
		})).ServeHTTP(c.Writer, c.Request)
		// Served from the cache, the rest of the chain must not run.
		c.Abort()
	}
}

func TestGin_NativeHandlerWritingToGinsWriterStoresNothing(t *testing.T) {
	mw, c := newCacheStack(t)
	var renders counter
	e := gin.New()
	e.GET(pagePath, naiveGinAdapter(mw), renders.ginHandler())
	checkNotStored(t, e, c, &renders)
}

// ginAdapter runs the rest of gin's chain inside the page middleware with
// c.Writer replaced by one that writes through the middleware's writer.
func ginAdapter(mw *retailhttp.PageMiddleware) gin.HandlerFunc {
	return func(c *gin.Context) {
		orig := c.Writer
		mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c.Writer = &ginWriter{ResponseWriter: orig, w: w, status: http.StatusOK, size: -1}
			c.Request = r
			defer func() { c.Writer = orig }()
			c.Next()
		})).ServeHTTP(orig, c.Request)
		c.Abort()
	}
}

// ginWriter is a gin.ResponseWriter that writes to w; its other methods
// are gin's.
type ginWriter struct {
	gin.ResponseWriter
	w      http.ResponseWriter
	status int
	size   int
}

func (g *ginWriter) Header() http.Header { return g.w.Header() }
func (g *ginWriter) WriteHeader(code int) {
	if code > 0 && !g.Written() {
		g.status = code
	}
}

func (g *ginWriter) WriteHeaderNow() {
	if !g.Written() {
		g.size = 0
		g.w.WriteHeader(g.status)
	}
}

func (g *ginWriter) Write(b []byte) (int, error) {
	g.WriteHeaderNow()
	n, err := g.w.Write(b)
	g.size += n
	return n, err
}

func (g *ginWriter) WriteString(s string) (int, error) { return g.Write([]byte(s)) }
func (g *ginWriter) Status() int                       { return g.status }
func (g *ginWriter) Size() int                         { return g.size }
func (g *ginWriter) Written() bool                     { return g.size != -1 }
func (g *ginWriter) Unwrap() http.ResponseWriter       { return g.w }

func TestGin_NativeHandlerThroughTheMiddlewaresWriter(t *testing.T) {
	mw, _ := newCacheStack(t)
	var renders counter
	e := gin.New()
	e.GET(pagePath, ginAdapter(mw), renders.ginHandler())
	e.HEAD(pagePath, ginAdapter(mw), renders.ginHandler())
	checkCaching(t, e, &renders)
}
