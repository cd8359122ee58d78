// Command tour walks through every feature of "Redis in Action" chapter 2 on
// the in-memory backend and prints what each step shows: sessions, recently
// viewed items, carts, page caching of popular items, row caching, view
// rescaling and session cleaning.
//
//	go run ./examples/tour
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/url"
	"os"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run uses a manual clock so that the tour is instant and its output the same
// on every run.
func run(ctx context.Context, w io.Writer) error {
	clock := retail.NewManualClock(time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC))
	store, err := memory.New(memory.Options{Clock: clock})
	if err != nil {
		return err
	}
	defer store.Close()

	// Sessions: a token cookie maps to a user; every request refreshes it.
	fmt.Fprintln(w, "== sessions")
	for _, item := range []string{"itemA", "itemB", "itemA", "itemC"} {
		if err := store.UpdateToken(ctx, "token-alice", "alice", item); err != nil {
			return err
		}
		clock.Advance(time.Second)
	}
	if err := store.UpdateToken(ctx, "token-bob", "bob", "itemC"); err != nil {
		return err
	}
	user, ok, err := store.CheckToken(ctx, "token-alice")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "token-alice is %q (logged in: %v)\n", user, ok)
	recent, err := store.RecentItems(ctx, "token-alice")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "alice viewed, newest first: %v\n", recent)

	// Carts belong to sessions.
	fmt.Fprintln(w, "== carts")
	if err := store.AddToCart(ctx, "token-alice", "itemA", 2); err != nil {
		return err
	}
	if err := store.AddToCart(ctx, "token-alice", "itemC", 1); err != nil {
		return err
	}
	if err := store.AddToCart(ctx, "token-alice", "itemC", 0); err != nil { // removes the line
		return err
	}
	cart, err := store.Cart(ctx, "token-alice")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "alice's cart: %v\n", cart)

	// Views rank items; only popular item pages are cached.
	fmt.Fprintln(w, "== views and page caching")
	top, err := store.TopItems(ctx, 3)
	if err != nil {
		return err
	}
	for rank, iv := range top {
		fmt.Fprintf(w, "rank %d: %s (%v views)\n", rank, iv.Item, iv.Views)
	}
	pages, err := retail.NewPageCache(store, retail.PageCacheOptions{})
	if err != nil {
		return err
	}
	renders := 0
	render := func(context.Context) ([]byte, error) {
		renders++
		return []byte("<h1>itemA</h1>"), nil
	}
	for _, raw := range []string{"http://shop.test/?item=itemA", "http://shop.test/?item=itemA", "http://shop.test/?item=itemA&_=1"} {
		u, _ := url.Parse(raw)
		body, hit, err := pages.CacheRequest(ctx, u, render)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s -> %q cache hit: %v\n", raw, body, hit)
	}
	fmt.Fprintf(w, "rendered %d times for 3 requests\n", renders)

	// Rows: scheduled refreshes of a database row's cached JSON.
	fmt.Fprintln(w, "== row caching")
	price := 10
	load := func(_ context.Context, row string) (any, error) {
		return map[string]any{"id": row, "price": price}, nil
	}
	if err := store.ScheduleRowCache(ctx, "itemA", 5*time.Second); err != nil {
		return err
	}
	for _, step := range []string{"at once", "after 5 s"} {
		if step == "after 5 s" {
			price = 12
			clock.Advance(5 * time.Second)
		}
		if err := refreshRows(ctx, store, load); err != nil {
			return err
		}
		data, _, err := store.Row(ctx, "itemA")
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "row itemA %s: %s\n", step, data)
	}
	if err := store.ScheduleRowCache(ctx, "itemA", -1); err != nil { // stop caching
		return err
	}
	if err := refreshRows(ctx, store, load); err != nil {
		return err
	}
	_, ok, err = store.Row(ctx, "itemA")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "row itemA cached after unscheduling: %v\n", ok)

	// Rescaling keeps the top items and halves their counts.
	fmt.Fprintln(w, "== rescaling")
	if err := store.RescaleViews(ctx, 2, 0.5); err != nil {
		return err
	}
	top, err = store.TopItems(ctx, 3)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "after rescale(keep 2, factor 0.5): %v\n", top)

	// Cleaning removes the least recently seen sessions first.
	fmt.Fprintln(w, "== cleaning")
	removed, err := store.CleanSessions(ctx, 1, 100)
	if err != nil {
		return err
	}
	_, aliceOK, err := store.CheckToken(ctx, "token-alice")
	if err != nil {
		return err
	}
	_, bobOK, err := store.CheckToken(ctx, "token-bob")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "cleaned %d session(s) keeping 1: alice logged in %v, bob logged in %v\n", removed, aliceOK, bobOK)
	return nil
}

// refreshRows is one pass of what retail.RowCacher does in a loop; the
// tour makes the passes itself because RowCacher waits in real time.
func refreshRows(ctx context.Context, store retail.Store, load retail.RowLoader) error {
	rows, err := store.ClaimDueRows(ctx, retail.DefaultRowBatch)
	if err != nil {
		return err
	}
	for _, row := range rows {
		v, err := load(ctx, row)
		if err != nil {
			return err
		}
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		// Stores nothing if the row was unscheduled while it loaded.
		if _, err := store.SetScheduledRow(ctx, row, data); err != nil {
			return err
		}
	}
	return nil
}
