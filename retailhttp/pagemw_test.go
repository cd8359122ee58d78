package retailhttp_test

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
	"github.com/retailkit/retail/retailhttp"
)

// pageHandler answers with its fields and counts its calls.
type pageHandler struct {
	calls  atomic.Int64
	status int
	header http.Header
	body   string
}

func (h *pageHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := h.calls.Add(1)
	for k, v := range h.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if h.status != 0 {
		w.WriteHeader(h.status)
	}
	fmt.Fprintf(w, "%s (render %d)", h.body, n)
}

// response is what a client sees, for diffs.
type response struct {
	Status int
	XCache string
	Body   string
}

func serve(h http.Handler, method, target string) response {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	res := rec.Result()
	return response{res.StatusCode, res.Header.Get("X-Cache"), rec.Body.String()}
}

// newMiddleware returns a page middleware over c, failing the test on an
// error.
func newMiddleware(t *testing.T, c *retail.PageCache, opts retailhttp.PageMiddlewareOptions) *retailhttp.PageMiddleware {
	t.Helper()
	m, err := retailhttp.NewPageMiddleware(c, opts)
	if err != nil {
		t.Fatalf("NewPageMiddleware = %v", err)
	}
	return m
}

// newPageStack returns a page middleware wrapping h over a fresh store in
// which itemX is ranked, and that store, which counts its page reads.
func newPageStack(t *testing.T, h http.Handler, opts retailhttp.PageMiddlewareOptions) (http.Handler, *pageCountingStore) {
	t.Helper()
	ms, _ := newRankedStore(t)
	s := &pageCountingStore{Store: ms}
	return newMiddleware(t, newPageCache(t, s, retail.PageCacheOptions{}), opts).Handler(h), s
}

func TestPageMiddleware_ServesPopularItemPagesFromTheCache(t *testing.T) {
	h := &pageHandler{body: "itemX", header: http.Header{"X-Custom": {"kept"}}}
	mw, _ := newPageStack(t, h, retailhttp.PageMiddlewareOptions{})
	const target = "http://shop.test/?item=itemX"
	first := serve(mw, http.MethodGet, target)
	rec := httptest.NewRecorder()
	mw.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	second := response{rec.Code, rec.Header().Get("X-Cache"), rec.Body.String()}

	want := []response{{200, "miss", "itemX (render 1)"}, {200, "hit", "itemX (render 1)"}}
	if diff := cmp.Diff(want, []response{first, second}); diff != "" {
		t.Errorf("two GETs of a popular item page mismatch (-want +got):\n%s", diff)
	}
	for _, k := range []string{"X-Custom", "Content-Type", "Content-Length"} {
		if rec.Header().Get(k) == "" {
			t.Errorf("cached response lacks header %s; header: %v", k, rec.Header())
		}
	}
}

func TestPageMiddleware_PassesOtherMethodsThrough(t *testing.T) {
	h := &pageHandler{body: "itemX"}
	mw, _ := newPageStack(t, h, retailhttp.PageMiddlewareOptions{})
	const target = "http://shop.test/?item=itemX"
	var got []response
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodGet, http.MethodPost} {
		got = append(got, serve(mw, method, target))
	}
	want := []response{
		{200, "", "itemX (render 1)"},
		{200, "", "itemX (render 2)"},
		{200, "", "itemX (render 3)"},
		{200, "miss", "itemX (render 4)"}, // nothing was cached before
		{200, "", "itemX (render 5)"},     // nor served from the cache after
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("POST, PUT, DELETE, GET, POST mismatch (-want +got):\n%s", diff)
	}
}

func TestPageMiddleware_HeadIsServedFromTheGetEntryWithoutBody(t *testing.T) {
	h := &pageHandler{body: "itemX"}
	mw, _ := newPageStack(t, h, retailhttp.PageMiddlewareOptions{})
	const target = "http://shop.test/?item=itemX"

	// A HEAD miss renders and stores nothing.
	if got := serve(mw, http.MethodHead, target); got.XCache != "miss" {
		t.Errorf("HEAD before any GET: X-Cache = %q, want miss", got.XCache)
	}
	if got := serve(mw, http.MethodGet, target); got.XCache != "miss" {
		t.Errorf("GET after a HEAD miss: X-Cache = %q, want miss: HEAD must not store", got.XCache)
	}
	rec := httptest.NewRecorder()
	mw.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, target, nil))
	if got := (response{rec.Code, rec.Header().Get("X-Cache"), rec.Body.String()}); got != (response{200, "hit", ""}) {
		t.Errorf("HEAD after GET = %+v, want 200, hit, no body", got)
	}
	if got, want := rec.Header().Get("Content-Length"), fmt.Sprint(len("itemX (render 2)")); got != want {
		t.Errorf("HEAD hit Content-Length = %q, want %q (the GET body's)", got, want)
	}
	if got := h.calls.Load(); got != 2 {
		t.Errorf("handler calls = %d, want 2", got)
	}
}

func TestPageMiddleware_CachesOnlyOKResponses(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusInternalServerError, http.StatusFound, http.StatusNoContent, http.StatusPartialContent} {
		h := &pageHandler{status: status}
		mw, _ := newPageStack(t, h, retailhttp.PageMiddlewareOptions{})
		for range 2 {
			serve(mw, http.MethodGet, "http://shop.test/?item=itemX")
		}
		if got := h.calls.Load(); got != 2 {
			t.Errorf("status %d: handler calls for 2 GETs = %d, want 2 (not cached)", status, got)
		}
	}
}

func TestPageMiddleware_DoesNotCachePersonalResponses(t *testing.T) {
	for _, header := range []http.Header{
		{"Set-Cookie": {"a=b"}},
		{"Cache-Control": {"private"}},
		{"Cache-Control": {"max-age=60, PRIVATE"}},
		{"Cache-Control": {`private="Set-Cookie"`}},
		{"Cache-Control": {"no-store"}},
		{"Cache-Control": {"public", "no-cache"}},
		{"Vary": {"Cookie"}},
		{"Trailer": {"X-Checksum"}},
		{"X-Bad": {"a\nb"}},
	} {
		h := &pageHandler{header: header}
		mw, _ := newPageStack(t, h, retailhttp.PageMiddlewareOptions{})
		var got []response
		for range 2 {
			got = append(got, serve(mw, http.MethodGet, "http://shop.test/?item=itemX"))
		}
		want := []response{{200, "miss", " (render 1)"}, {200, "miss", " (render 2)"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("header %v: two GETs mismatch (-want +got):\n%s", header, diff)
		}
	}
}

func TestPageMiddleware_DoesNotCacheUnpopularOrDynamicPages(t *testing.T) {
	h := &pageHandler{}
	mw, _ := newPageStack(t, h, retailhttp.PageMiddlewareOptions{})
	for _, target := range []string{
		"http://shop.test/",
		"http://shop.test/?item=itemY", // never viewed: no rank
		"http://shop.test/?item=itemX&_=123",
	} {
		for range 2 {
			if got := serve(mw, http.MethodGet, target); got.XCache != "bypass" {
				t.Errorf("GET %s: X-Cache = %q, want bypass", target, got.XCache)
			}
		}
	}
	if got := h.calls.Load(); got != 6 {
		t.Errorf("handler calls = %d, want 6", got)
	}
}

func TestPageMiddleware_QueryOrderAndHostCaseShareAnEntry(t *testing.T) {
	ctx := context.Background()
	h := &pageHandler{body: "itemX"}
	ms, _ := newRankedStore(t)
	c := newPageCache(t, ms, retail.PageCacheOptions{Hosts: []string{"shop.test"}, Params: []string{"color", "size"}})
	mw, s := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(h), ms
	serve(mw, http.MethodGet, "http://shop.test/?item=itemX&color=red&size=m")
	for _, target := range []string{
		"http://shop.test/?size=m&item=itemX&color=red",
		"http://SHOP.test/?color=red&size=m&item=itemX",
	} {
		if got := serve(mw, http.MethodGet, target); got.XCache != "hit" {
			t.Errorf("GET %s after the same query in another order: X-Cache = %q, want hit", target, got.XCache)
		}
	}
	if got := serve(mw, http.MethodGet, "http://other.test/?item=itemX&color=red&size=m"); got.XCache != "bypass" {
		t.Errorf("GET on another host: X-Cache = %q, want bypass", got.XCache)
	}
	if _, ok, _ := s.Page(ctx, "GET shop.test/?color=red&item=itemX&size=m"); !ok {
		t.Errorf("no page stored under the canonical key %q", "GET shop.test/?color=red&item=itemX&size=m")
	}
}

func TestPageMiddleware_ConcurrentMissesRenderOnce(t *testing.T) {
	const requests = 50
	release := make(chan struct{})
	var calls atomic.Int64
	mw, s := newPageStack(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		<-release
		fmt.Fprint(w, "itemX")
	}), retailhttp.PageMiddlewareOptions{})

	got := make([]response, requests)
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() { got[i] = serve(mw, http.MethodGet, "http://shop.test/?item=itemX") })
	}
	// Hold the render until every request has missed, so they overlap it.
	eventually(t, "every request to miss", func() bool { return s.pageReads.Load() >= requests })
	close(release)
	wg.Wait()

	if n := calls.Load(); n != 1 {
		t.Errorf("handler calls = %d, want 1", n)
	}
	misses := 0
	for i, r := range got {
		if r.Status != 200 || r.Body != "itemX" {
			t.Errorf("request %d = %+v, want 200 itemX", i, r)
		}
		if r.XCache == "miss" {
			misses++
		}
	}
	if misses != 1 {
		t.Errorf("responses with X-Cache: miss = %d, want 1 (the one that rendered)", misses)
	}
}

