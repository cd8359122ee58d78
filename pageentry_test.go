package retail_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/retailkit/retail"
)

// These tests cover the one entry format every page is stored in, through
// PageCache.Fetch, PageCache.Lookup and PageCache.CacheRequest.

// equatePages compares pages as a user reads them: a nil header or body is
// an empty one. It leaves out what Fetch adds to a page it stores (the
// times and the ETag), which TestPageCache_FetchStampsStoredPages checks.
var equatePages = cmp.Options{
	cmpopts.EquateEmpty(),
	cmp.Transformer("unstamped", unstamped),
}

// unstamped returns p without what Fetch adds when it stores a page.
func unstamped(p retail.CachedPage) retail.CachedPage {
	p.Stored, p.Expires = time.Time{}, time.Time{}
	if _, ok := p.Header["Etag"]; ok {
		p.Header = maps.Clone(p.Header)
		delete(p.Header, "Etag")
	}
	return p
}

// pageRenderer is a Fetch render callback that counts its calls and
// returns a copy of page each time.
type pageRenderer struct {
	calls atomic.Int64
	page  *retail.CachedPage
}

func (r *pageRenderer) render(context.Context) (*retail.CachedPage, error) {
	r.calls.Add(1)
	return clonePage(r.page), nil
}

// clonePage returns a deep copy of p.
func clonePage(p *retail.CachedPage) *retail.CachedPage {
	if p == nil {
		return nil
	}
	c := &retail.CachedPage{Status: p.Status, Body: bytes.Clone(p.Body)}
	if p.Header != nil {
		c.Header = make(map[string][]string, len(p.Header))
		for k, vs := range p.Header {
			c.Header[k] = slices.Clone(vs)
		}
	}
	return c
}

// setRawPage stores data under u's key (by a PageCache's default options)
// directly in the Store, as an entry the PageCache did not write.
func setRawPage(t *testing.T, s retail.Pages, u string, data string) {
	t.Helper()
	key := defaultKey(mustParse(t, u))
	if err := s.SetPage(context.Background(), key, []byte(data), retail.DefaultPageTTL); err != nil {
		t.Fatalf("SetPage(%q) = %v", key, err)
	}
}

func lookup(t *testing.T, c *retail.PageCache, raw string) (*retail.CachedPage, bool) {
	t.Helper()
	p, ok, err := c.Lookup(context.Background(), mustParse(t, raw))
	if err != nil {
		t.Fatalf("Lookup(%s) = %v, want nil error", raw, err)
	}
	return p, ok
}

// TestPageCache_FetchCachesAndServesPages fetches a page twice: it is
// rendered once, whether CanCache would allow it or not (Fetch does not
// ask), and Lookup finds it.
func TestPageCache_FetchCachesAndServesPages(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	const raw = "http://test.com/about"
	u := mustParse(t, raw)
	want := &retail.CachedPage{
		Status: 200,
		Header: map[string][]string{"Content-Type": {"text/html; charset=utf-8"}, "Vary": {"Accept", "Cookie"}},
		Body:   []byte("<h1>About</h1>"),
	}
	r := &pageRenderer{page: want}
	for i, wantHit := range []bool{false, true} {
		p, hit, err := c.Fetch(ctx, u, r.render)
		if err != nil || hit != wantHit {
			t.Errorf("call %d: Fetch(%s) = _, %v, %v, want hit %v, nil", i+1, raw, hit, err, wantHit)
		}
		if diff := cmp.Diff(want, p, equatePages); diff != "" {
			t.Errorf("call %d: Fetch(%s) page mismatch (-want +got):\n%s", i+1, raw, diff)
		}
	}
	if got := r.calls.Load(); got != 1 {
		t.Errorf("render calls = %d, want 1", got)
	}
	p, ok := lookup(t, c, raw)
	if diff := cmp.Diff(want, p, equatePages); !ok || diff != "" {
		t.Errorf("Lookup(%s) = _, %v, want the page, true; page mismatch (-want +got):\n%s", raw, ok, diff)
	}

	// The page Lookup returned is the caller's.
	p.Body[0] = 'X'
	p.Header["Vary"][0] = "changed"
	p.Header["Added"] = []string{"x"}
	if again, _ := lookup(t, c, raw); !cmp.Equal(want, again, equatePages) {
		t.Errorf("Lookup(%s) after changing an earlier result = %+v, want %+v", raw, again, want)
	}
}

