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
	{name: "Pages_TTLRoundsUpToTheMillisecond", test: testPageTTLRoundsUp},
	{name: "Pages_ReplaceRestartsTTL", test: testPageReplaceRestartsTTL},
	{name: "Pages_ReplaceWithShorterTTL", test: testPageReplaceShorterTTL},
	{name: "Pages_TTLsAreIndependent", test: testPageIndependentTTLs},
	{name: "Pages_SetAfterExpiryCachesAgain", test: testPageSetAfterExpiry},
	{name: "Pages_EmptyBodyIsAHit", test: testPageEmptyBody},
	{name: "Pages_BinaryBodyRoundTrips", test: testPageBinaryBody},
	{name: "Pages_LimitsAccepted", test: testPageLimits},
	{name: "Pages_ReturnedBytesAreCallers", test: testPageReturnedIsCallers},
	{name: "Pages_SetPageCopiesBody", test: testPageSetCopies},
	{name: "Pages_DeletePage", test: testPageDelete},
	{name: "Pages_ItemPageIsAPage", test: testItemPageIsAPage},
	{name: "Pages_PurgeItemPagesDeletesEveryVariant", test: testPurgeItemPages},
	{name: "Pages_PurgeItemPagesCountsLivePages", test: testPurgeCountsLive},
	{name: "Pages_ReplacedPageLeavesItsItem", test: testReplacedPageLeavesItsItem},
	{name: "Pages_PurgedItemCachesAgain", test: testPurgedItemCachesAgain},
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

// A page is served while the clock reads before its TTL is over, however
// fine the TTL: a Store that keeps whole milliseconds rounds it up.
func testPageTTLRoundsUp(h *harness) {
	h.setPage("key", []byte("body"), 1500*time.Microsecond)
	h.clock.Advance(time.Millisecond)
	h.wantPage("key", "body")
	h.clock.Advance(time.Millisecond)
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

func (h *harness) setItemPage(item, key string, body []byte, ttl time.Duration) {
	h.t.Helper()
	if err := h.s.SetItemPage(h.ctx, item, key, body, ttl); err != nil {
		h.t.Fatalf("SetItemPage(%q, %q, %d bytes, %v) = %v, want nil", item, key, len(body), ttl, err)
	}
}

func (h *harness) deletePage(key string) {
	h.t.Helper()
	if err := h.s.DeletePage(h.ctx, key); err != nil {
		h.t.Fatalf("DeletePage(%q) = %v, want nil", key, err)
	}
}

// wantPurged purges item's pages and fails unless want of them were live.
func (h *harness) wantPurged(item string, want int) {
	h.t.Helper()
	n, err := h.s.PurgeItemPages(h.ctx, item)
	if err != nil || n != want {
		h.t.Errorf("PurgeItemPages(%q) = %d, %v, want %d, nil", item, n, err, want)
	}
}

func testPageDelete(h *harness) {
	h.setPage("a", []byte("page a"), pageTTL)
	h.setPage("b", []byte("page b"), pageTTL)
	h.setItemPage("item-1", "c", []byte("page c"), pageTTL)
	h.deletePage("a")
	h.wantNoPage("a")
	h.wantPage("b", "page b")
	h.deletePage("a") // absent: a no-op
	h.deletePage("never-stored")
	h.deletePage("c")
	h.wantNoPage("c")
	h.wantPurged("item-1", 0)
	h.setPage("a", []byte("again"), pageTTL)
	h.wantPage("a", "again")
}

func testItemPageIsAPage(h *harness) {
	h.setItemPage("item-1", "GET /item?item=item-1", []byte("<p>1</p>"), 10*time.Second)
	h.wantPage("GET /item?item=item-1", "<p>1</p>")
	h.setItemPage("item-1", "GET /item?item=item-1", []byte("<p>one</p>"), 10*time.Second)
	h.wantPage("GET /item?item=item-1", "<p>one</p>")
	h.clock.Advance(10*time.Second - time.Millisecond)
	h.wantPage("GET /item?item=item-1", "<p>one</p>")
	h.clock.Advance(time.Millisecond)
	h.wantNoPage("GET /item?item=item-1")
	h.setItemPage("item-1", "empty", nil, pageTTL)
	if body, ok := h.page("empty"); !ok || len(body) != 0 {
		h.t.Errorf(`Page("empty") = %q, %v, want empty, true`, body, ok)
	}
}

func testPurgeItemPages(h *harness) {
	variants := []string{
		"GET shop.test/item?item=item-1",
		"GET shop.test/item?item=item-1&lang=fr",
		"GET /item?item=item-1",
		"{item-1}",
	}
	for _, key := range variants {
		h.setItemPage("item-1", key, []byte("item-1 at "+key), pageTTL)
	}
	h.setItemPage("item-2", "GET shop.test/item?item=item-2", []byte("item-2"), pageTTL)
	h.setPage("GET shop.test/", []byte("home"), pageTTL)
	h.wantPurged("item-1", len(variants))
	for _, key := range variants {
		h.wantNoPage(key)
	}
	h.wantPage("GET shop.test/item?item=item-2", "item-2")
	h.wantPage("GET shop.test/", "home")
	h.wantPurged("item-1", 0)
	h.wantPurged("never-stored", 0)
	h.wantPurged("item-2", 1)
	h.wantNoPage("GET shop.test/item?item=item-2")
	h.wantPage("GET shop.test/", "home")
}

func testPurgeCountsLive(h *harness) {
	h.setItemPage("item-1", "short", []byte("s"), time.Second)
	h.setItemPage("item-1", "long", []byte("l"), time.Minute)
	h.setItemPage("item-1", "deleted", []byte("d"), time.Minute)
	h.deletePage("deleted")
	h.clock.Advance(time.Second)
	h.wantPurged("item-1", 1)
	h.wantNoPage("long")
	h.wantNoPage("short")
}

func testReplacedPageLeavesItsItem(h *harness) {
	h.setItemPage("item-1", "by-setpage", []byte("old"), pageTTL)
	h.setPage("by-setpage", []byte("new"), pageTTL)
	h.setItemPage("item-1", "by-other-item", []byte("old"), pageTTL)
	h.setItemPage("item-2", "by-other-item", []byte("item-2"), pageTTL)
	h.setItemPage("item-1", "kept", []byte("item-1"), pageTTL)
	h.wantPurged("item-1", 1)
	h.wantNoPage("kept")
	h.wantPage("by-setpage", "new")
	h.wantPage("by-other-item", "item-2")
	h.wantPurged("item-2", 1)
	h.wantNoPage("by-other-item")
	h.wantPage("by-setpage", "new")
}

func testPurgedItemCachesAgain(h *harness) {
	h.setItemPage("item-1", "key", []byte("first"), pageTTL)
	h.wantPurged("item-1", 1)
	h.setItemPage("item-1", "key", []byte("second"), pageTTL)
	h.wantPage("key", "second")
	h.wantPurged("item-1", 1)
	h.wantNoPage("key")
}
