package retail_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
	"github.com/retailkit/retail/driver"
	"github.com/retailkit/retail/internal/hooks"
)

// BenchmarkStats_CountParallel is what counting costs a request when every
// core counts into one Store at once: one contended atomic add.
func BenchmarkStats_CountParallel(b *testing.B) {
	s, err := memory.New(memory.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c, err := retail.NewPageCache(s, retail.PageCacheOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			hooks.CountPageBypass(c)
		}
	})
}

func BenchmarkStats_Snapshot(b *testing.B) {
	s, err := memory.New(memory.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		s.Stats()
	}
}

func TestStats_NewStoreCountsNothing(t *testing.T) {
	s, _ := newStore(t)
	if diff := cmp.Diff(retail.Stats{}, s.Stats()); diff != "" {
		t.Errorf("Stats of a new store mismatch (-want +got):\n%s", diff)
	}
}

// TestStats_CountsSessionCalls makes session calls of every kind on a
// memory Store and checks what each one counts.
func TestStats_CountsSessionCalls(t *testing.T) {
	ctx := context.Background()
	s, clock := newStore(t)
	mustStart := func(token, user string, want bool) {
		t.Helper()
		if created, err := s.StartSession(ctx, token, user); err != nil || created != want {
			t.Fatalf("StartSession(%q, %q) = %v, %v, want %v, nil", token, user, created, err, want)
		}
	}
	mustStart("guest", "", true)
	mustStart("alice-1", "alice", true)
	mustStart("alice-2", "alice", true)
	mustStart("guest", "", false) // exists: not counted
	// UpdateToken creates a session, RenewSession moves one: neither counts.
	if err := s.UpdateToken(ctx, "bob-1", "bob", "item-1"); err != nil {
		t.Fatalf("UpdateToken = %v", err)
	}
	if ok, err := s.RenewSession(ctx, "guest", "guest-renewed", "carol"); err != nil || !ok {
		t.Fatalf("RenewSession = %v, %v, want true, nil", ok, err)
	}
	// Two logouts count, one of a token without a session included.
	for _, token := range []string{"guest-renewed", "never-started"} {
		if err := s.Logout(ctx, token); err != nil {
			t.Fatalf("Logout(%q) = %v", token, err)
		}
	}
	if n, err := s.LogoutUser(ctx, "alice"); err != nil || n != 2 {
		t.Fatalf("LogoutUser(alice) = %d, %v, want 2, nil", n, err)
	}
	// Invalid calls reach no backend and count nothing.
	if _, err := s.StartSession(ctx, "", ""); !errors.Is(err, retail.ErrInvalid) {
		t.Fatalf("StartSession(\"\") = %v, want ErrInvalid", err)
	}
	if err := s.Logout(ctx, ""); !errors.Is(err, retail.ErrInvalid) {
		t.Fatalf("Logout(\"\") = %v, want ErrInvalid", err)
	}
	addSessions(t, s, clock, 4) // 5 sessions with bob-1
	if n, err := s.CleanSessions(ctx, 1, 3); err != nil || n != 3 {
		t.Fatalf("CleanSessions(1, 3) = %d, %v, want 3, nil", n, err)
	}
	if n, err := s.CleanSessions(ctx, 1, 3); err != nil || n != 1 {
		t.Fatalf("CleanSessions(1, 3) = %d, %v, want 1, nil", n, err)
	}

	want := retail.Stats{SessionsStarted: 3, Logouts: 2, LogoutUserSessions: 2, SessionsCleaned: 4}
	if diff := cmp.Diff(want, s.Stats()); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}
}