func TestPageMiddleware_WaitersRenderThemselvesWhenTheFirstResponseIsPersonal(t *testing.T) {
	const waiters = 10
	release := make(chan struct{})
	var calls atomic.Int64
	mw, s := newPageStack(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if who := r.Header.Get("X-Who"); who == "first" {
			<-release
			http.SetCookie(w, &http.Cookie{Name: "secret", Value: "first's"})
		}
		fmt.Fprint(w, "page for ", r.Header.Get("X-Who"))
	}), retailhttp.PageMiddlewareOptions{})
	do := func(who string) *http.Response {
		req := httptest.NewRequest(http.MethodGet, "http://shop.test/?item=itemX", nil)
		req.Header.Set("X-Who", who)
		rec := httptest.NewRecorder()
		mw.ServeHTTP(rec, req)
		return rec.Result()
	}

	var wg sync.WaitGroup
	wg.Go(func() { do("first") })
	eventually(t, "the first request to render", func() bool { return calls.Load() == 1 })
	results := make([]*http.Response, waiters)
	reads := s.pageReads.Load()
	for i := range waiters {
		wg.Go(func() { results[i] = do("waiter") })
	}
	// Each waiter reads the cache once before it joins the render.
	eventually(t, "every waiter to miss", func() bool { return s.pageReads.Load() >= reads+waiters })
	close(release)
	wg.Wait()

	for i, res := range results {
		if c := res.Header["Set-Cookie"]; len(c) != 0 {
			t.Errorf("waiter %d got Set-Cookie %q, want none: a personal response must not be shared", i, c)
		}
	}
	if got := calls.Load(); got != 1+waiters {
		t.Errorf("handler calls = %d, want %d", got, 1+waiters)
	}
}

func TestPageMiddleware_SkipsRequestsWithASessionByDefault(t *testing.T) {
	h := &pageHandler{}
	mw, _ := newPageStack(t, h, retailhttp.PageMiddlewareOptions{})
	const target = "http://shop.test/?item=itemX"
	serve(mw, http.MethodGet, target) // cached for anonymous visitors

	req := httptest.NewRequest(http.MethodGet, target, nil)
	req = req.WithContext(retailhttp.WithSession(req.Context(), retailhttp.Session{Token: "t", User: "alice"}))
	rec := httptest.NewRecorder()
	mw.ServeHTTP(rec, req)
	if got := rec.Header().Get("X-Cache"); got != "bypass" || h.calls.Load() != 2 {
		t.Errorf("GET with a session: X-Cache %q, handler calls %d, want bypass, 2", got, h.calls.Load())
	}

	req = httptest.NewRequest(http.MethodGet, target, nil)
	req.Header.Set("Authorization", "Bearer x")
	rec = httptest.NewRecorder()
	mw.ServeHTTP(rec, req)
	if got := rec.Header().Get("X-Cache"); got != "bypass" || h.calls.Load() != 3 {
		t.Errorf("GET with Authorization: X-Cache %q, handler calls %d, want bypass, 3", got, h.calls.Load())
	}
}

func TestPageMiddleware_SkipOptionReplacesTheDefault(t *testing.T) {
	h := &pageHandler{}
	mw, _ := newPageStack(t, h, retailhttp.PageMiddlewareOptions{Skip: func(r *http.Request) bool {
		return r.URL.Query().Has("preview")
	}})
	for _, target := range []string{"http://shop.test/?item=itemX&preview=1", "http://shop.test/?item=itemX&preview=1"} {
		if got := serve(mw, http.MethodGet, target); got.XCache != "bypass" {
			t.Errorf("GET %s: X-Cache = %q, want bypass", target, got.XCache)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "http://shop.test/?item=itemX", nil)
	req.Header.Set("Authorization", "Bearer x") // no longer skipped
	for _, want := range []string{"miss", "hit"} {
		rec := httptest.NewRecorder()
		mw.ServeHTTP(rec, req)
		if got := rec.Header().Get("X-Cache"); got != want {
			t.Errorf("GET with Authorization under a custom Skip: X-Cache = %q, want %q", got, want)
		}
	}
}

func TestPageMiddleware_CacheableReplacesTheBookRule(t *testing.T) {
	s, _ := newStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{Cacheable: func(_ context.Context, u *url.URL) (bool, error) {
		return u.Path == "/about", nil
	}})
	h := &pageHandler{body: "about"}
	mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(h)
	var got []string
	for range 2 {
		got = append(got, serve(mw, http.MethodGet, "http://shop.test/about").XCache)
	}
	if diff := cmp.Diff([]string{"miss", "hit"}, got); diff != "" {
		t.Errorf("X-Cache of two GETs of /about mismatch (-want +got):\n%s", diff)
	}
}

func TestPageMiddleware_ServesPagesWhenTheStoreFails(t *testing.T) {
	s, _ := newRankedStore(t)
	logs := &logRecorder{}
	h := &pageHandler{body: "itemX"}
	mw := newMiddleware(t, newPageCache(t, s, retail.PageCacheOptions{}), retailhttp.PageMiddlewareOptions{Logger: logs.Logger()}).Handler(h)
	s.Close()
	if got := serve(mw, http.MethodGet, "http://shop.test/?item=itemX"); got != (response{200, "bypass", "itemX (render 1)"}) {
		t.Errorf("GET with a closed store = %+v, want the rendered page, bypassing the cache", got)
	}
	if !strings.Contains(logs.String(), "closed") {
		t.Errorf("log = %q, want the store's error", logs.String())
	}
}

