package retail_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
)

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("url.Parse(%q) = %v", raw, err)
	}
	return u
}

// renderer is a render callback that counts its calls.
type renderer struct {
	calls atomic.Int64
	body  string
	err   error
}

func (r *renderer) render(context.Context) ([]byte, error) {
	r.calls.Add(1)
	if r.err != nil {
		return nil, r.err
	}
	return []byte(r.body), nil
}

// served is what a CacheRequest call returned, for diffs.
type served struct {
	Body string
	Hit  bool
}

func view(t *testing.T, s retail.Sessions, item string, times int) {
	t.Helper()
	for i := range times {
		token := fmt.Sprintf("viewer-%s-%d", item, i)
		if err := s.UpdateToken(context.Background(), token, "user", item); err != nil {
			t.Fatalf("UpdateToken(%q, %q) = %v", token, item, err)
		}
	}
}

// newRankedStore returns a fresh store and its clock, with one view of
// itemX, so that itemX is ranked and the book's rule caches its page.
func newRankedStore(t *testing.T) (retail.Store, *retail.ManualClock) {
	t.Helper()
	s, clock := newStore(t)
	view(t, s, "itemX", 1)
	return s, clock
}

// newPageCache returns a PageCache over s, failing the test if the options
// are refused.
func newPageCache(t *testing.T, s retail.Store, opts retail.PageCacheOptions) *retail.PageCache {
	t.Helper()
	c, err := retail.NewPageCache(s, opts)
	if err != nil {
		t.Fatalf("NewPageCache(%+v) = %v", opts, err)
	}
	return c
}

// defaultKey is the key of u under a PageCache's default options (no
// Hosts): "GET ", the escaped path ("/" if empty) and, if any, "?" and the
// query with its names sorted (as sent if it does not parse). It is meant
// for URLs without tracking parameters, which Key would drop, and gives a
// key to URLs that Key refuses, so that tests can look for what must not
// be there.
func defaultKey(u *url.URL) string {
	key := "GET " + u.EscapedPath()
	if u.EscapedPath() == "" {
		key += "/"
	}
	query := u.RawQuery
	if q, err := url.ParseQuery(query); err == nil {
		query = q.Encode()
	}
	if query != "" {
		key += "?" + query
	}
	return key
}

// hasPage reports whether s caches a page for u under a PageCache's
// default options.
func hasPage(t *testing.T, s retail.Pages, u *url.URL) bool {
	t.Helper()
	key := defaultKey(u)
	_, ok, err := s.Page(context.Background(), key)
	if err != nil {
		t.Fatalf("Page(%q) = %v", key, err)
	}
	return ok
}

// The book's test_cache_request, through the package-level functions that
// mirror the book's.
func TestPageCache_BookScenario(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	if err := s.UpdateToken(ctx, "token", "username", "itemX"); err != nil {
		t.Fatalf("UpdateToken = %v", err)
	}
	raw := "http://test.com/?item=itemX"
	u := mustParse(t, raw)
	r := &renderer{body: "content for " + raw}

	for i, want := range []served{{r.body, false}, {r.body, true}} {
		body, hit, err := retail.CacheRequest(ctx, s, u, r.render)
		if err != nil {
			t.Fatalf("call %d: CacheRequest(%q) = %v", i+1, raw, err)
		}
		if diff := cmp.Diff(want, served{string(body), hit}); diff != "" {
			t.Errorf("call %d: CacheRequest(%q) mismatch (-want +got):\n%s", i+1, raw, diff)
		}
	}
	if got := r.calls.Load(); got != 1 {
		t.Errorf("render calls = %d, want 1", got)
	}

	for _, raw := range []string{"http://test.com/", "http://test.com/?item=itemX&_=1234536"} {
		ok, err := retail.CanCache(ctx, s, mustParse(t, raw))
		if err != nil || ok {
			t.Errorf("CanCache(%q) = %v, %v, want false, nil", raw, ok, err)
		}
	}
}

