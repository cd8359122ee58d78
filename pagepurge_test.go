package retail_test

import (
	"context"
	"errors"
	"testing"

	"github.com/retailkit/retail"
)

// TestPageCache_PurgeAndPurgeItem: item pages are stored as the item's, so
// PurgeItem deletes every variant of them; Purge deletes one page by URL.
func TestPageCache_PurgeAndPurgeItem(t *testing.T) {
	ctx := context.Background()
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{Params: []string{"lang"}})
	plain := mustParse(t, "http://shop.test/item?item=itemX")
	french := mustParse(t, "http://shop.test/item?item=itemX&lang=fr")
	for _, u := range []string{plain.String(), french.String()} {
		r := &renderer{body: "page"}
		if _, _, err := c.CacheRequest(ctx, mustParse(t, u), r.render); err != nil {
			t.Fatalf("CacheRequest(%s) = %v", u, err)
		}
		if _, ok, _ := c.Lookup(ctx, mustParse(t, u)); !ok {
			t.Fatalf("CacheRequest(%s) cached nothing", u)
		}
	}
	if err := c.Purge(ctx, french); err != nil {
		t.Fatalf("Purge(%s) = %v", french, err)
	}
	if _, ok, _ := c.Lookup(ctx, french); ok {
		t.Errorf("Lookup(%s) hit after Purge", french)
	}
	if _, ok, _ := c.Lookup(ctx, plain); !ok {
		t.Errorf("Lookup(%s) missed after Purge of another URL", plain)
	}
	if err := c.Purge(ctx, mustParse(t, "http://shop.test/item?item=itemX&junk=1")); err != nil {
		t.Errorf("Purge(a URL without a key) = %v, want nil", err)
	}
	if n, err := c.PurgeItem(ctx, "itemX"); n != 1 || err != nil {
		t.Errorf("PurgeItem(itemX) = %d, %v, want 1, nil", n, err)
	}
	if _, ok, _ := c.Lookup(ctx, plain); ok {
		t.Errorf("Lookup(%s) hit after PurgeItem", plain)
	}
	if n, err := c.PurgeItem(ctx, "itemX"); n != 0 || err != nil {
		t.Errorf("PurgeItem(itemX) again = %d, %v, want 0, nil", n, err)
	}
	if _, err := c.PurgeItem(ctx, ""); !errors.Is(err, retail.ErrInvalid) {
		t.Errorf(`PurgeItem("") = %v, want an error matching ErrInvalid`, err)
	}
}
