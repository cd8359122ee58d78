package retail_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
)

// These tests hold a render until the other callers for the same page have
// read the cache and missed, so that they wait on that render instead of
// finding the page. Each caller's context names it, and the store tells the
// test once every caller has read. A caller that has read has not
// necessarily begun to wait yet, so one may still come after the render
// ended: what each test asserts holds for such late callers too.

// callerKey is the context key naming a caller.
type callerKey struct{}

func asCaller(ctx context.Context, id int) context.Context {
	return context.WithValue(ctx, callerKey{}, id)
}

// pageCountingStore notes which callers have read the page cache and tells
// a test when there are enough of them, without polling.
type pageCountingStore struct {
	retail.Store

	mu      sync.Mutex
	readers map[any]bool
	waits   []readWait
}

type readWait struct {
	n    int
	done chan struct{}
}

func (s *pageCountingStore) Page(ctx context.Context, key string) ([]byte, bool, error) {
	data, ok, err := s.Store.Page(ctx, key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readers == nil {
		s.readers = make(map[any]bool)
	}
	s.readers[ctx.Value(callerKey{})] = true
	waits := s.waits[:0]
	for _, w := range s.waits {
		if len(s.readers) >= w.n {
			close(w.done)
		} else {
			waits = append(waits, w)
		}
	}
	s.waits = waits
	return data, ok, err
}

// readersReach returns a channel that is closed once n callers have read.
func (s *pageCountingStore) readersReach(n int) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	done := make(chan struct{})
	if len(s.readers) >= n {
		close(done)
	} else {
		s.waits = append(s.waits, readWait{n, done})
	}
	return done
}

// holder makes renders that wait for release; started is closed when the
// first of them starts.
type holder struct {
	started, release chan struct{}
	once             sync.Once
}

func newHolder() *holder {
	return &holder{started: make(chan struct{}), release: make(chan struct{})}
}

func (h *holder) hold() {
	h.once.Do(func() { close(h.started) })
	<-h.release
}

// releaseWhenAllWait waits until a render has started and n callers have
// read the cache, and then releases the render.
func (h *holder) releaseWhenAllWait(t *testing.T, s *pageCountingStore, n int) {
	t.Helper()
	waitFor(t, "a render to start", h.started)
	waitFor(t, "every caller to miss", s.readersReach(n))
	close(h.release)
}

// newCountingCache returns a PageCache over a ranked store (see
// newRankedStore) that counts its reads, and the URL of a cacheable page.
func newCountingCache(t *testing.T) (*retail.PageCache, *pageCountingStore, *retail.ManualClock) {
	t.Helper()
	ms, clock := newRankedStore(t)
	s := &pageCountingStore{Store: ms}
	return newPageCache(t, s, retail.PageCacheOptions{}), s, clock
}

func TestPageCache_ConcurrentMissesRenderOnce(t *testing.T) {
	const callers = 50
	ctx := context.Background()
	c, s, _ := newCountingCache(t)
	u := mustParse(t, "http://test.com/?item=itemX")

	var renders atomic.Int64
	h := newHolder()
	render := func(context.Context) ([]byte, error) {
		renders.Add(1)
		h.hold()
		return []byte("page"), nil
	}
	var wg sync.WaitGroup
	bodies := make([]string, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() {
			body, _, err := c.CacheRequest(asCaller(ctx, i), u, render)
			bodies[i], errs[i] = string(body), err
		})
	}
	h.releaseWhenAllWait(t, s, callers)
	wg.Wait()

	if got := renders.Load(); got != 1 {
		t.Errorf("render calls = %d, want 1", got)
	}
	for i := range callers {
		if errs[i] != nil || bodies[i] != "page" {
			t.Errorf("caller %d: CacheRequest = %q, %v, want %q, nil", i, bodies[i], errs[i], "page")
		}
	}
}