func TestPageCache_NeverStoresUncacheablePages(t *testing.T) {
	s, _ := newRankedStore(t)
	view(t, s, "itemY", 1)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	for _, tc := range []struct{ name, url string }{
		{"NoItem", "http://test.com/"},
		{"EmptyItem", "http://test.com/?item="},
		{"Dynamic", "http://test.com/?item=itemX&_=1234536"},
		{"DynamicWithoutValue", "http://test.com/?_&item=itemX"},
		{"NeverViewedItem", "http://test.com/?item=itemZ"},
		{"TwoItems", "http://test.com/?item=itemX&item=itemY"},
		{"ItemTooLong", "http://test.com/?item=" + strings.Repeat("x", retail.MaxIDLen+1)},
		{"ItemWithControlCharacter", "http://test.com/?item=item%01"},
		{"QueryDoesNotParse", "http://test.com/?item=itemX&q=%zz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			u := mustParse(t, tc.url)
			if ok, err := c.CanCache(ctx, u); ok || err != nil {
				t.Errorf("CanCache(%q) = %v, %v, want false, nil", tc.url, ok, err)
			}
			r := &renderer{body: "page"}
			for i := range 2 {
				body, hit, err := c.CacheRequest(ctx, u, r.render)
				if err != nil || hit || string(body) != r.body {
					t.Errorf("call %d: CacheRequest(%q) = %q, %v, %v, want %q, false, nil", i+1, tc.url, body, hit, err, r.body)
				}
			}
			if got := r.calls.Load(); got != 2 {
				t.Errorf("render calls = %d, want 2", got)
			}
			if hasPage(t, s, u) {
				t.Errorf("Page(%q) found a page, want none", defaultKey(u))
			}
		})
	}
}

func TestPageCache_RendersPagesWithOverlongKeys(t *testing.T) {
	ctx := context.Background()
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	raw := "http://test.com/" + strings.Repeat("p", retail.MaxPageKeyLen) + "?item=itemX"
	u := mustParse(t, raw)
	if ok, err := c.CanCache(ctx, u); ok || err != nil {
		t.Fatalf("CanCache(long URL) = %v, %v, want false, nil: the key would be too long", ok, err)
	}
	r := &renderer{body: "page"}
	for i := range 2 {
		body, hit, err := c.CacheRequest(ctx, u, r.render)
		if err != nil || hit || string(body) != r.body {
			t.Errorf("call %d: CacheRequest(long URL) = %q, %v, %v, want %q, false, nil", i+1, body, hit, err, r.body)
		}
	}
	if got := r.calls.Load(); got != 2 {
		t.Errorf("render calls = %d, want 2", got)
	}
}

func TestPageCache_CachesOnlyItemsRankedBelowMaxRank(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	view(t, s, "a", 3) // rank 0
	view(t, s, "b", 2) // rank 1
	view(t, s, "c", 1) // rank 2
	c := newPageCache(t, s, retail.PageCacheOptions{MaxRank: 2})
	for item, want := range map[string]bool{"a": true, "b": true, "c": false} {
		u := mustParse(t, "http://test.com/?item="+item)
		if ok, err := c.CanCache(ctx, u); ok != want || err != nil {
			t.Errorf("CanCache(item=%s) = %v, %v, want %v, nil", item, ok, err, want)
		}
		r := &renderer{body: "page " + item}
		for range 2 {
			if _, _, err := c.CacheRequest(ctx, u, r.render); err != nil {
				t.Fatalf("CacheRequest(item=%s) = %v", item, err)
			}
		}
		wantCalls := int64(2)
		if want {
			wantCalls = 1
		}
		if got := r.calls.Load(); got != wantCalls {
			t.Errorf("item=%s: render calls = %d, want %d", item, got, wantCalls)
		}
		if got := hasPage(t, s, u); got != want {
			t.Errorf("item=%s: page cached = %v, want %v", item, got, want)
		}
	}
}

func TestCanCache_BookRankLimit(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	// One view each: ranks follow the names, item00000 being rank 0.
	for i := range retail.DefaultMaxCacheRank + 1 {
		item := fmt.Sprintf("item%05d", i)
		if err := s.UpdateToken(ctx, "token", "user", item); err != nil {
			t.Fatalf("UpdateToken(%q) = %v", item, err)
		}
	}
	for item, want := range map[string]bool{"item09999": true, "item10000": false} {
		ok, err := retail.CanCache(ctx, s, mustParse(t, "http://test.com/?item="+item))
		if ok != want || err != nil {
			t.Errorf("CanCache(item=%s) = %v, %v, want %v, nil", item, ok, err, want)
		}
	}
}