func TestPageCache_LookupMisses(t *testing.T) {
	s, _ := newStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	for _, raw := range []string{
		"http://test.com/?item=never-cached",
		"http://test.com/" + strings.Repeat("p", retail.MaxPageKeyLen), // a key over the limit
	} {
		if p, ok := lookup(t, c, raw); ok || p != nil {
			t.Errorf("Lookup(%.40s...) = %+v, %v, want nil, false", raw, p, ok)
		}
	}
}

// TestPageCache_EntriesRoundTrip stores pages of every shape and reads them
// back, through the PageCache that stored them and through another one.
func TestPageCache_EntriesRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	other := newPageCache(t, s, retail.PageCacheOptions{})
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	for name, want := range map[string]*retail.CachedPage{
		"Minimal":   {Status: 200},
		"EmptyBody": {Status: 200, Header: map[string][]string{"X-Empty": {""}}, Body: []byte{}},
		"NotFound":  {Status: 404, Body: []byte("no such item")},
		"Status599": {Status: 599, Body: []byte("x")},
		"ManyValues": {Status: 200, Header: map[string][]string{
			"Set-Order": {"c", "a", "b"}, "A": {"1"}, "Z-Last": {"z"},
		}},
		"ValuesLikeHeaders": {Status: 200, Header: map[string][]string{
			"Link": {"<a>; rel=x: y", "  leading spaces", "trailing ", "key: value"},
			"Utf8": {"Zoë, 日本, 🛒"},
		}},
		"BodyLikeAnEntry": {Status: 200, Header: map[string][]string{"A": {"1"}},
			Body: []byte("\n\nretail-page/1 200\nA: 2\n\nbody\n")},
		"BinaryBody": {Status: 200, Body: binary},
	} {
		t.Run(name, func(t *testing.T) {
			raw := "http://test.com/" + name
			u := mustParse(t, raw)
			if _, _, err := c.Fetch(ctx, u, (&pageRenderer{page: want}).render); err != nil {
				t.Fatalf("Fetch(%s) = %v", raw, err)
			}
			got, ok := lookup(t, c, raw)
			if diff := cmp.Diff(want, got, equatePages); !ok || diff != "" {
				t.Errorf("Lookup(%s) = _, %v, want the page, true; page mismatch (-want +got):\n%s", raw, ok, diff)
			}
			r := &pageRenderer{page: &retail.CachedPage{Status: 500}}
			got, hit, err := other.Fetch(ctx, u, r.render)
			if diff := cmp.Diff(want, got, equatePages); err != nil || !hit || diff != "" {
				t.Errorf("another PageCache: Fetch(%s) = _, %v, %v, want the page, true, nil; page mismatch (-want +got):\n%s", raw, hit, err, diff)
			}
		})
	}
}

// TestPageCache_UnencodablePagesAreNotStored renders pages that the entry
// format cannot hold: each is returned as rendered, and rendered again next
// time.
func TestPageCache_UnencodablePagesAreNotStored(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	for name, page := range map[string]*retail.CachedPage{
		"NewlineInValue":    {Status: 200, Header: map[string][]string{"X-Split": {"a\nInjected: yes"}}, Body: []byte("b")},
		"CRInValue":         {Status: 200, Header: map[string][]string{"X-Split": {"ok", "a\rb"}}},
		"ColonInKey":        {Status: 200, Header: map[string][]string{"X:Y": {"v"}}},
		"SpaceInKey":        {Status: 200, Header: map[string][]string{"X Y": {"v"}}},
		"NewlineInKey":      {Status: 200, Header: map[string][]string{"X\nY": {"v"}}},
		"EmptyKey":          {Status: 200, Header: map[string][]string{"": {"v"}}},
		"StatusZero":        {Status: 0, Body: []byte("b")},
		"StatusInformation": {Status: 199},
		"StatusTooLarge":    {Status: 600},
	} {
		t.Run(name, func(t *testing.T) {
			raw := "http://test.com/" + name
			u := mustParse(t, raw)
			r := &pageRenderer{page: page}
			for i := range 2 {
				p, hit, err := c.Fetch(ctx, u, r.render)
				if err != nil || hit {
					t.Errorf("call %d: Fetch = _, %v, %v, want the page, false, nil", i+1, hit, err)
				}
				if diff := cmp.Diff(page, p, equatePages); diff != "" {
					t.Errorf("call %d: Fetch page mismatch (-rendered +got):\n%s", i+1, diff)
				}
			}
			if got := r.calls.Load(); got != 2 {
				t.Errorf("render calls = %d, want 2", got)
			}
			if hasPage(t, s, u) {
				t.Errorf("Page(%q) found an entry, want none", defaultKey(u))
			}
		})
	}
}