func TestPageMiddleware_RerendersEntriesThatDoNotDecode(t *testing.T) {
	h := &pageHandler{body: "itemX"}
	mw, s := newPageStack(t, h, retailhttp.PageMiddlewareOptions{})
	const key = "GET /?item=itemX" // the PageCache has no Hosts: no host in the key
	for _, junk := range []string{"", "<h1>old format</h1>", "retail-page/1 200\nNo-Blank-Line: x", "retail-page/9 200\n\nbody"} {
		if err := s.SetPage(context.Background(), key, []byte(junk), time.Minute); err != nil {
			t.Fatalf("SetPage = %v", err)
		}
		if got := serve(mw, http.MethodGet, "http://shop.test/?item=itemX"); got.XCache != "miss" || !strings.HasPrefix(got.Body, "itemX") {
			t.Errorf("GET over entry %q = %+v, want a fresh render", junk, got)
		}
		if got := serve(mw, http.MethodGet, "http://shop.test/?item=itemX"); got.XCache != "hit" {
			t.Errorf("GET after re-rendering over %q: X-Cache = %q, want hit", junk, got.XCache)
		}
	}
}

func TestPageMiddleware_StreamsFlushedResponsesUncached(t *testing.T) {
	var calls atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		fmt.Fprint(w, "part 1 ")
		http.NewResponseController(w).Flush()
		fmt.Fprint(w, "part 2")
	})
	mw, _ := newPageStack(t, h, retailhttp.PageMiddlewareOptions{})
	for range 2 {
		rec := httptest.NewRecorder()
		mw.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://shop.test/?item=itemX", nil))
		if rec.Body.String() != "part 1 part 2" || !rec.Flushed {
			t.Errorf("flushed response: body %q, flushed %v, want %q, true", rec.Body.String(), rec.Flushed, "part 1 part 2")
		}
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("handler calls = %d, want 2 (not cached)", got)
	}
}

func TestPageMiddleware_PanicReleasesThePage(t *testing.T) {
	var calls atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			panic("boom")
		}
		fmt.Fprint(w, "itemX")
	})
	mw, _ := newPageStack(t, h, retailhttp.PageMiddlewareOptions{})
	func() {
		defer func() {
			if got := recover(); got != "boom" {
				t.Errorf("recover() = %v, want %q", got, "boom")
			}
		}()
		serve(mw, http.MethodGet, "http://shop.test/?item=itemX")
	}()
	if got := serve(mw, http.MethodGet, "http://shop.test/?item=itemX"); got != (response{200, "miss", "itemX"}) {
		t.Errorf("GET after a panic = %+v, want a fresh render", got)
	}
}

func TestNewPageMiddleware_RejectsANilCache(t *testing.T) {
	m, err := retailhttp.NewPageMiddleware(nil, retailhttp.PageMiddlewareOptions{})
	if m != nil || !errors.Is(err, retail.ErrInvalid) {
		t.Errorf("NewPageMiddleware(nil) = %v, %v, want nil, an error matching %v", m, err, retail.ErrInvalid)
	}
}

func ExampleNewPageMiddleware() {
	ctx := context.Background()
	store, err := memory.New(memory.Options{})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	_ = store.UpdateToken(ctx, "3f1c9a", "alice", "itemX") // itemX is now ranked

	cache, err := retail.NewPageCache(store, retail.PageCacheOptions{})
	if err != nil {
		panic(err)
	}
	pages, err := retailhttp.NewPageMiddleware(cache, retailhttp.PageMiddlewareOptions{})
	if err != nil {
		panic(err)
	}
	handler := pages.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<h1>%s</h1>", r.URL.Query().Get("item"))
	}))
	for range 2 {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://shop.test/?item=itemX", nil))
		fmt.Println(rec.Header().Get("X-Cache"), rec.Body)
	}

	// Output:
	// miss <h1>itemX</h1>
	// hit <h1>itemX</h1>
}

// The middleware and PageCache.CacheRequest once stored different formats
// under one key, so each took the other's entries for junk or served them
// raw. These two tests pin that they share entries both ways.

func TestPageMiddleware_CacheRequestServesTheMiddlewaresEntry(t *testing.T) {
	ctx := context.Background()
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(&pageHandler{body: "itemX"})
	const target = "http://shop.test/?item=itemX"
	if got := serve(mw, http.MethodGet, target); got != (response{200, "miss", "itemX (render 1)"}) {
		t.Fatalf("GET %s = %+v, want the first render", target, got)
	}

	renders := 0
	body, hit, err := c.CacheRequest(ctx, mustParse(t, target), func(context.Context) ([]byte, error) {
		renders++
		return []byte("rendered by CacheRequest"), nil
	})
	if err != nil || !hit || string(body) != "itemX (render 1)" || renders != 0 {
		t.Errorf("CacheRequest(%s) after the middleware cached it = %q, hit %v, %v, %d renders; want %q, hit, nil, 0 renders",
			target, body, hit, err, renders, "itemX (render 1)")
	}
}

func TestPageMiddleware_ServesTheEntryOfCacheRequest(t *testing.T) {
	ctx := context.Background()
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	h := &pageHandler{body: "rendered by the handler"}
	mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(h)
	const target = "http://shop.test/?item=itemX"
	const page = "<h1>itemX</h1>"
	if _, _, err := c.CacheRequest(ctx, mustParse(t, target), func(context.Context) ([]byte, error) {
		return []byte(page), nil
	}); err != nil {
		t.Fatalf("CacheRequest(%s) = %v", target, err)
	}

	var got []response
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		rec := httptest.NewRecorder()
		mw.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
		got = append(got, response{rec.Code, rec.Header().Get("X-Cache"), rec.Body.String()})
		if ct := rec.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("%s of CacheRequest's page: Content-Type = %q, want the sniffed %q", method, ct, "text/html; charset=utf-8")
		}
	}
	want := []response{{200, "hit", page}, {200, "hit", ""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET, HEAD of a page CacheRequest cached mismatch (-want +got):\n%s", diff)
	}
	if n := h.calls.Load(); n != 0 {
		t.Errorf("handler calls = %d, want 0", n)
	}
}

func TestPageMiddleware_StoresTheResponseAsACachedPage(t *testing.T) {
	ctx := context.Background()
	s, clock := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{Clock: clock})
	mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Custom", "kept")
		w.Header().Set("Date", "Wed, 01 Jan 2025 00:00:00 GMT") // set anew by each serve
		fmt.Fprint(w, "<p>itemX</p>")
	}))
	const target = "http://shop.test/?item=itemX"
	serve(mw, http.MethodGet, target)

	p, ok, err := c.Lookup(ctx, mustParse(t, target))
	if err != nil || !ok {
		t.Fatalf("Lookup(%s) = %v, %v, want a page", target, ok, err)
	}
	want := &retail.CachedPage{
		Status:  200,
		Header:  map[string][]string{"Content-Type": {"text/html; charset=utf-8"}, "X-Custom": {"kept"}, "Etag": {bodyETag("<p>itemX</p>")}},
		Body:    []byte("<p>itemX</p>"),
		Stored:  clock.Now(),
		Expires: clock.Now().Add(c.TTL()),
	}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("cached page mismatch (-want +got):\n%s", diff)
	}
}

// failingPagesStore fails every read of the page cache.
type failingPagesStore struct {
	retail.Store
}

var errPagesDown = errors.New("pages are down")

func (failingPagesStore) Page(context.Context, string) ([]byte, bool, error) {
	return nil, false, errPagesDown
}

func TestPageMiddleware_ServesPagesWhenReadingTheCacheFails(t *testing.T) {
	ms, _ := newRankedStore(t)
	logs := &logRecorder{}
	h := &pageHandler{body: "itemX"}
	c := newPageCache(t, failingPagesStore{ms}, retail.PageCacheOptions{})
	mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{Logger: logs.Logger()}).Handler(h)
	var got []response
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		got = append(got, serve(mw, method, "http://shop.test/?item=itemX"))
	}
	// httptest.ResponseRecorder keeps what a handler writes for HEAD.
	want := []response{{200, "miss", "itemX (render 1)"}, {200, "miss", "itemX (render 2)"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET, HEAD with a failing page cache mismatch (-want +got):\n%s", diff)
	}
	if n := strings.Count(logs.String(), errPagesDown.Error()); n != 2 {
		t.Errorf("log has the read error %d times, want 2; log:\n%s", n, logs.String())
	}
	// Each names the page by its cache key (no Hosts: no host in it).
	if n := strings.Count(logs.String(), `key="GET /?item=itemX"`); n != 2 {
		t.Errorf("log names the page's key %d times, want 2; log:\n%s", n, logs.String())
	}
}