func TestPageCache_DoesNotCacheRenderErrors(t *testing.T) {
	ctx := context.Background()
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	u := mustParse(t, "http://test.com/?item=itemX")
	errRender := errors.New("render failed")

	failing := &renderer{err: errRender}
	body, hit, err := c.CacheRequest(ctx, u, failing.render)
	if !errors.Is(err, errRender) || body != nil || hit {
		t.Errorf("CacheRequest(failing render) = %q, %v, %v, want nil, false, %v", body, hit, err, errRender)
	}
	if hasPage(t, s, u) {
		t.Errorf("a failed render was cached")
	}

	working := &renderer{body: "page"}
	body, hit, err = c.CacheRequest(ctx, u, working.render)
	if err != nil || hit || string(body) != "page" {
		t.Errorf("CacheRequest after a failed render = %q, %v, %v, want %q, false, nil", body, hit, err, "page")
	}
}

func TestPageCache_DoesNotCacheOversizedBodies(t *testing.T) {
	ctx := context.Background()
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	u := mustParse(t, "http://test.com/?item=itemX")
	r := &renderer{body: strings.Repeat("x", retail.MaxPageSize+1)}
	for i := range 2 {
		body, hit, err := c.CacheRequest(ctx, u, r.render)
		if err != nil || hit || len(body) != len(r.body) {
			t.Errorf("call %d: CacheRequest(oversized) = %d bytes, %v, %v, want %d bytes, false, nil", i+1, len(body), hit, err, len(r.body))
		}
	}
	if got := r.calls.Load(); got != 2 {
		t.Errorf("render calls = %d, want 2", got)
	}
	if hasPage(t, s, u) {
		t.Errorf("an oversized body was cached")
	}
}

func TestPageCache_ExpiresAfterTTL(t *testing.T) {
	ctx := context.Background()
	s, clock := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{TTL: 10 * time.Second})
	u := mustParse(t, "http://test.com/?item=itemX")
	r := &renderer{body: "page"}
	for _, step := range []struct {
		advance time.Duration
		want    served
		calls   int64
	}{
		{0, served{"page", false}, 1},
		{9 * time.Second, served{"page", true}, 1},
		{2 * time.Second, served{"page", false}, 2}, // 11 s after caching
		{0, served{"page", true}, 2},
	} {
		clock.Advance(step.advance)
		body, hit, err := c.CacheRequest(ctx, u, r.render)
		if err != nil {
			t.Fatalf("at %v: CacheRequest = %v", clock.Now().Sub(epoch), err)
		}
		if diff := cmp.Diff(step.want, served{string(body), hit}); diff != "" {
			t.Errorf("at %v: CacheRequest mismatch (-want +got):\n%s", clock.Now().Sub(epoch), diff)
		}
		if got := r.calls.Load(); got != step.calls {
			t.Errorf("at %v: render calls = %d, want %d", clock.Now().Sub(epoch), got, step.calls)
		}
	}
}

func TestCacheRequest_UsesBookTTL(t *testing.T) {
	ctx := context.Background()
	s, clock := newRankedStore(t)
	u := mustParse(t, "http://test.com/?item=itemX")
	r := &renderer{body: "page"}
	for _, step := range []struct {
		advance time.Duration
		calls   int64
	}{
		{0, 1},
		{retail.DefaultPageTTL - time.Second, 1},
		{2 * time.Second, 2},
	} {
		clock.Advance(step.advance)
		if _, _, err := retail.CacheRequest(ctx, s, u, r.render); err != nil {
			t.Fatalf("CacheRequest = %v", err)
		}
		if got := r.calls.Load(); got != step.calls {
			t.Errorf("at %v: render calls = %d, want %d", clock.Now().Sub(epoch), got, step.calls)
		}
	}
}

// failingSetPage is a Store whose page writes fail.
type failingSetPage struct {
	retail.Store
	err error
}

func (s failingSetPage) SetPage(context.Context, string, []byte, time.Duration) error { return s.err }
func (s failingSetPage) SetItemPage(context.Context, string, string, []byte, time.Duration) error {
	return s.err
}

func TestPageCache_ReturnsBodyWhenCachingFails(t *testing.T) {
	ctx := context.Background()
	ms, _ := newRankedStore(t)
	errWrite := errors.New("write failed")
	c := newPageCache(t, failingSetPage{ms, errWrite}, retail.PageCacheOptions{})
	u := mustParse(t, "http://test.com/?item=itemX")
	r := &renderer{body: "page"}
	body, hit, err := c.CacheRequest(ctx, u, r.render)
	if !errors.Is(err, errWrite) || hit || string(body) != "page" {
		t.Errorf("CacheRequest = %q, %v, %v, want %q, false, %v", body, hit, err, "page", errWrite)
	}
	want := &retail.CachedPage{Status: 200, Header: map[string][]string{"Content-Type": {"text/html"}}, Body: []byte("page")}
	pr := &pageRenderer{page: want}
	p, hit, err := c.Fetch(ctx, u, pr.render)
	if !errors.Is(err, errWrite) || hit {
		t.Errorf("Fetch = _, %v, %v, want the page, false, %v", hit, err, errWrite)
	}
	if diff := cmp.Diff(want, p, equatePages); diff != "" {
		t.Errorf("Fetch page mismatch (-want +got):\n%s", diff)
	}
}

