package retail_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
)

// inventoryRow is what the test loaders return for a row.
type inventoryRow struct {
	ID      string `json:"id"`
	Version int64  `json:"version"`
}

func schedule(t *testing.T, s retail.Rows, row string, delay time.Duration) {
	t.Helper()
	if err := s.ScheduleRowCache(context.Background(), row, delay); err != nil {
		t.Fatalf("ScheduleRowCache(%q, %v) = %v", row, delay, err)
	}
}

// cachedRow returns the decoded cached copy of row, if there is one.
func cachedRow(t *testing.T, s retail.Rows, row string) (inventoryRow, bool) {
	t.Helper()
	data, ok, err := s.Row(context.Background(), row)
	if err != nil {
		t.Fatalf("Row(%q) = %v", row, err)
	}
	var v inventoryRow
	if ok {
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("Row(%q) = %q, not the JSON of a row: %v", row, data, err)
		}
	}
	return v, ok
}

// newRowCacher returns a RowCacher, failing the test if the options are
// refused.
func newRowCacher(t *testing.T, s retail.Store, load retail.RowLoader, opts retail.RowCacherOptions) *retail.RowCacher {
	t.Helper()
	c, err := retail.NewRowCacher(s, load, opts)
	if err != nil {
		t.Fatalf("NewRowCacher(%+v) = %v", opts, err)
	}
	return c
}

func noLoad(context.Context, string) (any, error) { return nil, nil }

