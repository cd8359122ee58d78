package retail_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
	"github.com/retailkit/retail/internal/hooks"
)

// Servers wrap their Store, and backends their driver, to trace, time or
// fault-inject calls, by embedding the interface and overriding a method or
// two. These tests show that no such decorator turns off what the workers
// and the page cache rely on: taking turns with the workers of the other
// servers sharing the data, the counters behind Stats, repairs and the
// client cache's counts.

// tracingDriver decorates a backend's driver, as a wrapper that traces its
// calls does: it embeds driver.Store and overrides what it watches.
type tracingDriver struct {
	driver.Store
	rescales atomic.Int64
}

func (d *tracingDriver) RescaleViews(ctx context.Context, keep int, factor float64) error {
	d.rescales.Add(1)
	return d.Store.RescaleViews(ctx, keep, factor)
}

// tracingStore decorates a Store, as a user's wrapper does: it embeds
// retail.Store and overrides what it watches, here the workers' requests
// for their turn.
type tracingStore struct {
	retail.Store
	claims atomic.Int64
}

func (s *tracingStore) Claim(ctx context.Context, name, owner string, turn int64, hold time.Duration) (bool, error) {
	defer s.claims.Add(1)
	return s.Store.Claim(ctx, name, owner, turn, hold)
}

// TestViewRescaler_DecoratedServersOverOneBackendRescaleOncePerPeriod runs
// three servers over one backend (a driver whose data they share, as
// Redis's), each with its own Store over a decorator of the driver, and a
// ViewRescaler over a decorator of that Store: one of them rescales each
// period, as the book's single loop does, and the servers' Stats count
// those rescales and no others.
func TestViewRescaler_DecoratedServersOverOneBackendRescaleOncePerPeriod(t *testing.T) {
	const servers = 3
	const every = 2 * time.Millisecond // a real pause between wakes; periods follow the manual clock
	backend := &fakeDriver{}
	clock := retail.NewManualClock(epoch)
	drivers := make([]*tracingDriver, servers)
	stores := make([]*tracingStore, servers)
	for i := range servers {
		drivers[i] = &tracingDriver{Store: backend}
		stores[i] = &tracingStore{Store: unbuffered(drivers[i])}
		start(t, newRescaler(t, stores[i], retail.ViewRescalerOptions{Every: every, Clock: clock}))
	}
	for period := int64(1); period <= 3; period++ {
		// Once every rescaler has asked for its turn three more times,
		// each has seen this period and the one whose turn it is is done.
		before := make([]int64, servers)
		for i, s := range stores {
			before[i] = s.claims.Load()
		}
		for i, s := range stores {
			eventually(t, "every rescaler to ask for its turn", func() bool { return s.claims.Load() >= before[i]+3 })
		}
		var rescales, counted int64
		for i := range servers {
			rescales += drivers[i].rescales.Load()
			counted += int64(stores[i].Stats().Rescales)
		}
		if rescales != period {
			t.Fatalf("after %d periods, %d servers rescaled %d times, want %d", period, servers, rescales, period)
		}
		if counted != period {
			t.Errorf("after %d periods, the servers' Stats count %d rescales, want %d", period, counted, period)
		}
		clock.Advance(every)
	}
}

// TestStats_PoliciesOverADecoratedStoreCountIntoIt builds a PageCache and
// a RowCacher over a decorator of a Store that embeds nothing but the
// Store: what they count shows in the Store's Stats.
func TestStats_PoliciesOverADecoratedStoreCountIntoIt(t *testing.T) {
	type decorated struct{ retail.Store }
	ctx := context.Background()
	ms, _ := newRankedStore(t)
	s := decorated{ms}

	pages := newPageCache(t, s, retail.PageCacheOptions{})
	u := mustParse(t, "http://test.com/?item=itemX")
	for range 2 {
		if _, _, err := pages.Fetch(ctx, u, pageRender("page")); err != nil {
			t.Fatalf("Fetch(%s) = %v", u, err)
		}
	}
	hooks.CountPageBypass(pages) // as retailhttp.PageMiddleware does

	schedule(t, s, "row-1", time.Hour)
	rows := newRowCacher(t, s, func(_ context.Context, row string) (any, error) { return inventoryRow{ID: row}, nil }, retail.RowCacherOptions{Poll: time.Millisecond})
	start(t, rows)
	eventually(t, "the row to be cached", func() bool { _, ok := cachedRow(t, s, "row-1"); return ok })

	want := retail.Stats{PageHits: 1, PageMisses: 1, PageBypasses: 1, RowsRefreshed: 1}
	if diff := cmp.Diff(want, s.Stats()); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}
}

// TestStats_DriverDecoratorKeepsRepairsAndCacheCounts: a Store over a
// decorator of a driver repairs through it and reports the client cache's
// counts of the driver beneath.
func TestStats_DriverDecoratorKeepsRepairsAndCacheCounts(t *testing.T) {
	backend := &fakeDriver{repaired: 2}
	backend.hits.Store(7)
	backend.misses.Store(3)
	s := unbuffered(&tracingDriver{Store: backend})
	if n, err := s.RepairSessions(context.Background()); n != 2 || err != nil {
		t.Errorf("RepairSessions() = %d, %v, want 2, nil", n, err)
	}
	want := retail.Stats{SessionsRepaired: 2, ClientCacheHits: 7, ClientCacheMisses: 3}
	if diff := cmp.Diff(want, s.Stats()); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}
}