// TestPageCache_StoreErrorsAreNotWrapped closes the store under a
// PageCache: every method returns the Store's own error, which names the
// Store call that failed, and renders nothing.
func TestPageCache_StoreErrorsAreNotWrapped(t *testing.T) {
	ctx := context.Background()
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	u := mustParse(t, "http://test.com/?item=itemX")
	s.Close()

	ok, err := c.CanCache(ctx, u)
	wantClosedError(t, "CanCache after Close", err, "TopItems") // the first read of the ranks
	if ok {
		t.Errorf("CanCache after Close = true, want false")
	}
	r := &renderer{body: "page"}
	body, hit, err := c.CacheRequest(ctx, u, r.render)
	wantClosedError(t, "CacheRequest after Close", err, "TopItems")
	if body != nil || hit {
		t.Errorf("CacheRequest after Close = %q, %v, want nil, false", body, hit)
	}
	p, ok, err := c.Lookup(ctx, u)
	wantClosedError(t, "Lookup after Close", err, "Page")
	if p != nil || ok {
		t.Errorf("Lookup after Close = %+v, %v, want nil, false", p, ok)
	}
	pr := &pageRenderer{page: &retail.CachedPage{Status: 200, Body: []byte("page")}}
	p, hit, err = c.Fetch(ctx, u, pr.render)
	wantClosedError(t, "Fetch after Close", err, "Page")
	if p != nil || hit {
		t.Errorf("Fetch after Close = %+v, %v, want nil, false", p, hit)
	}
	if got := r.calls.Load() + pr.calls.Load(); got != 0 {
		t.Errorf("render calls = %d, want 0", got)
	}
}

func TestPageCache_CacheableReplacesBookRule(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	errDecide := errors.New("cannot decide")
	c := newPageCache(t, s, retail.PageCacheOptions{
		Cacheable: func(_ context.Context, u *url.URL) (bool, error) {
			if u.Path == "/error" {
				return false, errDecide
			}
			return u.Path == "/about", nil
		},
	})
	about := mustParse(t, "http://test.com/about")
	r := &renderer{body: "about us"}
	for i, want := range []served{{r.body, false}, {r.body, true}} {
		body, hit, err := c.CacheRequest(ctx, about, r.render)
		if err != nil {
			t.Fatalf("call %d: CacheRequest(/about) = %v", i+1, err)
		}
		if diff := cmp.Diff(want, served{string(body), hit}); diff != "" {
			t.Errorf("call %d: CacheRequest(/about) mismatch (-want +got):\n%s", i+1, diff)
		}
	}
	if _, _, err := c.CacheRequest(ctx, mustParse(t, "http://test.com/error"), r.render); !errors.Is(err, errDecide) {
		t.Errorf("CacheRequest(/error) = %v, want %v", err, errDecide)
	}
}

func TestNewPageCache_RejectsInvalidOptions(t *testing.T) {
	s, _ := newRankedStore(t)
	for _, tc := range []struct {
		opts retail.PageCacheOptions
		arg  string
	}{
		{retail.PageCacheOptions{TTL: -time.Second}, "TTL"},
		{retail.PageCacheOptions{TTL: time.Nanosecond}, "TTL"},
		{retail.PageCacheOptions{TTL: retail.MinDuration - 1}, "TTL"},
		{retail.PageCacheOptions{TTL: retail.MaxPageTTL + retail.MinDuration}, "TTL"},
		{retail.PageCacheOptions{MaxRank: -1}, "MaxRank"},
	} {
		c, err := retail.NewPageCache(s, tc.opts)
		wantInputError(t, fmt.Sprintf("NewPageCache(%+v)", tc.opts), err, "NewPageCache", tc.arg)
		if c != nil {
			t.Errorf("NewPageCache(%+v) returned a cache with its error", tc.opts)
		}
	}
}

func TestNewPageCache_RejectsNilStore(t *testing.T) {
	c, err := retail.NewPageCache(nil, retail.PageCacheOptions{})
	wantInputError(t, "NewPageCache(nil, ...)", err, "NewPageCache", "store")
	if c != nil {
		t.Errorf("NewPageCache(nil, ...) returned a cache with its error")
	}
}