// TestPageCache_UndecodableEntriesMissAndAreReplaced puts entries in the
// Store that the PageCache did not write (an old format, a truncated or
// corrupted entry): each is a miss, and the next Fetch replaces it.
func TestPageCache_UndecodableEntriesMissAndAreReplaced(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	for name, data := range map[string]string{
		"Empty":            "",
		"RawBody":          "<html>a body cached before entries had a format</html>",
		"Version1":         "retail-page/1 200\nA: 1\n\nbody",
		"LaterVersion":     "retail-page/3 200 0 0\n\nbody",
		"NoStatusLine":     "retail-page/2 ",
		"NoTimes":          "retail-page/2 200\n\nbody",
		"OneTime":          "retail-page/2 200 0\n\nbody",
		"FourFields":       "retail-page/2 200 0 0 0\n\nbody",
		"TimeNotANumber":   "retail-page/2 200 x 0\n\nbody",
		"TimeLeadZero":     "retail-page/2 200 0 01\n\nbody",
		"TimePlusSign":     "retail-page/2 200 +1 0\n\nbody",
		"DoubleSpace":      "retail-page/2 200  0 0\n\nbody",
		"NoHeaderEnd":      "retail-page/2 200 0 0\nA: 1\n",
		"ShortStatus":      "retail-page/2 20 0 0\n\nbody",
		"LongStatus":       "retail-page/2 2000 0 0\n\nbody",
		"StatusNotANumber": "retail-page/2 abc 0 0\n\nbody",
		"StatusSigned":     "retail-page/2 +20 0 0\n\nbody",
		"StatusPlusSign":   "retail-page/2 +200 0 0\n\nbody",
		"StatusLeadZero":   "retail-page/2 0200 0 0\n\nbody",
		"StatusOutOfRange": "retail-page/2 700 0 0\n\nbody",
		"HeaderNoColon":    "retail-page/2 200 0 0\nNoColon\n\nbody",
		"HeaderEmptyKey":   "retail-page/2 200 0 0\n: v\n\nbody",
		"HeaderSpaceInKey": "retail-page/2 200 0 0\nA B: v\n\nbody",
	} {
		t.Run(name, func(t *testing.T) {
			raw := "http://test.com/?item=" + name
			setRawPage(t, s, raw, data)
			if p, ok := lookup(t, c, raw); ok || p != nil {
				t.Fatalf("Lookup of an undecodable entry = %+v, %v, want nil, false", p, ok)
			}
			want := &retail.CachedPage{Status: 200, Header: map[string][]string{"A": {"1"}}, Body: []byte("fresh")}
			r := &pageRenderer{page: want}
			if p, hit, err := c.Fetch(ctx, mustParse(t, raw), r.render); err != nil || hit || !cmp.Equal(want, p, equatePages) {
				t.Errorf("Fetch over an undecodable entry = %+v, %v, %v, want %+v, false, nil", p, hit, err, want)
			}
			if p, ok := lookup(t, c, raw); !ok || !cmp.Equal(want, p, equatePages) {
				t.Errorf("Lookup after Fetch = %+v, %v, want %+v, true: the entry was not replaced", p, ok, want)
			}
		})
	}
}

// TestPageCache_CacheRequestServesEntriesWithHeaders serves, through the
// book's CacheRequest, a page that Fetch cached with its headers (as an
// HTTP middleware does): the body is a hit.
func TestPageCache_CacheRequestServesEntriesWithHeaders(t *testing.T) {
	ctx := context.Background()
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	u := mustParse(t, "http://test.com/?item=itemX")
	page := &retail.CachedPage{
		Status: 200,
		Header: map[string][]string{"Content-Type": {"text/html"}, "Etag": {`"v1"`}},
		Body:   []byte("<h1>itemX</h1>"),
	}
	if _, _, err := c.Fetch(ctx, u, (&pageRenderer{page: page}).render); err != nil {
		t.Fatalf("Fetch = %v", err)
	}
	r := &renderer{body: "rendered again"}
	body, hit, err := c.CacheRequest(ctx, u, r.render)
	if err != nil || !hit || string(body) != string(page.Body) {
		t.Errorf("CacheRequest = %q, %v, %v, want %q, true, nil", body, hit, err, page.Body)
	}
	if got := r.calls.Load(); got != 0 {
		t.Errorf("render calls = %d, want 0", got)
	}
}