func TestRowCacher_RefreshesScheduledRow(t *testing.T) {
	s, clock := newStore(t)
	var version atomic.Int64
	version.Store(1)
	load := func(_ context.Context, row string) (any, error) {
		return inventoryRow{ID: row, Version: version.Load()}, nil
	}
	schedule(t, s, "inv:1", 10*time.Second)
	stop := start(t, newRowCacher(t, s, load, retail.RowCacherOptions{Poll: time.Millisecond}))

	eventually(t, "the row to be cached", func() bool { _, ok := cachedRow(t, s, "inv:1"); return ok })
	got, _ := cachedRow(t, s, "inv:1")
	if diff := cmp.Diff(inventoryRow{"inv:1", 1}, got); diff != "" {
		t.Errorf("Row(inv:1) mismatch (-want +got):\n%s", diff)
	}

	version.Store(2)
	clock.Advance(10 * time.Second)
	eventually(t, "the row to be refreshed after its delay", func() bool {
		got, _ := cachedRow(t, s, "inv:1")
		return got.Version == 2
	})

	schedule(t, s, "inv:1", -1)
	// Due now or at the end of its last delay, whichever a Store picks:
	// either way the next claim sees it and deletes the copy.
	clock.Advance(10 * time.Second)
	eventually(t, "the cached copy to be deleted", func() bool { _, ok := cachedRow(t, s, "inv:1"); return !ok })

	if err := stop(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestRowCacher_KeepsGoingAfterLoadErrors(t *testing.T) {
	s, clock := newStore(t)
	var failBad atomic.Bool
	failBad.Store(true)
	load := func(_ context.Context, row string) (any, error) {
		switch {
		case row == "bad" && failBad.Load():
			return nil, errors.New("database down")
		case row == "unencodable":
			return make(chan int), nil
		}
		return inventoryRow{ID: row, Version: 1}, nil
	}
	for _, row := range []string{"bad", "unencodable", "good"} {
		schedule(t, s, row, 10*time.Second)
	}
	var logs logRecorder
	stop := start(t, newRowCacher(t, s, load, retail.RowCacherOptions{Poll: time.Millisecond, Logger: logs.Logger()}))

	eventually(t, "the good row to be cached", func() bool { _, ok := cachedRow(t, s, "good"); return ok })
	eventually(t, "both failures to be logged", func() bool {
		l := logs.String()
		return strings.Contains(l, "row=bad") && strings.Contains(l, "database down") && strings.Contains(l, "row=unencodable")
	})
	for _, row := range []string{"bad", "unencodable"} {
		if _, ok := cachedRow(t, s, row); ok {
			t.Errorf("Row(%q) found a cached copy, want none", row)
		}
	}

	// The failed row stayed scheduled: once its loader works, the next
	// period caches it.
	failBad.Store(false)
	clock.Advance(10 * time.Second)
	eventually(t, "the failed row to be cached a period later", func() bool { _, ok := cachedRow(t, s, "bad"); return ok })

	if err := stop(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestRowCacher_ClaimsAgainAtOnceAfterFullBatch(t *testing.T) {
	s, _ := newStore(t)
	rows := []string{"r1", "r2", "r3"}
	for _, row := range rows {
		schedule(t, s, row, time.Minute)
	}
	load := func(_ context.Context, row string) (any, error) { return inventoryRow{ID: row}, nil }
	// An hour's poll: the test finishes only if full batches are followed
	// by another claim at once.
	stop := start(t, newRowCacher(t, s, load, retail.RowCacherOptions{Poll: time.Hour, Batch: 1}))
	for _, row := range rows {
		eventually(t, "row "+row+" to be cached", func() bool { _, ok := cachedRow(t, s, row); return ok })
	}
	if err := stop(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestRowCacher_ConcurrentCachersLoadEachDueRowOnce(t *testing.T) {
	s, _ := newStore(t)
	var rows []string
	for i := range 50 {
		rows = append(rows, fmt.Sprintf("row%02d", i))
		schedule(t, s, rows[i], time.Minute)
	}
	var mu sync.Mutex
	loads := make(map[string]int)
	load := func(_ context.Context, row string) (any, error) {
		mu.Lock()
		loads[row]++
		mu.Unlock()
		return inventoryRow{ID: row}, nil
	}
	opts := retail.RowCacherOptions{Poll: time.Millisecond, Batch: 3}
	stop1 := start(t, newRowCacher(t, s, load, opts))
	stop2 := start(t, newRowCacher(t, s, load, opts))
	for _, row := range rows {
		eventually(t, "row "+row+" to be cached", func() bool { _, ok := cachedRow(t, s, row); return ok })
	}
	if err := errors.Join(stop1(), stop2()); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}

	want := make(map[string]int)
	for _, row := range rows {
		want[row] = 1
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, loads); diff != "" {
		t.Errorf("loads per row, with the clock stopped (-want +got):\n%s", diff)
	}
}

func TestRowCacher_ReturnsNilOnCancel(t *testing.T) {
	s, _ := newStore(t)
	stop := start(t, newRowCacher(t, s, noLoad, retail.RowCacherOptions{Poll: time.Hour}))
	if err := stop(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestRowCacher_ReturnsErrClosed(t *testing.T) {
	s, _ := newStore(t)
	c := newRowCacher(t, s, noLoad, retail.RowCacherOptions{})
	s.Close()
	wantClosedError(t, "Run on a closed store", runToEnd(t, c), "ClaimDueRows")
}

// TestRowCacher_ReturnsErrClosedFromSetScheduledRow closes the store while
// a row is loading: the SetScheduledRow that follows fails with ErrClosed,
// and Run returns that error instead of logging it and going on.
func TestRowCacher_ReturnsErrClosedFromSetScheduledRow(t *testing.T) {
	s, _ := newStore(t)
	schedule(t, s, "row", time.Minute)
	load := func(_ context.Context, row string) (any, error) {
		s.Close()
		return inventoryRow{ID: row}, nil
	}
	c := newRowCacher(t, s, load, retail.RowCacherOptions{Poll: time.Hour})
	wantClosedError(t, "Run with the store closed during a load", runToEnd(t, c), "SetScheduledRow")
}

func TestNewRowCacher_RejectsInvalidOptions(t *testing.T) {
	s, _ := newStore(t)
	for _, tc := range []struct {
		opts retail.RowCacherOptions
		arg  string
	}{
		{retail.RowCacherOptions{Poll: -time.Nanosecond}, "Poll"},
		{retail.RowCacherOptions{Batch: -1}, "Batch"},
		{retail.RowCacherOptions{Batch: retail.MaxClaimRows + 1}, "Batch"},
	} {
		c, err := retail.NewRowCacher(s, noLoad, tc.opts)
		wantInputError(t, fmt.Sprintf("NewRowCacher(%+v)", tc.opts), err, "NewRowCacher", tc.arg)
		if c != nil {
			t.Errorf("NewRowCacher(%+v) returned a cacher with its error", tc.opts)
		}
	}
}

func TestNewRowCacher_AcceptsLimits(t *testing.T) {
	s, _ := newStore(t)
	for _, opts := range []retail.RowCacherOptions{
		{Poll: time.Nanosecond, Batch: 1},
		{Batch: retail.MaxClaimRows},
	} {
		if _, err := retail.NewRowCacher(s, noLoad, opts); err != nil {
			t.Errorf("NewRowCacher(%+v) = %v, want nil", opts, err)
		}
	}
}

func TestNewRowCacher_RejectsNilStore(t *testing.T) {
	c, err := retail.NewRowCacher(nil, noLoad, retail.RowCacherOptions{})
	wantInputError(t, "NewRowCacher(nil, load, ...)", err, "NewRowCacher", "store")
	if c != nil {
		t.Errorf("NewRowCacher(nil, load, ...) returned a cacher with its error")
	}
}

func TestNewRowCacher_RejectsNilLoader(t *testing.T) {
	s, _ := newStore(t)
	c, err := retail.NewRowCacher(s, nil, retail.RowCacherOptions{})
	wantInputError(t, "NewRowCacher(s, nil, ...)", err, "NewRowCacher", "load")
	if c != nil {
		t.Errorf("NewRowCacher(s, nil, ...) returned a cacher with its error")
	}
}

// TestRowCacher_OnChangePurgesItemPagesWhenRowChanges: OnChange is called
// when a refresh changes a row, and not for its first caching or a refresh
// with the same data; wired to PageCache.PurgeItem, as the shop does, it
// purges the item's cached pages at once.
func TestRowCacher_OnChangePurgesItemPagesWhenRowChanges(t *testing.T) {
	ctx := context.Background()
	s, clock := newRankedStore(t) // itemX is ranked: its page is cached
	pages := newPageCache(t, s, retail.PageCacheOptions{})
	u := mustParse(t, "http://shop.test/item?item=itemX")
	other := mustParse(t, "http://shop.test/item?item=itemY")
	view(t, s, "itemY", 1)
	cache := func(u *url.URL) {
		t.Helper()
		r := &renderer{body: "page"}
		if _, _, err := pages.CacheRequest(ctx, u, r.render); err != nil {
			t.Fatalf("CacheRequest(%s) = %v", u, err)
		}
		if !hasPage(t, s, u) {
			t.Fatalf("CacheRequest(%s) cached no page", u)
		}
	}
	cache(u)
	cache(other)

	var price, loads atomic.Int64
	price.Store(100)
	load := func(_ context.Context, row string) (any, error) {
		loads.Add(1)
		return map[string]any{"id": row, "price": price.Load()}, nil
	}
	var (
		mu      sync.Mutex
		changed []string
	)
	onChange := func(ctx context.Context, row string) error {
		mu.Lock()
		changed = append(changed, row)
		mu.Unlock()
		_, err := pages.PurgeItem(ctx, row)
		return err
	}
	changes := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(changed)
	}
	schedule(t, s, "itemX", 10*time.Second)
	start(t, newRowCacher(t, s, load, retail.RowCacherOptions{Poll: time.Millisecond, OnChange: onChange}))

	// The rows are refreshed one after another, so once load n+1 has
	// started, refresh n is done.
	waitLoads := func(n int64) {
		t.Helper()
		eventually(t, fmt.Sprintf("%d loads", n), func() bool { return loads.Load() >= n })
	}
	waitLoads(1)
	clock.Advance(10 * time.Second)
	waitLoads(2) // the first caching is done
	clock.Advance(10 * time.Second)
	waitLoads(3) // a refresh with the same data is done
	if got := changes(); !hasPage(t, s, u) || len(got) != 0 {
		t.Fatalf("after caching the row and refreshing it unchanged: page cached %v, OnChange called for %q; want true, none",
			hasPage(t, s, u), got)
	}

	price.Store(90)
	clock.Advance(10 * time.Second)
	eventually(t, "the changed row to purge the item's page", func() bool { return !hasPage(t, s, u) })
	if diff := cmp.Diff([]string{"itemX"}, changes()); diff != "" {
		t.Errorf("rows OnChange was called for mismatch (-want +got):\n%s", diff)
	}
	if !hasPage(t, s, other) {
		t.Errorf("the page of another item was purged too")
	}
	if got, _, _ := s.Row(ctx, "itemX"); !strings.Contains(string(got), `"price":90`) {
		t.Errorf("Row(itemX) = %s, want the new price", got)
	}
	cache(u) // the new page is cached again
}

// TestRowCacher_LogsOnChangeFailures: an error from OnChange is logged
// with the row, the changed row stays stored, and the cacher goes on.
func TestRowCacher_LogsOnChangeFailures(t *testing.T) {
	ctx := context.Background()
	s, clock := newStore(t)
	var version atomic.Int64
	version.Store(1)
	load := func(_ context.Context, row string) (any, error) {
		return inventoryRow{ID: row, Version: version.Load()}, nil
	}
	onChange := func(context.Context, string) error { return errors.New("purge failed") }
	schedule(t, s, "row-1", 10*time.Second)
	var logs logRecorder
	start(t, newRowCacher(t, s, load, retail.RowCacherOptions{Poll: time.Millisecond, Logger: logs.Logger(), OnChange: onChange}))
	eventually(t, "the row to be cached", func() bool { _, ok := cachedRow(t, s, "row-1"); return ok })

	version.Store(2)
	clock.Advance(10 * time.Second)
	eventually(t, "the OnChange failure to be logged", func() bool {
		l := logs.String()
		return strings.Contains(l, "row=row-1") && strings.Contains(l, "OnChange: purge failed")
	})
	if got, _, _ := s.Row(ctx, "row-1"); !strings.Contains(string(got), `"version":2`) {
		t.Errorf("Row(row-1) = %s, want version 2", got)
	}
}

// A RowCacher whose claims fail (Redis down) asks less and less often, up
// to every 5 s, rather than at every Poll: an outage neither floods the
// log nor loads the server as it comes back. Once a claim succeeds, it
// polls every Poll again.
func TestRowCacher_BacksOffWhileClaimsFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fakeDriver{failOn: map[string]error{"ClaimDueRows": errors.New("connection refused")}}
		s := retail.NewStoreWith(d, retail.StoreOptions{})
		defer s.Close()
		var logs bytes.Buffer
		c, err := retail.NewRowCacher(s, func(context.Context, string) (any, error) { return nil, nil },
			retail.RowCacherOptions{Poll: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		claims := func() int { return strings.Count(strings.Join(d.recorded(), "\n"), "ClaimDueRows") }
		time.Sleep(time.Minute)
		synctest.Wait()
		// 50 ms doubling to 5 s: 7 pauses take 6.35 s, then one every 5 s.
		if n := claims(); n < 10 || n > 20 {
			t.Errorf("claims in a minute of failures = %d, want 10..20 (1,200 at every Poll)", n)
		}
		d.mu.Lock()
		d.failOn = nil
		d.mu.Unlock()
		time.Sleep(5 * time.Second) // the longest pause, then claims that succeed
		before := claims()
		time.Sleep(time.Second)
		synctest.Wait()
		if n := claims() - before; n < 19 {
			t.Errorf("claims in a second after the failures ended = %d, want about 20 (every Poll)", n)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	})
}