func TestPageMiddleware_WaiterWhoseClientLeavesIsNotAnswered(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int64
	mw, s := newPageStack(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		<-release
		fmt.Fprint(w, "itemX")
	}), retailhttp.PageMiddlewareOptions{})
	const target = "http://shop.test/?item=itemX"

	var wg sync.WaitGroup
	wg.Go(func() { serve(mw, http.MethodGet, target) })
	eventually(t, "the first request to render", func() bool { return calls.Load() == 1 })
	reads := s.pageReads.Load()
	ctx, cancel := context.WithCancel(context.Background())
	rec := httptest.NewRecorder()
	waiterDone := make(chan struct{})
	go func() {
		defer close(waiterDone)
		mw.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, target, nil))
	}()
	eventually(t, "the waiter to miss", func() bool { return s.pageReads.Load() > reads })
	cancel()
	<-waiterDone
	close(release)
	wg.Wait()

	if n := calls.Load(); n != 1 {
		t.Errorf("handler calls = %d, want 1: a request whose client left must not render", n)
	}
	if rec.Body.Len() != 0 || rec.Header().Get("X-Cache") != "" {
		t.Errorf("waiter whose client left got X-Cache %q, body %q, want no answer", rec.Header().Get("X-Cache"), rec.Body)
	}
}

func mustParse(t *testing.T, rawURL string) *url.URL {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("url.Parse(%q) = %v", rawURL, err)
	}
	return u
}

// request serves a request for target with the given header lines
// ("Name: value") through h and returns what the client got.
func request(h http.Handler, method, target string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	for _, line := range header {
		k, v, _ := strings.Cut(line, ": ")
		req.Header.Add(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// cacheHeaders are the headers a cached response carries, for diffs.
type cacheHeaders struct {
	Status                          int
	XCache, ETag, Age, CacheControl string
	Body                            string
}

func cacheHeadersOf(rec *httptest.ResponseRecorder) cacheHeaders {
	h := rec.Result().Header
	return cacheHeaders{rec.Code, h.Get("X-Cache"), h.Get("Etag"), h.Get("Age"), h.Get("Cache-Control"), rec.Body.String()}
}

// TestPageMiddleware_CachedResponsesCarryETagAgeAndNoCache: by default a
// browser may keep a cached page but must ask before showing it again, so
// that it never shows a visitor who has logged in since the copy made for
// the anonymous.
func TestPageMiddleware_CachedResponsesCarryETagAgeAndNoCache(t *testing.T) {
	s, clock := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{TTL: 300 * time.Second, Clock: clock})
	h := &pageHandler{body: "itemX", header: http.Header{"Cache-Control": {"public, max-age=3600"}}}
	mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(h)
	const target = "http://shop.test/?item=itemX"
	etag := bodyETag("itemX (render 1)")

	var got []cacheHeaders
	got = append(got, cacheHeadersOf(request(mw, http.MethodGet, target)))
	clock.Advance(61500 * time.Millisecond)
	got = append(got, cacheHeadersOf(request(mw, http.MethodGet, target)))
	got = append(got, cacheHeadersOf(request(mw, http.MethodHead, target)))
	want := []cacheHeaders{
		{200, "miss", etag, "0", "no-cache", "itemX (render 1)"},
		{200, "hit", etag, "61", "no-cache", "itemX (render 1)"},
		{200, "hit", etag, "61", "no-cache", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET (fills), GET and HEAD after 61.5s mismatch (-want +got):\n%s", diff)
	}
}

func TestPageMiddleware_PublicMaxAgeLetsBrowsersKeepCachedPages(t *testing.T) {
	s, clock := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{TTL: 300 * time.Second, Clock: clock})
	mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{PublicMaxAge: time.Minute}).Handler(&pageHandler{body: "itemX"})
	const target = "http://shop.test/?item=itemX"
	etag := bodyETag("itemX (render 1)")

	var got []cacheHeaders
	got = append(got, cacheHeadersOf(request(mw, http.MethodGet, target)))
	clock.Advance(200 * time.Second)
	got = append(got, cacheHeadersOf(request(mw, http.MethodHead, target)))
	clock.Advance(61500 * time.Millisecond)
	got = append(got, cacheHeadersOf(request(mw, http.MethodGet, target)))
	clock.Advance(38 * time.Second)
	got = append(got, cacheHeadersOf(request(mw, http.MethodGet, target, "If-None-Match: "+etag)))
	want := []cacheHeaders{
		{200, "miss", etag, "0", "public, max-age=60", "itemX (render 1)"},
		{200, "hit", etag, "200", "public, max-age=60", ""},
		{200, "hit", etag, "261", "public, max-age=38", "itemX (render 1)"}, // the TTL's rest is less
		{304, "hit", etag, "299", "public, max-age=0", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET (fills), HEAD after 200s, GET after 261.5s, conditional GET after 299.5s mismatch (-want +got):\n%s", diff)
	}
}

func TestNewPageMiddleware_RejectsANegativePublicMaxAge(t *testing.T) {
	s, _ := newStore(t)
	m, err := retailhttp.NewPageMiddleware(newPageCache(t, s, retail.PageCacheOptions{}), retailhttp.PageMiddlewareOptions{PublicMaxAge: -time.Second})
	if m != nil || !errors.Is(err, retail.ErrInvalid) {
		t.Errorf("NewPageMiddleware(PublicMaxAge: -1s) = %v, %v, want nil, an error matching %v", m, err, retail.ErrInvalid)
	}
}

// TestPageMiddleware_PersonalRequestsGetThePersonalPage is a visitor who
// logs in after an anonymous visit: the browser asks with the ETag of the
// anonymous copy, and must get the page the handler renders for the
// session, marked private, not a 304 that would keep the copy.
func TestPageMiddleware_PersonalRequestsGetThePersonalPage(t *testing.T) {
	s, clock := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{TTL: 300 * time.Second, Clock: clock})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := "anonymous"
		if sess, ok := retailhttp.SessionFrom(r.Context()); ok {
			who = sess.User
		}
		fmt.Fprintf(w, "itemX for %s", who)
	})
	mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(h)
	const target = "http://shop.test/?item=itemX"
	etag := bodyETag("itemX for anonymous")
	personal := func(header ...string) cacheHeaders {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req = req.WithContext(retailhttp.WithSession(req.Context(), retailhttp.Session{Token: "t", User: "alice"}))
		for _, line := range header {
			k, v, _ := strings.Cut(line, ": ")
			req.Header.Add(k, v)
		}
		rec := httptest.NewRecorder()
		mw.ServeHTTP(rec, req)
		return cacheHeadersOf(rec)
	}

	got := []cacheHeaders{
		cacheHeadersOf(request(mw, http.MethodGet, target)),
		cacheHeadersOf(request(mw, http.MethodGet, target, "If-None-Match: "+etag)),
		personal("If-None-Match: " + etag),
		personal(),
	}
	want := []cacheHeaders{
		{200, "miss", etag, "0", "no-cache", "itemX for anonymous"},
		{304, "hit", etag, "0", "no-cache", ""},
		{200, "bypass", "", "", "no-store", "itemX for alice"},
		{200, "bypass", "", "", "no-store", "itemX for alice"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("anonymous GET, anonymous conditional GET, GET with a session with and without If-None-Match mismatch (-want +got):\n%s", diff)
	}
}