// TestPageCache_CacheRequestStoresA200Page checks what CacheRequest
// stores: a page with status 200, no header and the rendered body, which
// Fetch serves.
func TestPageCache_CacheRequestStoresA200Page(t *testing.T) {
	ctx := context.Background()
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	const raw = "http://test.com/?item=itemX"
	if _, _, err := c.CacheRequest(ctx, mustParse(t, raw), (&renderer{body: "page"}).render); err != nil {
		t.Fatalf("CacheRequest = %v", err)
	}
	want := &retail.CachedPage{Status: 200, Body: []byte("page")}
	if p, ok := lookup(t, c, raw); !ok || !cmp.Equal(want, p, equatePages) {
		t.Errorf("Lookup after CacheRequest = %+v, %v, want %+v, true", p, ok, want)
	}
}

// TestPageCache_FetchStampsStoredPages checks what Fetch adds to a page it
// stores: when, by the Clock option, until when, by the TTL option, and a
// strong ETag of the body unless the page has one.
func TestPageCache_FetchStampsStoredPages(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	clock := retail.NewManualClock(time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC))
	const ttl = 2 * time.Minute
	c := newPageCache(t, s, retail.PageCacheOptions{TTL: ttl, Clock: clock})
	if got := c.Now(); !got.Equal(clock.Now()) {
		t.Errorf("Now() = %v, want the clock's %v", got, clock.Now())
	}
	sum := sha256.Sum256([]byte("body"))
	bodyTag := `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
	for _, tc := range []struct {
		name   string
		header map[string][]string
		etag   string
	}{
		{"ComputedETag", nil, bodyTag},
		{"HandlersETag", map[string][]string{"Etag": {`W/"mine"`}}, `W/"mine"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := "http://test.com/" + tc.name
			r := &pageRenderer{page: &retail.CachedPage{Status: 200, Header: tc.header, Body: []byte("body")}}
			want := &retail.CachedPage{
				Status:  200,
				Header:  map[string][]string{"Etag": {tc.etag}},
				Body:    []byte("body"),
				Stored:  clock.Now().Truncate(time.Millisecond),
				Expires: clock.Now().Add(ttl).Truncate(time.Millisecond),
			}
			p, _, err := c.Fetch(ctx, mustParse(t, raw), r.render)
			if diff := cmp.Diff(want, p); err != nil || diff != "" {
				t.Errorf("Fetch(%s) = _, _, %v; page mismatch (-want +got):\n%s", raw, err, diff)
			}
			got, ok := lookup(t, c, raw)
			if diff := cmp.Diff(want, got); !ok || diff != "" {
				t.Errorf("Lookup(%s) = _, %v; page mismatch (-want +got):\n%s", raw, ok, diff)
			}
		})
	}
}

// TestPageCache_PagesNotStoredAreNotStamped renders a page too large to
// store: Fetch returns it as render made it.
func TestPageCache_PagesNotStoredAreNotStamped(t *testing.T) {
	s, _ := newStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	want := &retail.CachedPage{Status: 200, Body: bytes.Repeat([]byte("x"), retail.MaxPageSize)}
	r := &pageRenderer{page: want}
	p, hit, err := c.Fetch(context.Background(), mustParse(t, "http://test.com/big"), r.render)
	if err != nil || hit || p == nil {
		t.Fatalf("Fetch(big page) = %v, %v, %v, want the page, false, nil", p, hit, err)
	}
	if !p.Stored.IsZero() || !p.Expires.IsZero() || p.Header["Etag"] != nil || !bytes.Equal(p.Body, want.Body) {
		t.Errorf("Fetch(big page) = page with Stored %v, Expires %v, ETag %q, %d bytes, want zero times, no ETag, %d bytes",
			p.Stored, p.Expires, p.Header["Etag"], len(p.Body), len(want.Body))
	}
}
