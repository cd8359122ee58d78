package retailhttp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
)

func TestCacheableHeader(t *testing.T) {
	for _, tc := range []struct {
		header http.Header
		want   bool
	}{
		{http.Header{}, true},
		{http.Header{"Content-Type": {"text/html"}, "Cache-Control": {"public, max-age=60"}}, true},
		{http.Header{"Cache-Control": {`max-age=60, community="no-cache-ish"`}}, true},
		{http.Header{"Set-Cookie": {"a=b"}}, false},
		{http.Header{"Cache-Control": {"private"}}, false},
		{http.Header{"Cache-Control": {"max-age=60, PRIVATE"}}, false},
		{http.Header{"Cache-Control": {`private="Set-Cookie"`}}, false},
		{http.Header{"Cache-Control": {" no-store "}}, false},
		{http.Header{"Cache-Control": {"public", "no-cache"}}, false},
		{http.Header{"Vary": {"Accept-Encoding"}}, false},
		{http.Header{"Trailer": {"X-Checksum"}}, false},
		{http.Header{http.TrailerPrefix + "X-Checksum": {"1"}}, false},
		{http.Header{"X-Bad": {"a\nb"}}, false},
		{http.Header{"X Bad": {"a"}}, false},
	} {
		if got := cacheableHeader(tc.header); got != tc.want {
			t.Errorf("cacheableHeader(%q) = %v, want %v", tc.header, got, tc.want)
		}
	}
}

func TestPageRecorder_PageIsWhatTheCacheKeeps(t *testing.T) {
	w := httptest.NewRecorder()
	rec := &pageRecorder{w: w, header: make(http.Header)}
	h := rec.Header()
	h.Set("X-Custom", "kept")
	for _, k := range hopHeaders {
		h.Set(k, "dropped")
	}
	rec.WriteHeader(http.StatusEarlyHints) // cannot be replayed: dropped
	rec.Write([]byte("<h1>itemX</h1>"))
	h.Set("X-Late", "after the header was sent: not part of the response")

	want := &retail.CachedPage{
		Status: http.StatusOK,
		Header: map[string][]string{"X-Custom": {"kept"}, "Content-Type": {"text/html; charset=utf-8"}},
		Body:   []byte("<h1>itemX</h1>"),
	}
	if diff := cmp.Diff(want, rec.page()); diff != "" {
		t.Errorf("page() mismatch (-want +got):\n%s", diff)
	}
	if w.Code != http.StatusOK || w.Body.Len() != 0 || len(w.Header()) != 0 {
		t.Errorf("underlying writer got status %d, body %q, header %v, want nothing written", w.Code, w.Body, w.Header())
	}
}

func TestPageRecorder_PassesOversizedPagesThrough(t *testing.T) {
	w := httptest.NewRecorder()
	rec := &pageRecorder{w: w, header: make(http.Header)}
	chunk := strings.Repeat("x", retail.MaxPageSize/2+1)
	rec.Write([]byte(chunk))
	rec.Write([]byte(chunk))
	if p := rec.page(); p != nil {
		t.Errorf("page() of a %d-byte body = a page, want nil", 2*len(chunk))
	}
	if w.Body.Len() != 2*len(chunk) || w.Header().Get("X-Cache") != CacheMiss {
		t.Errorf("underlying writer got %d bytes, X-Cache %q, want %d, %q", w.Body.Len(), w.Header().Get("X-Cache"), 2*len(chunk), CacheMiss)
	}
}