func TestNewPageCache_TTL(t *testing.T) {
	s, _ := newStore(t)
	for _, tc := range []struct{ ttl, want time.Duration }{
		{0, retail.DefaultPageTTL},
		{retail.MinDuration, retail.MinDuration},
		{time.Minute, time.Minute},
		{retail.MaxPageTTL, retail.MaxPageTTL},
	} {
		if got := newPageCache(t, s, retail.PageCacheOptions{TTL: tc.ttl}).TTL(); got != tc.want {
			t.Errorf("NewPageCache(TTL: %v).TTL() = %v, want %v", tc.ttl, got, tc.want)
		}
	}
}

// pageWriteCounter counts the pages written to a Store.
type pageWriteCounter struct {
	retail.Store
	writes atomic.Int64
}

func (s *pageWriteCounter) SetPage(ctx context.Context, key string, data []byte, ttl time.Duration) error {
	s.writes.Add(1)
	return s.Store.SetPage(ctx, key, data, ttl)
}

func (s *pageWriteCounter) SetItemPage(ctx context.Context, item, key string, data []byte, ttl time.Duration) error {
	s.writes.Add(1)
	return s.Store.SetItemPage(ctx, item, key, data, ttl)
}

func TestPageCache_TrackingParametersShareAnEntry(t *testing.T) {
	ctx := context.Background()
	ms, _ := newRankedStore(t)
	s := &pageWriteCounter{Store: ms}
	c := newPageCache(t, s, retail.PageCacheOptions{})
	r := &renderer{body: "itemX"}
	for i, raw := range []string{
		"http://test.com/?item=itemX&utm_source=a",
		"http://test.com/?utm_source=b&item=itemX&utm_medium=mail",
		"http://test.com/?item=itemX&gclid=x",
		"http://test.com/?item=itemX",
	} {
		body, hit, err := c.CacheRequest(ctx, mustParse(t, raw), r.render)
		if want := (served{"itemX", i > 0}); err != nil || (served{string(body), hit}) != want {
			t.Errorf("CacheRequest(%s) = %q, %v, %v, want %q, %v, nil", raw, body, hit, err, want.Body, want.Hit)
		}
	}
	if got := s.writes.Load(); got != 1 {
		t.Errorf("SetPage calls = %d, want 1", got)
	}
}

func TestPageCache_UnknownParametersAreNotCached(t *testing.T) {
	ctx := context.Background()
	ms, _ := newRankedStore(t)
	s := &pageWriteCounter{Store: ms}
	c := newPageCache(t, s, retail.PageCacheOptions{})
	r := &renderer{body: "itemX"}
	const n = 300
	for i := range n {
		u := mustParse(t, fmt.Sprintf("http://test.com/?item=itemX&junk=%d", i))
		if body, hit, err := c.CacheRequest(ctx, u, r.render); err != nil || hit || string(body) != "itemX" {
			t.Fatalf("CacheRequest(%s) = %q, %v, %v, want %q, false, nil", u, body, hit, err, "itemX")
		}
	}
	if got := s.writes.Load(); got != 0 {
		t.Errorf("SetPage calls after %d junk queries = %d, want 0", n, got)
	}
	if got := r.calls.Load(); got != n {
		t.Errorf("render calls = %d, want %d", got, n)
	}
}