// TestPageMiddleware_HandlerDecidesCacheControlOfSkippedRequests: the
// middleware's no-store for a skipped request is a default that
// the handler may replace.
func TestPageMiddleware_HandlerDecidesCacheControlOfSkippedRequests(t *testing.T) {
	h := &pageHandler{body: "itemX", header: http.Header{"Cache-Control": {"private, max-age=10"}}}
	mw, _ := newPageStack(t, h, retailhttp.PageMiddlewareOptions{})
	got := cacheHeadersOf(request(mw, http.MethodGet, "http://shop.test/?item=itemX", "Authorization: Bearer x"))
	if want := (cacheHeaders{200, "bypass", "", "", "private, max-age=10", "itemX (render 1)"}); got != want {
		t.Errorf("GET with Authorization of a handler that sets Cache-Control = %+v, want %+v", got, want)
	}
}

func TestPageMiddleware_UncachedResponsesCarryNoCacheHeaders(t *testing.T) {
	h := &pageHandler{body: "itemY"}
	mw, _ := newPageStack(t, h, retailhttp.PageMiddlewareOptions{})
	got := cacheHeadersOf(request(mw, http.MethodGet, "http://shop.test/?item=itemY")) // not ranked
	if want := (cacheHeaders{200, "bypass", "", "", "", "itemY (render 1)"}); got != want {
		t.Errorf("GET of an uncached page = %+v, want %+v", got, want)
	}
}

func TestPageMiddleware_IfNoneMatchAnswersNotModified(t *testing.T) {
	etag := bodyETag("itemX (render 1)")
	for _, tc := range []struct {
		name, ifNoneMatch string
		match             bool
	}{
		{"Exact", etag, true},
		{"Weak", "W/" + etag, true},
		{"List", `"other", W/"x,y", ` + etag, true},
		{"ListWithoutSpaces", `"other",` + etag, true},
		{"Star", "*", true},
		{"Other", `"other"`, false},
		{"Unquoted", strings.Trim(etag, `"`), false},
		{"Malformed", `"other`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, clock := newRankedStore(t)
			c := newPageCache(t, s, retail.PageCacheOptions{TTL: 300 * time.Second, Clock: clock})
			mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(&pageHandler{body: "itemX"})
			const target = "http://shop.test/?item=itemX"
			var got []cacheHeaders
			for _, method := range []string{http.MethodGet, http.MethodGet, http.MethodHead} {
				got = append(got, cacheHeadersOf(request(mw, method, target, "If-None-Match: "+tc.ifNoneMatch)))
			}
			want := []cacheHeaders{
				{200, "miss", etag, "0", "no-cache", "itemX (render 1)"},
				{200, "hit", etag, "0", "no-cache", "itemX (render 1)"},
				{200, "hit", etag, "0", "no-cache", ""},
			}
			if tc.match {
				for i := range want {
					want[i].Status, want[i].Body = http.StatusNotModified, ""
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("GET (fills), GET, HEAD with If-None-Match: %s mismatch (-want +got):\n%s", tc.ifNoneMatch, diff)
			}
		})
	}
}

// pageStored reports whether c holds a page for target.
func pageStored(t *testing.T, c *retail.PageCache, target string) bool {
	t.Helper()
	_, ok, err := c.Lookup(context.Background(), mustParse(t, target))
	if err != nil {
		t.Fatalf("Lookup(%s) = %v", target, err)
	}
	return ok
}

// TestPageMiddleware_StoresNothingNotWrittenThroughIt is the router
// adapter bug: a handler that answers on a writer of its own, not the
// middleware's, must not leave an empty page in the cache.
func TestPageMiddleware_StoresNothingNotWrittenThroughIt(t *testing.T) {
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	const target = "http://shop.test/?item=itemX"
	var calls atomic.Int64
	outer := func(w http.ResponseWriter, r *http.Request) {
		// The adapter keeps the server's writer and hands the middleware
		// a request only.
		mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			calls.Add(1)
			w.Header().Set("X-Own", "yes")
			fmt.Fprint(w, "itemX")
		}))
		mw.ServeHTTP(httptest.NewRecorder(), r)
	}
	for i := range 2 {
		rec := httptest.NewRecorder()
		outer(rec, httptest.NewRequest(http.MethodGet, target, nil))
		if rec.Body.String() != "itemX" {
			t.Errorf("GET %d: body %q, want %q", i+1, rec.Body, "itemX")
		}
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("handler calls = %d, want 2: nothing cached", got)
	}
	if pageStored(t, c, target) {
		t.Errorf("a page was stored for a response not written through the middleware")
	}
}

func TestPageMiddleware_HandlerThatWritesNothingSends200Uncached(t *testing.T) {
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Custom", "kept")
	}))
	const target = "http://shop.test/?item=itemX"
	for i := range 2 {
		rec := request(mw, http.MethodGet, target)
		if rec.Code != 200 || rec.Header().Get("X-Custom") != "kept" || rec.Header().Get("X-Cache") != "miss" {
			t.Errorf("GET %d = %d, X-Custom %q, X-Cache %q, want 200, kept, miss", i+1, rec.Code, rec.Header().Get("X-Custom"), rec.Header().Get("X-Cache"))
		}
	}
	if pageStored(t, c, target) {
		t.Errorf("a page was stored for a handler that wrote nothing")
	}
}

// TestPageMiddleware_PanicIsNotStoredNorServedToWaiters makes a handler
// write part of a page and panic while another request waits for it: the
// waiter renders for itself, and the panic reaches the first request.
func TestPageMiddleware_PanicIsNotStoredNorServedToWaiters(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	mw, s := newPageStack(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if n == 1 {
			fmt.Fprint(w, "partial")
			close(started)
			<-release
			panic("boom")
		}
		fmt.Fprintf(w, "itemX (render %d)", n)
	}), retailhttp.PageMiddlewareOptions{})
	const target = "http://shop.test/?item=itemX"
	var (
		wg        sync.WaitGroup
		recovered any
		waiter    response
	)
	wg.Go(func() {
		defer func() { recovered = recover() }()
		serve(mw, http.MethodGet, target)
	})
	<-started
	wg.Go(func() { waiter = serve(mw, http.MethodGet, target) })
	// The first request read the cache twice (its miss, and again before
	// rendering); the waiter's miss is the third read.
	eventually(t, "the second request to miss", func() bool { return s.pageReads.Load() >= 3 })
	close(release)
	wg.Wait()
	if recovered != "boom" {
		t.Errorf("the panicking request's recover() = %v, want %q", recovered, "boom")
	}
	if want := (response{200, "miss", "itemX (render 2)"}); waiter != want {
		t.Errorf("waiting request = %+v, want %+v", waiter, want)
	}
	// The waiter was told the render failed and served itself uncached.
	if got, want := serve(mw, http.MethodGet, target), (response{200, "miss", "itemX (render 3)"}); got != want {
		t.Errorf("GET after both = %+v, want %+v: nothing stored", got, want)
	}
}

func TestPageMiddleware_HijackedResponsesAreNotStored(t *testing.T) {
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	var calls atomic.Int64
	mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("Hijack = %v", err)
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nitemX")
		buf.Flush()
	}))
	srv := httptest.NewServer(mw)
	t.Cleanup(srv.Close)
	for i := range 2 {
		res, err := srv.Client().Get(srv.URL + "/?item=itemX")
		if err != nil {
			t.Fatalf("GET %d = %v", i+1, err)
		}
		body := new(strings.Builder)
		_, err = io.Copy(body, res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != 200 || body.String() != "itemX" {
			t.Errorf("GET %d = %d, %q, %v, want 200, itemX, nil", i+1, res.StatusCode, body, err)
		}
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("handler calls = %d, want 2: nothing cached", got)
	}
	if pageStored(t, c, srv.URL+"/?item=itemX") {
		t.Errorf("a page was stored for a hijacked response")
	}
}