// TestStats_CountsWhatTheDriverReports checks the wrapper's counts against
// a fake driver's answers, failures included.
func TestStats_CountsWhatTheDriverReports(t *testing.T) {
	ctx := context.Background()
	d := &fakeDriver{}
	s := unbuffered(d)
	call := func(what string, err error) {
		t.Helper()
		if d.err == nil && err != nil {
			t.Fatalf("%s = %v, want nil", what, err)
		}
		if d.err != nil && !errors.As(err, new(*driverError)) {
			t.Fatalf("%s = %v, want the driver's error", what, err)
		}
	}

	d.status = driver.OK
	_, err := s.StartSession(ctx, "t1", "")
	call("StartSession (OK)", err)
	d.status = driver.Exists
	_, err = s.StartSession(ctx, "t2", "")
	call("StartSession (Exists)", err)
	d.count = 3
	_, err = s.LogoutUser(ctx, "alice")
	call("LogoutUser", err)
	d.removed = 5
	_, err = s.CleanSessions(ctx, 0, 10)
	call("CleanSessions", err)
	call("Logout", s.Logout(ctx, "t1"))
	call("RescaleViews", s.RescaleViews(ctx, 10, 0.5))

	// A failed call counts what the driver reported doing, and no more.
	d.err = &driverError{"boom"}
	d.status = driver.OK
	_, err = s.StartSession(ctx, "t3", "")
	call("StartSession (failed)", err)
	d.count = 1
	_, err = s.LogoutUser(ctx, "bob")
	call("LogoutUser (failed)", err)
	d.removed = 2
	_, err = s.CleanSessions(ctx, 0, 10)
	call("CleanSessions (failed)", err)
	call("Logout (failed)", s.Logout(ctx, "t1"))
	call("RescaleViews (failed)", s.RescaleViews(ctx, 10, 0.5))

	want := retail.Stats{SessionsStarted: 1, Logouts: 1, LogoutUserSessions: 4, SessionsCleaned: 7, Rescales: 1}
	if diff := cmp.Diff(want, s.Stats()); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}
}

func TestStats_ClientCacheCountsAreTheDriversAfterCloseToo(t *testing.T) {
	d := &fakeDriver{}
	s := unbuffered(d)
	d.hits.Store(7)
	d.misses.Store(3)
	want := retail.Stats{ClientCacheHits: 7, ClientCacheMisses: 3}
	if diff := cmp.Diff(want, s.Stats()); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	d.hits.Add(1)
	want.ClientCacheHits++
	if diff := cmp.Diff(want, s.Stats()); diff != "" {
		t.Errorf("Stats after Close mismatch (-want +got):\n%s", diff)
	}
}

// TestStats_CountsPageCacheOutcomes makes one request of each outcome
// through each of PageCache's methods and checks the counts.
func TestStats_CountsPageCacheOutcomes(t *testing.T) {
	ctx := context.Background()
	s, _ := newRankedStore(t) // itemX is ranked
	c := newPageCache(t, s, retail.PageCacheOptions{})
	cold := mustParse(t, "http://test.com/?item=cold") // never viewed: not cacheable
	itemX := mustParse(t, "http://test.com/?item=itemX")
	keyless := mustParse(t, "http://test.com/?item=itemX&junk=1") // an unknown parameter: no key
	r := &renderer{body: "page"}

	for _, tc := range []struct {
		u       string
		wantHit bool
	}{{cold.String(), false}, {itemX.String(), false}, {itemX.String(), true}} {
		if _, hit, err := c.CacheRequest(ctx, mustParse(t, tc.u), r.render); err != nil || hit != tc.wantHit {
			t.Fatalf("CacheRequest(%s) = _, %v, %v, want %v, nil", tc.u, hit, err, tc.wantHit)
		}
	}
	if _, _, err := c.Fetch(ctx, keyless, pageRender("p")); err != nil {
		t.Fatalf("Fetch(%s) = %v", keyless, err)
	}
	failure := errors.New("render failed")
	other := mustParse(t, "http://test.com/?item=other")
	if _, _, err := c.Fetch(ctx, other, func(context.Context) (*retail.CachedPage, error) { return nil, failure }); !errors.Is(err, failure) {
		t.Fatalf("Fetch(%s) with a failing render = %v, want %v", other, err, failure)
	}
	func() {
		defer func() { recover() }()
		c.Fetch(ctx, other, func(context.Context) (*retail.CachedPage, error) { panic("render panicked") })
	}()
	for _, tc := range []struct {
		u      *url.URL
		wantOK bool
	}{{itemX, true}, {other, false}, {keyless, false}} {
		if _, ok, err := c.Lookup(ctx, tc.u); err != nil || ok != tc.wantOK {
			t.Fatalf("Lookup(%s) = _, %v, %v, want %v, nil", tc.u, ok, err, tc.wantOK)
		}
	}
	hooks.CountPageBypass(c) // as retailhttp.PageMiddleware does

	want := retail.Stats{
		PageHits:     2, // CacheRequest of itemX, again; Lookup of itemX
		PageMisses:   4, // CacheRequest of itemX, first; Fetch failing, panicking; Lookup of other
		PageBypasses: 4, // CacheRequest of cold; Fetch and Lookup of keyless; the hook
	}
	if diff := cmp.Diff(want, s.Stats()); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}
}