func TestPageCache_Key(t *testing.T) {
	s, _ := newStore(t)
	sites := []string{"Shop.Test", "www.shop.test.", "shop.test:8080"}
	for _, tc := range []struct {
		name string
		opts retail.PageCacheOptions
		url  string
		want string // "" for ok == false
	}{
		{"NoHostsLeavesHostOut", retail.PageCacheOptions{}, "http://any.test/p?item=x", "GET /p?item=x"},
		{"NoHostsEmptyPath", retail.PageCacheOptions{}, "http://any.test?item=x", "GET /?item=x"},
		{"HostCase", retail.PageCacheOptions{Hosts: sites}, "http://SHOP.test/?item=x", "GET shop.test/?item=x"},
		{"HostDefaultPort", retail.PageCacheOptions{Hosts: sites}, "http://shop.test:80/?item=x", "GET shop.test/?item=x"},
		{"HostTLSPort", retail.PageCacheOptions{Hosts: sites}, "https://shop.test:443/?item=x", "GET shop.test/?item=x"},
		{"HostTrailingDot", retail.PageCacheOptions{Hosts: sites}, "http://shop.test./?item=x", "GET shop.test/?item=x"},
		{"HostAlias", retail.PageCacheOptions{Hosts: sites}, "http://www.shop.test/?item=x", "GET shop.test/?item=x"},
		{"HostAliasWithPort", retail.PageCacheOptions{Hosts: sites}, "http://shop.test:8080/?item=x", "GET shop.test/?item=x"},
		{"UnknownHost", retail.PageCacheOptions{Hosts: sites}, "http://evil.test/?item=x", ""},
		{"UnknownPort", retail.PageCacheOptions{Hosts: sites}, "http://shop.test:8081/?item=x", ""},
		{"TrackingDropped", retail.PageCacheOptions{}, "http://a.test/?utm_campaign=z&item=x&fbclid=1&_ga=2", "GET /?item=x"},
		{"OnlyTracking", retail.PageCacheOptions{}, "http://a.test/about?gclid=1", "GET /about"},
		{"UnknownParam", retail.PageCacheOptions{}, "http://a.test/?item=x&junk=1", ""},
		{"DynamicMarker", retail.PageCacheOptions{}, "http://a.test/?item=x&_=1", ""},
		{"BadQuery", retail.PageCacheOptions{}, "http://a.test/?item=%zz", ""},
		{"NoTracking", retail.PageCacheOptions{TrackingParams: []string{}}, "http://a.test/?item=x&utm_source=a", ""},
		{"OwnTracking", retail.PageCacheOptions{TrackingParams: []string{"ref", "src_*"}}, "http://a.test/?item=x&ref=1&src_a=2", "GET /?item=x"},
		{"OwnTrackingReplacesDefault", retail.PageCacheOptions{TrackingParams: []string{"ref"}}, "http://a.test/?item=x&gclid=1", ""},
		{"ParamsKeptAndSorted", retail.PageCacheOptions{Params: []string{"page", "color"}}, "http://a.test/list?page=2&utm_source=a&color=red", "GET /list?color=red&page=2"},
		{"ParamTwice", retail.PageCacheOptions{Params: []string{"color"}}, "http://a.test/list?color=red&color=blue", ""},
		{"ParamSameTwice", retail.PageCacheOptions{Params: []string{"color"}}, "http://a.test/list?color=red&color=red", ""},
		{"ParamEmpty", retail.PageCacheOptions{Params: []string{"color", "size"}}, "http://a.test/list?color=&size=M", "GET /list?size=M"},
		{"ParamNoValue", retail.PageCacheOptions{Params: []string{"color"}}, "http://a.test/list?color", "GET /list"},
		{"ParamEmptyAndNot", retail.PageCacheOptions{Params: []string{"color"}}, "http://a.test/list?color=&color=red", ""},
		{"ItemTwice", retail.PageCacheOptions{}, "http://a.test/?item=x&item=x", ""},
		{"ItemEmpty", retail.PageCacheOptions{}, "http://a.test/about?item=", "GET /about"},
		{"TooLong", retail.PageCacheOptions{}, "http://a.test/" + strings.Repeat("p", retail.MaxPageKeyLen), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newPageCache(t, s, tc.opts)
			key, ok := c.Key(mustParse(t, tc.url))
			if key != tc.want || ok != (tc.want != "") {
				t.Errorf("Key(%.60s) = %q, %v, want %q, %v", tc.url, key, ok, tc.want, tc.want != "")
			}
		})
	}
}

// TestPageCache_KeyTakesOnlyCanonicalPaths: a router decodes and may
// clean the path, so every spelling of a path that may reach one handler
// must either give the one key of its canonical form or none, or a client
// could add entries for one page without end.
func TestPageCache_KeyTakesOnlyCanonicalPaths(t *testing.T) {
	s, _ := newStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	for _, tc := range []struct {
		path string
		want string // "" for ok == false
	}{
		{"/item", "GET /item?item=x"},
		{"", "GET /?item=x"},
		{"/", "GET /?item=x"},
		{"/shop/item", "GET /shop/item?item=x"},
		{"/a%20b", "GET /a%20b?item=x"},
		{"/caf%C3%A9", "GET /caf%C3%A9?item=x"},
		{"/100%25", "GET /100%25?item=x"},
		{"/a$&+,:;=@~-_.b", "GET /a$&+,:;=@~-_.b?item=x"},
		{"/buy%21", "GET /buy%21?item=x"},
		{"/%69tem", ""},
		{"/%69t%65m", ""},
		{"/ite%6D", ""},
		{"/ite%6d", ""},
		{"/caf%c3%a9", ""},
		{"/buy!", ""},
		{"/a%2Fb", ""},
		{"/a%2fb", ""},
		{"//item", ""},
		{"/shop//item", ""},
		{"/./item", ""},
		{"/%2e/item", ""},
		{"/x/../item", ""},
		{"/x/%2E%2E/item", ""},
		{"/../item", ""},
		{"/item/", ""},
		{"/item/.", ""},
		{"/shop/", ""},
	} {
		u := mustParse(t, "http://shop.test"+tc.path+"?item=x")
		key, ok := c.Key(u)
		if key != tc.want || ok != (tc.want != "") {
			t.Errorf("Key(%s) = %q, %v, want %q, %v", u, key, ok, tc.want, tc.want != "")
		}
	}
}