func TestPageMiddleware_UnwrappedWritersAreNotStored(t *testing.T) {
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "item")
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			t.Errorf("the middleware's writer has no Unwrap method")
			return
		}
		fmt.Fprint(u.Unwrap(), "X")
	}))
	const target = "http://shop.test/?item=itemX"
	for i := range 2 {
		rec := request(mw, http.MethodGet, target)
		if rec.Code != 200 || rec.Body.String() != "itemX" || rec.Header().Get("X-Cache") != "miss" {
			t.Errorf("GET %d = %d, %q, X-Cache %q, want 200, itemX, miss", i+1, rec.Code, rec.Body, rec.Header().Get("X-Cache"))
		}
	}
	if pageStored(t, c, target) {
		t.Errorf("a page was stored for a response written around the middleware")
	}
}

// TestPageMiddleware_CountsRequestsInStatsAsXCacheSays sends requests of
// every outcome through the session and page middlewares and checks that
// the Store's Stats count them as their X-Cache headers say, and count the
// sessions the handler starts and ends.
func TestPageMiddleware_CountsRequestsInStatsAsXCacheSays(t *testing.T) {
	s, _ := newRankedStore(t) // itemX is ranked
	view(t, s, "itemY", 1)
	sessions := newManager(t, s, retailhttp.SessionOptions{})
	pages := newMiddleware(t, newPageCache(t, s, retail.PageCacheOptions{}), retailhttp.PageMiddlewareOptions{})
	mux := http.NewServeMux()
	mux.Handle("/", &pageHandler{body: "page"})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		if _, err := sessions.Login(r.Context(), w, "alice"); err != nil {
			t.Errorf("Login = %v", err)
		}
	})
	mux.HandleFunc("POST /logout", func(w http.ResponseWriter, r *http.Request) {
		if err := sessions.Logout(r.Context(), w); err != nil {
			t.Errorf("Logout = %v", err)
		}
	})
	h := sessions.Handler(pages.Handler(mux))

	var cookie *http.Cookie
	send := func(method, target string, withCookie bool) string {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(method, target, nil)
		if withCookie {
			r.AddCookie(cookie)
		}
		h.ServeHTTP(rec, r)
		if c := rec.Result().Cookies(); len(c) > 0 {
			cookie = c[0]
		}
		return rec.Header().Get("X-Cache")
	}
	var got []string
	for _, req := range []struct {
		method, target string
		withCookie     bool
	}{
		{"GET", "http://shop.test/?item=itemX", false},     // miss
		{"GET", "http://shop.test/?item=itemX", false},     // hit
		{"HEAD", "http://shop.test/?item=itemX", false},    // hit
		{"HEAD", "http://shop.test/?item=itemY", false},    // miss: HEAD stores nothing
		{"GET", "http://shop.test/?item=itemX&_=1", false}, // bypass: dynamic
		{"GET", "http://shop.test/about", false},           // bypass: not an item page
		{"POST", "http://shop.test/login", false},          // no X-Cache: starts a session
		{"GET", "http://shop.test/?item=itemX", true},      // bypass: personal
		{"POST", "http://shop.test/logout", true},          // no X-Cache: ends it
	} {
		got = append(got, send(req.method, req.target, req.withCookie))
	}
	var want retail.Stats
	for _, x := range got {
		switch x {
		case retailhttp.CacheHit:
			want.PageHits++
		case retailhttp.CacheMiss:
			want.PageMisses++
		case retailhttp.CacheBypass:
			want.PageBypasses++
		}
	}
	want.SessionsStarted, want.Logouts = 1, 1
	if diff := cmp.Diff([]string{"miss", "hit", "hit", "miss", "bypass", "bypass", "", "bypass", ""}, got); diff != "" {
		t.Fatalf("X-Cache headers mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, s.Stats()); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}
}

// pageKeyRecorder records the keys of the pages written to a Store.
type pageKeyRecorder struct {
	retail.Store
	mu   sync.Mutex
	keys map[string]int // key: writes
}

func (s *pageKeyRecorder) record(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = make(map[string]int)
	}
	s.keys[key]++
}

func (s *pageKeyRecorder) SetPage(ctx context.Context, key string, data []byte, ttl time.Duration) error {
	s.record(key)
	return s.Store.SetPage(ctx, key, data, ttl)
}

func (s *pageKeyRecorder) SetItemPage(ctx context.Context, item, key string, data []byte, ttl time.Duration) error {
	s.record(key)
	return s.Store.SetItemPage(ctx, item, key, data, ttl)
}

// pathSpellings returns distinct spellings of /item that a router may
// take for it: each letter as it is or percent-encoded in upper- or
// lower-case hex, behind dot segments and doubled slashes, with and
// without a trailing slash. The first is the canonical one.
func pathSpellings() []string {
	var names []string
	var spell func(prefix, rest string)
	spell = func(prefix, rest string) {
		if rest == "" {
			names = append(names, prefix)
			return
		}
		c := rest[0]
		spell(prefix+string(c), rest[1:])
		spell(prefix+fmt.Sprintf("%%%02X", c), rest[1:])
		spell(prefix+fmt.Sprintf("%%%02x", c), rest[1:])
	}
	spell("", "item") // "item" first
	seen := make(map[string]bool)
	var paths []string
	for _, before := range []string{"/", "//", "///", "/./", "/%2e/", "/%2E/", "/x/../", "/x/%2e%2e/", "/x/%2E%2E/", "/x/.%2e/", "/./x/../"} {
		for _, name := range names {
			for _, after := range []string{"", "/", "/.", "//", "/./", "/%2e"} {
				if p := before + name + after; !seen[p] {
					seen[p] = true
					paths = append(paths, p)
				}
			}
		}
	}
	return paths
}

// TestPageMiddleware_SpellingsOfAPathAddOneEntry is the attack of many
// spellings of one page's URL, which a router serves as one page: they
// must not fill the cache. Each is served 200, by the handler or the
// cache, and the store holds one page afterwards.
func TestPageMiddleware_SpellingsOfAPathAddOneEntry(t *testing.T) {
	ms, _ := newRankedStore(t) // itemX is ranked
	s := &pageKeyRecorder{Store: ms}
	h := &pageHandler{body: "itemX"} // answers every path, as a router that neither cleans nor decodes could
	mw := newMiddleware(t, newPageCache(t, s, retail.PageCacheOptions{}), retailhttp.PageMiddlewareOptions{}).Handler(h)

	paths := pathSpellings()
	if len(paths) < 1000 || paths[0] != "/item" {
		t.Fatalf("pathSpellings gave %d distinct paths starting with %q, want at least 1000 starting with /item", len(paths), paths[0])
	}
	xcache := make(map[string]int)
	for _, p := range paths {
		target := "http://shop.test" + p + "?item=itemX"
		rec := request(mw, http.MethodGet, target)
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), "itemX (render ") {
			t.Fatalf("GET %s = %d %q, want 200 and the page", target, rec.Code, rec.Body)
		}
		xcache[rec.Header().Get("X-Cache")]++
	}
	// Once more, canonically: served from the one entry.
	if got := serve(mw, http.MethodGet, "http://shop.test/item?item=itemX"); got != (response{200, "hit", "itemX (render 1)"}) {
		t.Errorf("GET /item?item=itemX after the spellings = %+v, want 200, hit, render 1", got)
	}

	s.mu.Lock()
	keys := s.keys
	s.mu.Unlock()
	t.Logf("%d spellings of /item stored %d page keys; X-Cache: %v", len(paths), len(keys), xcache)
	if want := map[string]int{"GET /item?item=itemX": 1}; !cmp.Equal(want, keys) {
		t.Errorf("page keys written (key: writes) = %v, want %v", keys, want)
	}
	if want := map[string]int{"miss": 1, "bypass": len(paths) - 1}; !cmp.Equal(want, xcache) {
		t.Errorf("X-Cache of the spellings = %v, want %v", xcache, want)
	}
	if st := ms.Stats(); st.PageBypasses != uint64(len(paths)-1) {
		t.Errorf("Stats().PageBypasses = %d, want %d", st.PageBypasses, len(paths)-1)
	}
}