// pageRender returns a render of a 200 page with body.
func pageRender(body string) func(context.Context) (*retail.CachedPage, error) {
	return func(context.Context) (*retail.CachedPage, error) {
		return &retail.CachedPage{Status: 200, Body: []byte(body)}, nil
	}
}

// readCountingStore counts every read of the page cache.
type readCountingStore struct {
	*pageCountingStore
	reads atomic.Int64
}

func (s *readCountingStore) Page(ctx context.Context, key string) ([]byte, bool, error) {
	s.reads.Add(1)
	return s.pageCountingStore.Page(ctx, key)
}

// TestStats_CountsCoalescedRenders has concurrent callers miss one page
// while its render is held (see flights_test.go). The callers that waited
// for that render are coalesced; a late caller, one that came to render
// after the first render ended, found the page on its second look instead.
// Every call but the first is a hit.
func TestStats_CountsCoalescedRenders(t *testing.T) {
	const callers = 20
	ctx := context.Background()
	ms, _ := newRankedStore(t)
	s := &readCountingStore{pageCountingStore: &pageCountingStore{Store: ms}}
	c := newPageCache(t, s, retail.PageCacheOptions{})
	u := mustParse(t, "http://test.com/?item=itemX")
	h := newHolder()
	render := func(ctx context.Context) (*retail.CachedPage, error) {
		h.hold()
		return pageRender("page")(ctx)
	}
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			if _, _, err := c.Fetch(asCaller(ctx, i), u, render); err != nil {
				t.Errorf("caller %d: Fetch = %v", i, err)
			}
		})
	}
	h.releaseWhenAllWait(t, s.pageCountingStore, callers)
	wg.Wait()

	// Every caller read once and missed; each that came to render (the
	// first, and the late ones) read once more before rendering.
	renderers := int(s.reads.Load()) - callers
	want := retail.Stats{PageHits: callers - 1, PageMisses: 1, CoalescedRenders: uint64(callers - renderers)}
	if diff := cmp.Diff(want, ms.Stats()); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}
	if renderers < 1 || renderers == callers {
		t.Errorf("%d of %d callers came to render: the test coalesced nothing", renderers, callers)
	}
}

// gatedCleanStore holds each cleaning pass until the test lets it run, and
// tells the test when one begins. It embeds the Store, as any decorator of
// a Store does, so a SessionCleaner over it counts into the Store's Stats.
type gatedCleanStore struct {
	retail.Store
	began   chan struct{}
	release chan struct{}
}