// TestPageCache_NonCanonicalPathsAreServedNotCached serves every spelling
// of a page through CacheRequest, without HTTP middleware: only the
// canonical one is stored, and a Purge by any spelling deletes it.
func TestPageCache_NonCanonicalPathsAreServedNotCached(t *testing.T) {
	ctx := context.Background()
	ms, _ := newRankedStore(t)
	s := &pageWriteCounter{Store: ms}
	c := newPageCache(t, s, retail.PageCacheOptions{})
	r := &renderer{body: "itemX"}
	spellings := []string{"/%69tem", "/item/", "//item", "/./item", "/x/../item", "/item", "/ITEM/../item", "/item"}
	var got []served
	for _, p := range spellings {
		u := mustParse(t, "http://shop.test"+p+"?item=itemX")
		body, hit, err := c.CacheRequest(ctx, u, r.render)
		if err != nil {
			t.Fatalf("CacheRequest(%s) = %v", u, err)
		}
		got = append(got, served{string(body), hit})
	}
	want := []served{{"itemX", false}, {"itemX", false}, {"itemX", false}, {"itemX", false}, {"itemX", false}, {"itemX", false}, {"itemX", false}, {"itemX", true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CacheRequest of %q mismatch (-want +got):\n%s", spellings, diff)
	}
	if n := s.writes.Load(); n != 1 {
		t.Errorf("SetPage calls = %d, want 1 (the canonical spelling's)", n)
	}
	if err := c.Purge(ctx, mustParse(t, "http://shop.test/x/../%69tem?item=itemX")); err != nil {
		t.Fatalf("Purge = %v", err)
	}
	if _, ok, _ := c.Lookup(ctx, mustParse(t, "http://shop.test/item?item=itemX")); ok {
		t.Errorf("the page is still cached after Purge of another spelling of its URL")
	}
}

// TestPageCache_HostsShareEntries caches a page through one name of the
// site and serves it through the others, and renders pages for other
// hosts without caching them.
func TestPageCache_HostsShareEntries(t *testing.T) {
	ctx := context.Background()
	ms, _ := newRankedStore(t)
	s := &pageWriteCounter{Store: ms}
	c := newPageCache(t, s, retail.PageCacheOptions{Hosts: []string{"shop.test", "www.shop.test"}})
	r := &renderer{body: "itemX"}
	for i, host := range []string{"shop.test", "WWW.shop.test:443", "shop.test."} {
		u := mustParse(t, "https://"+host+"/?item=itemX")
		if body, hit, err := c.CacheRequest(ctx, u, r.render); err != nil || hit != (i > 0) || string(body) != "itemX" {
			t.Errorf("CacheRequest(%s) = %q, %v, %v, want %q, %v, nil", u, body, hit, err, "itemX", i > 0)
		}
	}
	for range 2 {
		u := mustParse(t, "http://other.test/?item=itemX")
		if ok, err := c.CanCache(ctx, u); ok || err != nil {
			t.Errorf("CanCache(%s) = %v, %v, want false, nil", u, ok, err)
		}
		if body, hit, err := c.CacheRequest(ctx, u, r.render); err != nil || hit || string(body) != "itemX" {
			t.Errorf("CacheRequest(%s) = %q, %v, %v, want %q, false, nil", u, body, hit, err, "itemX")
		}
	}
	if got := s.writes.Load(); got != 1 {
		t.Errorf("SetPage calls = %d, want 1", got)
	}
}

func TestNewPageCache_RejectsEmptyHosts(t *testing.T) {
	s, _ := newStore(t)
	opts := retail.PageCacheOptions{Hosts: []string{"shop.test", ""}}
	c, err := retail.NewPageCache(s, opts)
	wantInputError(t, "NewPageCache(Hosts with an empty name)", err, "NewPageCache", "Hosts")
	if c != nil {
		t.Errorf("NewPageCache(Hosts with an empty name) returned a cache with its error")
	}
}

// slowTopStore is a Store whose TopItems waits for release (or for its
// caller's context), as a slow or partitioned backend would.
type slowTopStore struct {
	retail.Store
	entered chan struct{}
	release chan struct{}
}

func (s *slowTopStore) TopItems(ctx context.Context, n int) ([]retail.ItemViews, error) {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Store.TopItems(ctx, n)
}

// CanCache honours its caller's deadline even while another call reads
// the first rank snapshot, which it would otherwise wait for.
func TestPageCache_CanCacheHonoursItsDeadlineWhileTheFirstRanksAreRead(t *testing.T) {
	base, _ := newStore(t)
	s := &slowTopStore{Store: base, entered: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(s.release)
	c, err := retail.NewPageCache(s, retail.PageCacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("/item?item=kettle")
	go c.CanCache(context.Background(), u) // the first read, stuck
	<-s.entered

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.CanCache(ctx, u)
		done <- err
	}()
	if err := await(t, done); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CanCache with an ended deadline = %v, want DeadlineExceeded", err)
	}
}

// A page that Fetch returns belongs to its caller, so the caller that
// rendered it may reuse its buffer (a pooled bytes.Buffer, say) once Fetch
// returns. The waiting callers must not see that: they must get the page
// as it was rendered, not the leader's next use of its memory.
func TestPageCache_FetchWaitersDoNotShareTheLeadersPage(t *testing.T) {
	const callers = 40
	ctx := context.Background()
	c, s, _ := newCountingCache(t)
	u := mustParse(t, "http://test.com/?item=itemX")
	h := newHolder()
	var wg sync.WaitGroup
	got := make([]string, callers)
	for i := range callers {
		wg.Go(func() {
			buf := []byte("public page......")
			rendered := false
			render := func(context.Context) (*retail.CachedPage, error) {
				rendered = true
				h.hold()
				return &retail.CachedPage{Status: 200, Body: buf}, nil
			}
			p, _, err := c.Fetch(asCaller(ctx, i), u, render)
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = string(p.Body)
			if rendered {
				// The leader reuses its buffer and its page for its
				// next, personal, response.
				copy(buf, "secret of leader!")
				copy(p.Body, "secret of leader!")
			}
		})
	}
	h.releaseWhenAllWait(t, s, callers)
	wg.Wait()
	for i, b := range got {
		if b != "public page......" {
			t.Errorf("caller %d got %q, the leader's later data", i, b)
		}
	}
}

// Nil arguments are bad input, not panics: a nil URL has no key and is not
// cacheable; a nil render or views is refused with ErrInvalid.
func TestPageCache_NilArguments(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	if key, ok := c.Key(nil); key != "" || ok {
		t.Errorf("Key(nil) = %q, %v, want no key", key, ok)
	}
	if ok, err := c.CanCache(ctx, nil); ok || err != nil {
		t.Errorf("CanCache(nil) = %v, %v, want false, nil", ok, err)
	}
	if ok, err := retail.CanCache(ctx, s, nil); ok || err != nil {
		t.Errorf("retail.CanCache(s, nil) = %v, %v, want false, nil", ok, err)
	}
	if _, ok, err := c.Lookup(ctx, nil); ok || err != nil {
		t.Errorf("Lookup(nil) = %v, %v, want a miss", ok, err)
	}
	if err := c.Purge(ctx, nil); err != nil {
		t.Errorf("Purge(nil) = %v, want nil", err)
	}
	u := mustParse(t, "http://shop.test/?item=itemX")
	if _, err := retail.CanCache(ctx, nil, u); !errors.Is(err, retail.ErrInvalid) {
		t.Errorf("retail.CanCache(nil views) = %v, want ErrInvalid", err)
	}
	if _, _, err := c.Fetch(ctx, u, nil); !errors.Is(err, retail.ErrInvalid) {
		t.Errorf("Fetch(nil render) = %v, want ErrInvalid", err)
	}
	if _, _, err := c.CacheRequest(ctx, u, nil); !errors.Is(err, retail.ErrInvalid) {
		t.Errorf("CacheRequest(nil render) = %v, want ErrInvalid", err)
	}
	if _, _, err := retail.CacheRequest(ctx, s, u, nil); !errors.Is(err, retail.ErrInvalid) {
		t.Errorf("retail.CacheRequest(nil render) = %v, want ErrInvalid", err)
	}
}