// the trailer's value included, which the handler sets after the body.
func TestPageMiddleware_PassesTrailersThrough(t *testing.T) {
	for _, tc := range []struct {
		name    string
		declare func(w http.ResponseWriter) // before the body
		set     func(w http.ResponseWriter) // after it
	}{
		{"Declared", func(w http.ResponseWriter) { w.Header().Set("Trailer", "X-Sum") },
			func(w http.ResponseWriter) { w.Header().Set("X-Sum", "42") }},
		{"Prefixed", func(w http.ResponseWriter) {},
			func(w http.ResponseWriter) { w.Header().Set(http.TrailerPrefix+"X-Sum", "42") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newRankedStore(t)
			c := newPageCache(t, s, retail.PageCacheOptions{})
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tc.declare(w)
				w.Write([]byte("itemX"))
				tc.set(w)
			})
			mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(h)
			const target = "http://shop.test/?item=itemX"
			for i := range 2 {
				rec := httptest.NewRecorder()
				mw.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
				res := rec.Result()
				if got := res.Trailer.Get("X-Sum"); got != "42" || rec.Body.String() != "itemX" {
					t.Errorf("GET %d: body %q, trailer X-Sum %q (X-Cache %s); want itemX and 42", i+1, rec.Body, got, res.Header.Get("X-Cache"))
				}
			}
			if pageStored(t, c, target) {
				t.Errorf("a response with a trailer was cached")
			}
		})
	}
}

// TestPageMiddleware_CachedPageThatClearsACookieIsPrivate: a cached page
// served to a visitor whose dead session cookie the session manager
// clears carries that Set-Cookie, so it must be private even with
// PublicMaxAge set, for GET, HEAD and a conditional GET answered 304:
// otherwise a shared cache would keep the clearing and hand it on, with
// the page, to every visitor it served the page to, logging them out.
func TestPageMiddleware_CachedPageThatClearsACookieIsPrivate(t *testing.T) {
	s, clock := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{TTL: 300 * time.Second, Clock: clock})
	sm := newManager(t, s, retailhttp.SessionOptions{Clock: clock})
	pm := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{PublicMaxAge: time.Minute})
	h := sm.Handler(pm.Handler(&pageHandler{body: "itemX"}))
	const target = "http://shop.test/?item=itemX"
	request(h, http.MethodGet, target) // fills the entry
	dead := "retail_session=" + "0123456789abcdef0123456789abcdef"
	etag := request(h, http.MethodGet, target).Result().Header.Get("Etag")
	if etag == "" {
		t.Fatal("the cached page has no ETag")
	}
	for _, tc := range []struct {
		name, method string
		headers      []string
		status       int
	}{
		{"GET", http.MethodGet, nil, http.StatusOK},
		{"HEAD", http.MethodHead, nil, http.StatusOK},
		{"conditional GET", http.MethodGet, []string{"If-None-Match: " + etag}, http.StatusNotModified},
	} {
		rec := request(h, tc.method, target, append([]string{"Cookie: " + dead}, tc.headers...)...)
		res := rec.Result()
		if !isCleared(res) {
			t.Fatalf("%s with a dead session cookie does not clear it; Set-Cookie %q", tc.name, res.Header["Set-Cookie"])
		}
		cc := res.Header.Get("Cache-Control")
		if res.StatusCode != tc.status || res.Header.Get("X-Cache") != "hit" || !strings.Contains(cc, "private") || strings.Contains(cc, "public") {
			t.Errorf("%s with a dead session cookie: %d, X-Cache %s, Cache-Control %q with Set-Cookie %q; want %d, a hit, private",
				tc.name, res.StatusCode, res.Header.Get("X-Cache"), cc, res.Header["Set-Cookie"], tc.status)
		}
	}
}

// Tracking parameters are left out of the page key, so a page rendered
// for a URL with them is served to every visitor of the URL without them:
// it is rendered without them, or an attacker's utm_source, which the
// handler may show (a canonical or a share link), would be served to
// everyone. Campaign traffic still fills the cache and is served from it.
func TestPageMiddleware_RendersWithoutTrackingParameters(t *testing.T) {
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("itemX, shared from " + r.URL.Query().Get("utm_source") + r.FormValue("utm_source") + r.RequestURI))
	})
	mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(h)
	first := request(mw, http.MethodGet, "http://shop.test/?item=itemX&utm_source=EVIL")
	if got := first.Header().Get("X-Cache"); got != retailhttp.CacheMiss || strings.Contains(first.Body.String(), "EVIL") {
		t.Errorf("GET /?item=itemX&utm_source=EVIL = %q, X-Cache %s; want a miss rendered without the tracking parameter", first.Body, got)
	}
	if !pageStored(t, c, "http://shop.test/?item=itemX") {
		t.Fatalf("the page rendered for a URL with a tracking parameter was not stored")
	}
	for _, target := range []string{"http://shop.test/?item=itemX", "http://shop.test/?utm_source=other&item=itemX"} {
		rec := request(mw, http.MethodGet, target)
		if got := rec.Header().Get("X-Cache"); got != retailhttp.CacheHit || rec.Body.String() != first.Body.String() {
			t.Errorf("GET %s = %q, X-Cache %s; want the stored page %q, a hit", target, rec.Body, got, first.Body)
		}
	}
}

// The page rendered for a query spelled otherwise than its key (escapes,
// order, empty pairs) is served to every request of the key: it is rendered
// with the key's spelling, or a visitor's, which the handler may echo (a
// login link back to the page), would be served to everyone.
func TestPageMiddleware_RendersWithTheKeysQuery(t *testing.T) {
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{Params: []string{"color"}})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("itemX, back to " + r.RequestURI + " " + r.URL.RawQuery))
	})
	mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(h)
	junk := "http://shop.test/p?color=red&&&&&&&&&&&&&&&&&&&&%69tem=item%58&&&&&&&&&&&&&&&&&&&&"
	first := request(mw, http.MethodGet, junk)
	want := "itemX, back to /p?color=red&item=itemX color=red&item=itemX"
	if got := first.Header().Get("X-Cache"); got != retailhttp.CacheMiss || first.Body.String() != want {
		t.Errorf("GET %s = %q, X-Cache %s; want %q, a miss", junk, first.Body, got, want)
	}
	rec := request(mw, http.MethodGet, "http://shop.test/p?item=itemX&color=red")
	if got := rec.Header().Get("X-Cache"); got != retailhttp.CacheHit || rec.Body.String() != want {
		t.Errorf("GET /p?item=itemX&color=red = %q, X-Cache %s; want %q, a hit", rec.Body, got, want)
	}
}

// the response.
func TestPageMiddleware_UnwrapBeforeTheHeaderKeepsTheHeaderSetSoFar(t *testing.T) {
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "private")
		w.Header().Set("Set-Cookie", "retail_session=abc")
		u := w.(interface{ Unwrap() http.ResponseWriter }).Unwrap()
		u.Write([]byte("itemX for you"))
	}))
	rec := request(mw, http.MethodGet, "http://shop.test/?item=itemX")
	h := rec.Result().Header
	if h.Get("Cache-Control") != "private" || h.Get("Set-Cookie") != "retail_session=abc" {
		t.Errorf("response written to the unwrapped writer: Cache-Control %q, Set-Cookie %q; want private and the handler's cookie", h.Get("Cache-Control"), h.Get("Set-Cookie"))
	}
}