func (s *gatedCleanStore) CleanSessions(ctx context.Context, keep, max int) (int, error) {
	select {
	case s.began <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return s.Store.CleanSessions(ctx, keep, max)
}

// TestStats_CleanerCountsSessionsCleanedAndItsLag runs a SessionCleaner
// pass by pass over 10 sessions, keeping 2 and removing at most 3 a pass,
// and reads the Stats as each pass begins, when the previous one has
// measured its lag.
func TestStats_CleanerCountsSessionsCleanedAndItsLag(t *testing.T) {
	ms, clock := newStore(t)
	addSessions(t, ms, clock, 10)
	s := &gatedCleanStore{Store: ms, began: make(chan struct{}), release: make(chan struct{}, 1)}
	stop := start(t, newCleaner(t, s, retail.SessionCleanerOptions{Keep: 2, Batch: 3, Idle: time.Millisecond}))

	type counts struct{ Cleaned, Lag uint64 }
	var got []counts
	for range 4 {
		waitFor(t, "a cleaning pass to begin", s.began)
		st := ms.Stats()
		got = append(got, counts{st.SessionsCleaned, st.CleaningLag})
		s.release <- struct{}{}
	}
	if err := stop(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	// Passes remove 3, 3 and 2 sessions, leaving 7, 4 and 2; the fourth
	// pass would find nothing to remove.
	want := []counts{{0, 0}, {3, 5}, {6, 2}, {8, 0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SessionsCleaned and CleaningLag as each pass begins mismatch (-want +got):\n%s", diff)
	}
}

// claimSignalStore tells the test each time a RowCacher claims rows: the
// second claim begins once every row of the first was refreshed or failed.
type claimSignalStore struct {
	retail.Store
	claims chan struct{}
}

func (s *claimSignalStore) ClaimDueRows(ctx context.Context, limit int) ([]string, error) {
	select {
	case s.claims <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Store.ClaimDueRows(ctx, limit)
}

func TestStats_RowCacherCountsRowsRefreshed(t *testing.T) {
	for _, withOnChange := range []bool{false, true} {
		t.Run(fmt.Sprintf("OnChange=%v", withOnChange), func(t *testing.T) {
			ctx := context.Background()
			ms, _ := newStore(t)
			for _, row := range []string{"row-a", "row-b", "bad"} {
				if err := ms.ScheduleRowCache(ctx, row, time.Hour); err != nil {
					t.Fatalf("ScheduleRowCache(%q) = %v", row, err)
				}
			}
			s := &claimSignalStore{Store: ms, claims: make(chan struct{})}
			load := func(_ context.Context, row string) (any, error) {
				if row == "bad" {
					return nil, errors.New("no such row")
				}
				return row, nil
			}
			var logs logRecorder // the failed load is logged
			opts := retail.RowCacherOptions{Poll: time.Millisecond, Logger: logs.Logger()}
			if withOnChange {
				opts.OnChange = func(context.Context, string) error { return nil }
			}
			c, err := retail.NewRowCacher(s, load, opts)
			if err != nil {
				t.Fatalf("NewRowCacher = %v", err)
			}
			stop := start(t, c)
			waitFor(t, "the first claim", s.claims)
			waitFor(t, "the second claim", s.claims)
			if err := stop(); err != nil {
				t.Errorf("Run = %v, want nil", err)
			}
			if got := ms.Stats().RowsRefreshed; got != 2 {
				t.Errorf("Stats().RowsRefreshed = %d, want 2 (row-a and row-b; bad failed to load)", got)
			}
		})
	}
}

func TestStats_CountsRescales(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	for range 2 {
		if err := s.RescaleViews(ctx, 10, 0.5); err != nil {
			t.Fatalf("RescaleViews = %v", err)
		}
	}
	if err := s.RescaleViews(ctx, 10, 2); !errors.Is(err, retail.ErrInvalid) {
		t.Fatalf("RescaleViews(factor 2) = %v, want ErrInvalid", err)
	}
	if got := s.Stats().Rescales; got != 2 {
		t.Errorf("Stats().Rescales = %d, want 2", got)
	}
}

// TestStats_ConcurrentCountsAddUp counts from many goroutines at once while
// others read the Stats: run it under -race. No count is lost.
func TestStats_ConcurrentCountsAddUp(t *testing.T) {
	const goroutines, rounds = 8, 50
	ctx := context.Background()
	s, _ := newRankedStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	itemX := mustParse(t, "http://test.com/?item=itemX")
	cold := mustParse(t, "http://test.com/?item=cold")
	r := &renderer{body: "page"}
	if _, _, err := c.CacheRequest(ctx, itemX, r.render); err != nil {
		t.Fatalf("CacheRequest = %v", err)
	}

	done := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
					s.Stats()
				}
			}
		})
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range rounds {
				token := fmt.Sprintf("token-%d-%d", g, i)
				if _, err := s.StartSession(ctx, token, ""); err != nil {
					t.Errorf("StartSession = %v", err)
				}
				if _, _, err := c.CacheRequest(ctx, cold, r.render); err != nil {
					t.Errorf("CacheRequest(cold) = %v", err)
				}
				if _, ok, err := c.Lookup(ctx, itemX); err != nil || !ok {
					t.Errorf("Lookup(itemX) = _, %v, %v, want true, nil", ok, err)
				}
				if err := s.Logout(ctx, token); err != nil {
					t.Errorf("Logout = %v", err)
				}
				if err := s.RescaleViews(ctx, 100, 1); err != nil {
					t.Errorf("RescaleViews = %v", err)
				}
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()

	const n = goroutines * rounds
	want := retail.Stats{PageHits: n, PageMisses: 1, PageBypasses: n, SessionsStarted: n, Logouts: n, Rescales: n}
	if diff := cmp.Diff(want, s.Stats()); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}
}

func TestStats_CountingAndReadingAllocateNothing(t *testing.T) {
	s, _ := newStore(t)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	if n := testing.AllocsPerRun(100, func() { hooks.CountPageBypass(c) }); n != 0 {
		t.Errorf("hooks.CountPageBypass allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { s.Stats() }); n != 0 {
		t.Errorf("Stats allocates %v times, want 0", n)
	}
}