// TestPageCache_FetchWaitersOwnTheirPages has callers share one render
// through Fetch: each gets the whole page, and a page of its own.
func TestPageCache_FetchWaitersOwnTheirPages(t *testing.T) {
	const callers = 8
	ctx := context.Background()
	c, s, _ := newCountingCache(t)
	u := mustParse(t, "http://test.com/?item=itemX")
	want := &retail.CachedPage{
		Status: 200,
		Header: map[string][]string{"Content-Type": {"text/html"}, "Vary": {"Accept", "Cookie"}},
		Body:   []byte("<p>page</p>"),
	}
	r := &pageRenderer{page: want}
	h := newHolder()
	render := func(ctx context.Context) (*retail.CachedPage, error) {
		h.hold()
		return r.render(ctx)
	}
	pages := make([]*retail.CachedPage, callers)
	hits := make([]bool, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { pages[i], hits[i], errs[i] = c.Fetch(asCaller(ctx, i), u, render) })
	}
	h.releaseWhenAllWait(t, s, callers)
	wg.Wait()

	if got := r.calls.Load(); got != 1 {
		t.Errorf("render calls = %d, want 1", got)
	}
	// Only the caller that rendered missed; the others were served its
	// page (or, if late, the cache).
	if misses := callers - countTrue(hits); misses != 1 {
		t.Errorf("Fetch hit = %v: %d misses, want 1", hits, misses)
	}
	for i := range callers {
		if errs[i] != nil {
			t.Errorf("caller %d: Fetch = %v, want nil error", i, errs[i])
		}
		if diff := cmp.Diff(want, pages[i], equatePages); diff != "" {
			t.Errorf("caller %d: Fetch page mismatch (-want +got):\n%s", i, diff)
		}
	}
	if t.Failed() {
		return
	}
	// Scribbling on one caller's page changes no other.
	pages[0].Body[0] = 'X'
	pages[0].Header["Vary"][0] = "changed"
	pages[0].Header["Added"] = []string{"x"}
	for i := 1; i < callers; i++ {
		if diff := cmp.Diff(want, pages[i], equatePages); diff != "" {
			t.Errorf("caller %d: page changed with caller 0's (-want +got):\n%s", i, diff)
		}
	}
}

// TestPageCache_FetchNilPageIsNotShared has the render of a page that the
// callers wait on return no page (it was personal, or already sent): each
// waiting caller then runs its own render, and nothing is cached.
func TestPageCache_FetchNilPageIsNotShared(t *testing.T) {
	const callers = 8
	ctx := context.Background()
	c, s, _ := newCountingCache(t)
	u := mustParse(t, "http://test.com/?item=itemX")

	h := newHolder()
	var first atomic.Bool
	renders := make([]atomic.Int64, callers) // by caller
	var wg sync.WaitGroup
	for i := range callers {
		render := func(context.Context) (*retail.CachedPage, error) {
			renders[i].Add(1)
			if first.CompareAndSwap(false, true) {
				h.hold()
			}
			return nil, nil
		}
		wg.Go(func() {
			if p, hit, err := c.Fetch(asCaller(ctx, i), u, render); p != nil || hit || err != nil {
				t.Errorf("caller %d: Fetch = %+v, %v, %v, want nil, false, nil", i, p, hit, err)
			}
		})
	}
	h.releaseWhenAllWait(t, s, callers)
	wg.Wait()

	for i := range callers {
		if got := renders[i].Load(); got != 1 {
			t.Errorf("caller %d: its render ran %d times, want 1", i, got)
		}
	}
	if hasPage(t, s, u) {
		t.Errorf("a page rendered as not shareable was cached")
	}
}

// TestPageCache_RenderErrorReachesWaiters fails a render that callers wait
// on: they all get its error, and nothing is cached. A late caller renders
// (and fails) itself, so the test asserts that most callers waited instead
// of rendering.
func TestPageCache_RenderErrorReachesWaiters(t *testing.T) {
	// In a bubble, synctest.Wait tells when every caller waits: the
	// first in its render, the others on its flight, none still on its
	// way to the flight (which would render again once the first failed).
	synctest.Test(t, func(t *testing.T) {
		const callers = 8
		ctx := context.Background()
		c, s, _ := newCountingCache(t)
		u := mustParse(t, "http://test.com/?item=itemX")

		errRender := errors.New("render failed")
		var renders atomic.Int64
		release := make(chan struct{})
		render := func(context.Context) ([]byte, error) {
			renders.Add(1)
			<-release
			return nil, errRender
		}
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				if body, hit, err := c.CacheRequest(asCaller(ctx, i), u, render); !errors.Is(err, errRender) || body != nil || hit {
					t.Errorf("caller %d: CacheRequest = %q, %v, %v, want nil, false, %v", i, body, hit, err, errRender)
				}
			})
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		if got := renders.Load(); got != 1 {
			t.Errorf("render calls = %d for %d callers, want 1", got, callers)
		}
		if hasPage(t, s, u) {
			t.Errorf("a failed render was cached")
		}
	})
}

