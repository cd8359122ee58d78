package retail

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The external tests (pageentry_test.go) cover the entry format through
// PageCache; these fuzz it directly. Their seeds run in every go test.

// FuzzPageEntry_RoundTrip builds a page from the fuzzer's values: if it can
// be encoded, it must decode to the same page.
func FuzzPageEntry_RoundTrip(f *testing.F) {
	f.Add(200, "Content-Type", "text/html", "Vary", "Cookie", []byte("<p>body</p>"), int64(1735689600000), int64(1735689900000))
	f.Add(404, "A", "", "B", "x: y", []byte("\n\nretail-page/2 200 0 0\n\n"), int64(0), int64(0))
	f.Add(599, "X", "  spaces  ", "X", "second", []byte{}, int64(-1), int64(math.MaxInt64/1000))
	f.Add(199, "A", "a\nb", "B", "b\rc", []byte(nil), int64(1), int64(2))
	f.Add(200, "A:B", "v", "", "v", []byte("b"), int64(math.MinInt64/1000), int64(0))
	f.Fuzz(func(t *testing.T, status int, k1, v1, k2, v2 string, body []byte, stored, expires int64) {
		p := &CachedPage{Status: status, Header: map[string][]string{}, Body: body, Stored: time.UnixMilli(stored), Expires: time.UnixMilli(expires)}
		p.Header[k1] = append(p.Header[k1], v1)
		p.Header[k2] = append(p.Header[k2], v2)
		data, ok := p.encode()
		if !ok {
			return
		}
		got, ok := decodePage(data)
		if !ok {
			t.Fatalf("decodePage(encode(%+v)) failed; entry %q", p, data)
		}
		if diff := cmp.Diff(p, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("decodePage(encode(p)) mismatch (-p +got):\n%s", diff)
		}
	})
}

// FuzzPageEntry_Decode feeds arbitrary entries to decodePage: it must not
// panic, and whatever it accepts must encode, and decode again to the same
// page.
func FuzzPageEntry_Decode(f *testing.F) {
	f.Add([]byte("retail-page/2 200 1735689600000 1735689900000\nA: 1\nB: 2\n\nbody"))
	f.Add([]byte("retail-page/2 200 0 0\n\n"))
	f.Add([]byte("retail-page/2 404 -5 7\nA: \nA: x: y\n\n\n\n"))
	f.Add([]byte("retail-page/2 20 0 0\n\n"))
	f.Add([]byte("retail-page/2 200 0 0\nNoColon\n\n"))
	f.Add([]byte("retail-page/1 200\n\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, ok := decodePage(data)
		if !ok {
			return
		}
		again, ok := p.encode()
		if !ok {
			t.Fatalf("decodePage(%q) = %+v, which does not encode", data, p)
		}
		q, ok := decodePage(again)
		if !ok {
			t.Fatalf("decodePage(encode(decodePage(%q))) failed", data)
		}
		if diff := cmp.Diff(p, q, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("decodePage(%q) and its re-encoding differ (-first +second):\n%s", data, diff)
		}
		if !bytes.HasSuffix(data, p.Body) {
			t.Fatalf("decodePage(%q).Body = %q, not the end of the entry", data, p.Body)
		}
	})
}
