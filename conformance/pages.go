package conformance

import (
	"bytes"
	"strings"
	"time"

	"github.com/retailkit/retail"
)

// pageTests cover the Store's page primitives. What gets cached is the root
// policy retail.PageCache, tested there; Book_PageCaching runs the book's
// page scenario through it over the backend.
var pageTests = []behaviour{
	{name: "Pages_UnknownKeyMisses", test: testPageUnknown},
	{name: "Pages_SetThenGet", test: testPageSetGet},
	{name: "Pages_SetReplaces", test: testPageReplace},
	{name: "Pages_KeysAreDistinct", test: testPageKeysDistinct},
	{name: "Pages_ExpireAfterTTL", test: testPageExpires},
	{name: "Pages_ReplaceRestartsTTL", test: testPageReplaceRestartsTTL},
	{name: "Pages_ReplaceWithShorterTTL", test: testPageReplaceShorterTTL},
	{name: "Pages_TTLsAreIndependent", test: testPageIndependentTTLs},
	{name: "Pages_SetAfterExpiryCachesAgain", test: testPageSetAfterExpiry},
	{name: "Pages_EmptyBodyIsAHit", test: testPageEmptyBody},
	{name: "Pages_BinaryBodyRoundTrips", test: testPageBinaryBody},
	{name: "Pages_LimitsAccepted", test: testPageLimits},
	{name: "Pages_ReturnedBytesAreCallers", test: testPageReturnedIsCallers},
	{name: "Pages_SetPageCopiesBody", test: testPageSetCopies},
}

const pageTTL = 300 * time.Second

func testPageUnknown(h *harness) {
	body, ok, err := h.s.Page(h.ctx, "GET /item?item=1")
	if ok || err != nil {
		h.t.Errorf(`Page("GET /item?item=1") = %q, %v, %v, want a miss: false, nil`, body, ok, err)
	}
}

func testPageSetGet(h *harness) {
	h.setPage("GET /item?item=1", []byte("<html>item 1</html>"), pageTTL)
	h.wantPage("GET /item?item=1", "<html>item 1</html>")
	h.wantNoPage("GET /item?item=2")
}

func testPageReplace(h *harness) {
	h.setPage("key", []byte("first"), pageTTL)
	h.setPage("key", []byte("second, longer"), pageTTL)
	h.wantPage("key", "second, longer")
	h.setPage("key", []byte("3"), pageTTL)
	h.wantPage("key", "3")
}

func testPageKeysDistinct(h *harness) {
	keys := []string{
		"a", "a?b", "a?b=", "A", "a ", "GET example.com/item?item=1",
		"GET example.com/item?item=10", "{a}", "a:b", "ü", "\xff", "*",
	}
	for _, key := range keys {
		h.setPage(key, []byte("body of "+key), pageTTL)
	}
	for _, key := range keys {
		h.wantPage(key, "body of "+key)
	}
}

func testPageExpires(h *harness) {
	h.setPage("key", []byte("body"), pageTTL)
	h.clock.Advance(pageTTL - time.Millisecond)
	h.wantPage("key", "body")
	h.clock.Advance(time.Millisecond)
	h.wantNoPage("key")
	h.clock.Advance(time.Hour)
	h.wantNoPage("key")
}

func testPageReplaceRestartsTTL(h *harness) {
	h.setPage("key", []byte("old"), 10*time.Second)
	h.clock.Advance(8 * time.Second)
	h.setPage("key", []byte("new"), 10*time.Second)
	h.clock.Advance(8 * time.Second)
	h.wantPage("key", "new")
	h.clock.Advance(2 * time.Second)
	h.wantNoPage("key")
}

func testPageReplaceShorterTTL(h *harness) {
	h.setPage("key", []byte("long"), time.Hour)
	h.setPage("key", []byte("short"), time.Second)
	h.clock.Advance(time.Second)
	h.wantNoPage("key")
}

func testPageIndependentTTLs(h *harness) {
	h.setPage("short", []byte("s"), time.Second)
	h.setPage("long", []byte("l"), time.Minute)
	h.clock.Advance(time.Second)
	h.wantNoPage("short")
	h.wantPage("long", "l")
	h.clock.Advance(time.Minute)
	h.wantNoPage("long")
}

func testPageSetAfterExpiry(h *harness) {
	h.setPage("key", []byte("one"), time.Second)
	h.clock.Advance(time.Second)
	h.wantNoPage("key")
	h.setPage("key", []byte("two"), time.Second)
	h.wantPage("key", "two")
}

func testPageEmptyBody(h *harness) {
	h.setPage("empty", []byte{}, pageTTL)
	h.setPage("nil", nil, pageTTL)
	for _, key := range []string{"empty", "nil"} {
		if body, ok := h.page(key); !ok || len(body) != 0 {
			h.t.Errorf("Page(%q) = %q, %v, want empty, true", key, body, ok)
		}
	}
}

func testPageBinaryBody(h *harness) {
	body := make([]byte, 512)
	for i := range body {
		body[i] = byte(i)
	}
	h.setPage("binary", body, pageTTL)
	if got, ok := h.page("binary"); !ok || !bytes.Equal(got, body) {
		h.t.Errorf(`Page("binary") = %d bytes, %v, want the 512 bytes 0..255 twice, true`, len(got), ok)
	}
}

func testPageLimits(h *harness) {
	key := strings.Repeat("k", retail.MaxPageKeyLen)
	body := bytes.Repeat([]byte("0123456789abcdef"), retail.MaxPageSize/16)
	h.setPage(key, body, retail.MaxPageTTL)
	if got, ok := h.page(key); !ok || !bytes.Equal(got, body) {
		h.t.Errorf("Page(%d-byte key) = %d bytes, %v, want %d bytes, true", len(key), len(got), ok, len(body))
	}
	h.setPage("min-ttl", []byte("brief"), retail.MinDuration)
	h.wantPage("min-ttl", "brief")
	h.clock.Advance(retail.MinDuration)
	h.wantNoPage("min-ttl")
	h.clock.Advance(retail.MaxPageTTL - 2*retail.MinDuration)
	if _, ok := h.page(key); !ok {
		h.t.Errorf("Page(%d-byte key) missed 1ms before its %v TTL ended", len(key), retail.MaxPageTTL)
	}
	h.clock.Advance(retail.MinDuration)
	if _, ok := h.page(key); ok {
		h.t.Errorf("Page(%d-byte key) hit once its %v TTL ended, want a miss", len(key), retail.MaxPageTTL)
	}
}

func testPageReturnedIsCallers(h *harness) {
	h.setPage("key", []byte("body"), pageTTL)
	got, _ := h.page("key")
	if len(got) != 4 {
		h.t.Fatalf(`Page("key") = %q, want "body"`, got)
	}
	copy(got, "XXXX")
	h.wantPage("key", "body")
}

func testPageSetCopies(h *harness) {
	body := []byte("body")
	h.setPage("key", body, pageTTL)
	copy(body, "XXXX")
	h.wantPage("key", "body")
}