func TestPageCache_CanceledRenderDoesNotFailWaiters(t *testing.T) {
	c, s, _ := newCountingCache(t)
	u := mustParse(t, "http://test.com/?item=itemX")

	var renders atomic.Int64
	rendering := make(chan struct{})
	release := make(chan struct{})
	render := func(ctx context.Context) ([]byte, error) {
		if renders.Add(1) == 1 {
			close(rendering)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-release:
			return []byte("page"), nil
		}
	}

	firstCtx, cancelFirst := context.WithCancel(asCaller(context.Background(), 0))
	defer cancelFirst()
	first := make(chan error, 1)
	go func() {
		_, _, err := c.CacheRequest(firstCtx, u, render)
		first <- err
	}()
	waitFor(t, "the first render to start", rendering)

	type result struct {
		body string
		err  error
	}
	missed := s.readersReach(2)
	second := make(chan result, 1)
	go func() {
		body, _, err := c.CacheRequest(asCaller(context.Background(), 1), u, render)
		second <- result{string(body), err}
	}()
	waitFor(t, "the second caller to miss", missed)
	cancelFirst()
	var err error
	waitFor(t, "the first caller to return", receive(first, &err))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("CacheRequest(canceled ctx) = %v, want %v", err, context.Canceled)
	}
	close(release)
	var got result
	waitFor(t, "the second caller to return", receive(second, &got))
	if got.err != nil || got.body != "page" {
		t.Errorf("CacheRequest(live ctx) = %q, %v, want %q, nil", got.body, got.err, "page")
	}
	if n := renders.Load(); n != 2 {
		t.Errorf("render calls = %d, want 2: the canceled one and the waiter's own", n)
	}
}

// receive returns a channel that is closed once a value from ch is stored
// in *v.
func receive[T any](ch <-chan T, v *T) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		*v = <-ch
		close(done)
	}()
	return done
}

func TestPageCache_RenderPanicReleasesThePage(t *testing.T) {
	ctx := context.Background()
	c, s, _ := newCountingCache(t)
	u := mustParse(t, "http://test.com/?item=itemX")

	// Callers wait on the render that panics: they get an error, not a
	// hang, and not the panic. A caller that came after the panic renders
	// itself instead, so at least one of them must have waited.
	const waiters = 4
	started, release := make(chan struct{}), make(chan struct{})
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		c.CacheRequest(asCaller(ctx, 0), u, func(context.Context) ([]byte, error) {
			close(started)
			<-release
			panic("boom")
		})
	}()
	waitFor(t, "the panicking render to start", started)
	missed := s.readersReach(1 + waiters)
	type result struct {
		body    string
		err     error
		renders int64
	}
	results := make(chan result, waiters)
	for i := range waiters {
		go func() {
			r := &renderer{body: "late"}
			body, _, err := c.CacheRequest(asCaller(ctx, 1+i), u, r.render)
			results <- result{string(body), err, r.calls.Load()}
		}()
	}
	waitFor(t, "the waiters to miss", missed)
	close(release)
	var got any
	waitFor(t, "the render to panic", receive(panicked, &got))
	if got != "boom" {
		t.Errorf("recover() = %v, want %q", got, "boom")
	}
	waited, late := 0, 0
	for i := range waiters {
		var r result
		waitFor(t, "a waiter to return", receive(results, &r))
		switch {
		case r.err != nil && r.body == "" && r.renders == 0:
			waited++
		case r.err == nil && r.body == "late" && r.renders <= 1:
			// It came after the panic, and rendered the page (or found
			// it cached by another late caller).
			late++
		default:
			t.Errorf("waiter %d: CacheRequest = %q, %v after rendering %d times, want an error (it waited) or the page (it came late)", i, r.body, r.err, r.renders)
		}
	}
	if waited == 0 {
		t.Errorf("no caller waited on the render that panicked, or none got an error from it")
	}

	// The page is not stuck: the next call renders it, unless a late
	// caller did.
	want := served{"page", false}
	if late > 0 {
		want = served{"late", true}
	}
	r := &renderer{body: "page"}
	body, hit, err := c.CacheRequest(ctx, u, r.render)
	if err != nil {
		t.Fatalf("CacheRequest after a panic = %v", err)
	}
	if diff := cmp.Diff(want, served{string(body), hit}); diff != "" {
		t.Errorf("CacheRequest after a panic mismatch (-want +got):\n%s", diff)
	}
}

// TestPageCache_DifferentPagesRenderIndependently holds the render of one
// page: another page's render neither waits for it nor shares it.
func TestPageCache_DifferentPagesRenderIndependently(t *testing.T) {
	ctx := context.Background()
	s, _ := newRankedStore(t)
	view(t, s, "itemY", 1)
	c := newPageCache(t, s, retail.PageCacheOptions{})
	held, other := mustParse(t, "http://test.com/?item=itemX"), mustParse(t, "http://test.com/?item=itemY")

	started, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		c.CacheRequest(ctx, held, func(context.Context) ([]byte, error) {
			close(started)
			<-release
			return []byte("held"), nil
		})
	}()
	waitFor(t, "the held render to start", started)
	r := &renderer{body: "other"}
	if body, hit, err := c.CacheRequest(ctx, other, r.render); err != nil || hit || string(body) != "other" {
		t.Errorf("CacheRequest(%s) = %q, %v, %v, want %q, false, nil", other, body, hit, err, "other")
	}
	close(release)
	waitFor(t, "the held render to end", done)
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