// as the canonical spelling does, and it must not be cached either.
func TestPageMiddleware_HeaderKeysInAnyCaseMakeAResponsePersonal(t *testing.T) {
	for _, k := range []string{"set-cookie", "SET-COOKIE", "cache-control", "vary", "trailer"} {
		t.Run(k, func(t *testing.T) {
			s, _ := newRankedStore(t)
			c := newPageCache(t, s, retail.PageCacheOptions{})
			v := map[string]string{"set-cookie": "retail_session=0123456789abcdef0123456789abcdef", "SET-COOKIE": "retail_session=0123456789abcdef0123456789abcdef",
				"cache-control": "private", "vary": "Cookie", "trailer": "X-Sum"}[k]
			mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header()[k] = []string{v}
				w.Write([]byte("itemX for alice"))
			}))
			const target = "http://shop.test/?item=itemX"
			request(mw, http.MethodGet, target)
			if pageStored(t, c, target) {
				rec := request(mw, http.MethodGet, target)
				t.Errorf("a response with header %s: %s was cached; the next visitor got %q with header %q", k, v, rec.Body, rec.Header())
			}
		})
	}
}

// A page that could not be stored is served as the handler rendered it;
// if its response also clears a dead session cookie, the handler's public
// Cache-Control becomes private, as a stored page's does.
func TestPageMiddleware_UnstoredPageThatClearsACookieIsPrivate(t *testing.T) {
	s, clock := newRankedStore(t)
	fs := &failingStore{Store: s, fail: map[string]bool{"SetItemPage": true}}
	c := newPageCache(t, fs, retail.PageCacheOptions{Clock: clock})
	sm := newManager(t, s, retailhttp.SessionOptions{Clock: clock})
	pm := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{})
	ph := &pageHandler{body: "itemX", header: http.Header{"Cache-Control": {"public, max-age=3600"}}}
	dead := "retail_session=" + "0123456789abcdef0123456789abcdef"
	res := request(sm.Handler(pm.Handler(ph)), http.MethodGet, "http://shop.test/?item=itemX", "Cookie: "+dead).Result()
	if !isCleared(res) {
		t.Fatalf("GET with a dead session cookie does not clear it; Set-Cookie %q", res.Header["Set-Cookie"])
	}
	if cc := res.Header.Get("Cache-Control"); cc != "private, max-age=3600" {
		t.Errorf("unstored page with a cleared cookie: X-Cache %s, Cache-Control %q, want private, max-age=3600", res.Header.Get("X-Cache"), cc)
	}
}

// A handler may set header keys in the map as it likes; net/http sends them
// as spelled. The page is stored with keys in their canonical form, so that
// the middleware's own headers replace the handler's on every serve
// instead of going out beside them.
func TestPageMiddleware_HeaderKeysAreStoredCanonical(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["cache-control"] = []string{"public, max-age=31536000"}
		w.Header()["x-cache"] = []string{"forged"}
		w.Header()["content-length"] = []string{"999"}
		w.Header()["x-custom"] = []string{"kept"}
		io.WriteString(w, "itemX")
	})
	mw, _ := newPageStack(t, h, retailhttp.PageMiddlewareOptions{})
	for _, want := range []string{"miss", "hit"} {
		rec := httptest.NewRecorder()
		mw.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://shop.test/?item=itemX", nil))
		got := rec.Result().Header
		for k := range got {
			if k != http.CanonicalHeaderKey(k) {
				t.Errorf("%s: header key %q sent as the handler spelled it: %v", want, k, got)
			}
		}
		if got.Get("X-Cache") != want || got.Get("Cache-Control") != "no-cache" || got.Get("Content-Length") != "5" || got.Get("X-Custom") != "kept" {
			t.Errorf("%s: X-Cache %q, Cache-Control %q, Content-Length %q, X-Custom %q; want %s, no-cache, 5, kept",
				want, got.Get("X-Cache"), got.Get("Cache-Control"), got.Get("Content-Length"), got.Get("X-Custom"), want)
		}
	}
}

// net/http sniffs no Content-Type for a body with a Content-Encoding (its
// bytes are not the content's), and neither does the page cache.
func TestPageMiddleware_EncodedBodyGetsNoSniffedContentType(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		io.WriteString(gz, "<!doctype html><p>itemX</p>")
		gz.Close()
	})
	plain := httptest.NewRecorder()
	h.ServeHTTP(plain, httptest.NewRequest(http.MethodGet, "http://shop.test/?item=itemX", nil))
	mw, _ := newPageStack(t, h, retailhttp.PageMiddlewareOptions{})
	for _, want := range []string{"miss", "hit"} {
		srv := httptest.NewServer(mw)
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/?item=itemX", nil)
		req.Header.Set("Accept-Encoding", "gzip") // so that the transport leaves the body as it is
		resp, err := http.DefaultTransport.RoundTrip(req)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Cache"); got != want {
			t.Errorf("X-Cache = %q, want %q", got, want)
		}
		if ct := resp.Header.Values("Content-Type"); len(ct) != 0 {
			t.Errorf("%s: Content-Type %q, want none as net/http gives none", want, ct)
		}
	}
}

// The rewritten request keeps the request-target's path as it came: a
// middleware outside (http.StripPrefix, a sub-shop under /shop) changes
// r.URL's path but not RequestURI, and a page that echoes RequestURI must
// keep the prefix.
func TestPageMiddleware_RendersWithTheKeysQueryUnderAPrefix(t *testing.T) {
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{Params: []string{"color"}})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("back to " + r.RequestURI))
	})
	mux := http.StripPrefix("/shop", newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(h))
	for target, want := range map[string]string{
		"/shop/p?item=itemX&color=red":        "back to /shop/p?color=red&item=itemX",
		"/shop/p?item=itemX&color=dark%20red": "back to /shop/p?color=dark+red&item=itemX",
		"/shop/q?item=item%58":                "back to /shop/q?item=itemX",
	} {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.Host = "shop.test"
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if got := rec.Body.String(); got != want {
			t.Errorf("GET %s = %q (X-Cache %s), want %q", target, got, rec.Header().Get("X-Cache"), want)
		}
	}
}

// A hit's Age is the seconds since the page was stored, whatever Age the
// handler set (an Age describes one response, not the page).
func TestPageMiddleware_AgeIsTheCaches(t *testing.T) {
	s, clock := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{Clock: clock})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["age"] = []string{"0"}
		w.Write([]byte("itemX"))
	})
	mw := newMiddleware(t, c, retailhttp.PageMiddlewareOptions{}).Handler(h)
	request(mw, http.MethodGet, "http://shop.test/?item=itemX")
	clock.Advance(90 * time.Second)
	rec := request(mw, http.MethodGet, "http://shop.test/?item=itemX")
	if got := rec.Result().Header.Values("Age"); rec.Header().Get("X-Cache") != retailhttp.CacheHit || len(got) != 1 || got[0] != "90" {
		t.Errorf("hit 90 s after the store: X-Cache %s, Age %q; want a hit, 90", rec.Header().Get("X-Cache"), got)
	}
}

// An empty page gets no sniffed Content-Type, as with net/http.
func TestPageMiddleware_EmptyPageGetsNoSniffedContentType(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mw, _ := newPageStack(t, h, retailhttp.PageMiddlewareOptions{})
	for _, want := range []string{retailhttp.CacheMiss, retailhttp.CacheHit} {
		rec := request(mw, http.MethodGet, "http://shop.test/?item=itemX")
		if got := rec.Result().Header.Values("Content-Type"); rec.Header().Get("X-Cache") != want || len(got) != 0 {
			t.Errorf("X-Cache %s, Content-Type %q; want %s and none", rec.Header().Get("X-Cache"), got, want)
		}
	}
}
