package retailhttp

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCachedPage_EncodeDecodeRoundTrip(t *testing.T) {
	p := &cachedPage{
		status: http.StatusOK,
		header: http.Header{
			"Content-Type": {"text/html; charset=utf-8"},
			"Link":         {"</a.css>; rel=preload", "</b.js>; rel=preload"},
			"X-Empty":      {""},
		},
		body: []byte("line 1\n\nretail-page/1 200\n\x00\xff"),
	}
	got, ok := decodePage(p.encode())
	if !ok {
		t.Fatalf("decodePage(encode(%+v)) failed", p)
	}
	if diff := cmp.Diff(p, got, cmp.AllowUnexported(cachedPage{})); diff != "" {
		t.Errorf("decodePage(encode(p)) mismatch (-want +got):\n%s", diff)
	}
}

func TestDecodePage_RejectsOtherFormats(t *testing.T) {
	for _, data := range []string{
		"",
		"<h1>a page cached by something else</h1>",
		"retail-page/1 200",              // no header end
		"retail-page/1 20\n\nbody",       // bad status
		"retail-page/1 099\n\nbody",      // status out of range
		"retail-page/2 200\n\nbody",      // another version
		"retail-page/1 200\nNoColon\n\n", // bad header line
		"retail-page/1 200\nA B: c\n\nx", // bad header name
	} {
		if p, ok := decodePage([]byte(data)); ok {
			t.Errorf("decodePage(%q) = %+v, true, want false", data, p)
		}
	}
}
