package conformance

import (
	"context"
	"net/url"

	"github.com/retailkit/retail"
)

// testBookPageCaching is the book's test_cache_request, run through the root
// policy (retail.PageCache) over the backend's Pages and Views: a page for a
// viewed item is cached and served again without rendering; the home page
// and a dynamic item page are not cacheable.
func testBookPageCaching(h *harness) {
	const token, user, item = "book-page-token", "username", "itemX"
	h.update(token, user, item)

	pages, err := retail.NewPageCache(h.s, retail.PageCacheOptions{})
	if err != nil {
		h.t.Fatalf("NewPageCache() = %v", err)
	}
	renders := 0
	render := func(context.Context) ([]byte, error) {
		renders++
		return []byte("content for " + item), nil
	}
	u := mustURL(h, "http://test.com/?item="+item)
	for i, wantHit := range []bool{false, true} {
		body, hit, err := pages.CacheRequest(h.ctx, u, render)
		if err != nil || hit != wantHit || string(body) != "content for "+item {
			h.t.Fatalf("CacheRequest(%s) #%d = %q, hit %v, %v; want %q, hit %v, nil", u, i+1, body, hit, err, "content for "+item, wantHit)
		}
	}
	if renders != 1 {
		h.t.Fatalf("CacheRequest(%s) twice rendered %d times, want 1", u, renders)
	}
	// The page is in the Store itself, under its canonical key, where
	// another PageCache (another server) finds it.
	key, ok := pages.Key(u)
	if !ok {
		h.t.Fatalf("Key(%s) = _, false; want the page's key", u)
	}
	if _, ok, err := h.s.Page(h.ctx, key); err != nil || !ok {
		h.t.Fatalf("Page(%q) = _, %v, %v; want the cached entry", key, ok, err)
	}
	other, err := retail.NewPageCache(h.s, retail.PageCacheOptions{})
	if err != nil {
		h.t.Fatalf("NewPageCache() = %v", err)
	}
	if body, hit, err := other.CacheRequest(h.ctx, u, render); err != nil || !hit || string(body) != "content for "+item {
		h.t.Fatalf("another PageCache: CacheRequest(%s) = %q, hit %v, %v; want %q, hit true, nil", u, body, hit, err, "content for "+item)
	}

	for _, raw := range []string{"http://test.com/", "http://test.com/?item=itemX&_=1234536"} {
		ok, err := pages.CanCache(h.ctx, mustURL(h, raw))
		if err != nil || ok {
			h.t.Errorf("CanCache(%s) = %v, %v; want false, nil", raw, ok, err)
		}
	}
}

func mustURL(h *harness, raw string) *url.URL {
	u, err := url.Parse(raw)
	if err != nil {
		h.t.Fatalf("url.Parse(%q) = %v", raw, err)
	}
	return u
}
