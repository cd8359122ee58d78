package retail_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
)

// A Store adds up the views of its process and sends them as one
// increment per item, before any call that reads or rescales the counts.
func TestStore_AddsUpViewsUntilTheyAreRead(t *testing.T) {
	ctx := t.Context()
	d := &fakeDriver{ok: true}
	s := retail.NewStoreWith(d, retail.StoreOptions{ViewFlush: time.Hour})
	for range 3 {
		if err := s.CountView(ctx, "a"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CountView(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateToken(ctx, "tok", "alice", "a"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.RefreshSession(ctx, "tok", "a"); err != nil {
		t.Fatal(err)
	}
	d.ok = false // a refresh that finds no session counts no view
	if _, _, err := s.RefreshSession(ctx, "gone", "c"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ItemRank(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TopItems(ctx, 5); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`UpdateToken(id(?), "alice", "a")`,
		`RefreshSession(id(?), "a")`,
		`RefreshSession(id(?), "c")`,
		`CountViews(#1: "a"×5, "b"×1)`,
		`ItemRank("a")`,
		`TopItems(5)`,
	}
	if diff := cmp.Diff(want, d.recorded()); diff != "" {
		t.Errorf("calls reaching the driver mismatch (-want +got):\n%s", diff)
	}
}

// A Store sends a view once the window that it opened ends. The test runs
// in a bubble, so that the window's timer is on the bubble's fake clock
// and synctest.Wait tells when it has run.
func TestStore_SendsViewsWithinTheWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fakeDriver{}
		s := retail.NewStoreWith(d, retail.StoreOptions{ViewFlush: 5 * time.Millisecond})
		defer s.Close()
		if err := s.CountView(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		if got := d.recorded(); len(got) != 0 {
			t.Errorf("calls before the window ended: %q, want none", got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if diff := cmp.Diff([]string{`CountViews(#1: "a"×1)`}, d.recorded()); diff != "" {
			t.Errorf("calls reaching the driver once the window ended (-want +got):\n%s", diff)
		}
	})
}

// A window opens with the first view of a buffer that held none: views of
// the same item arriving within the window do not put its end off, so a
// steady stream of views of one item is still sent every ViewFlush.
func TestStore_SteadyViewsOfOneItemAreSentEachWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fakeDriver{}
		s := retail.NewStoreWith(d, retail.StoreOptions{ViewFlush: 5 * time.Millisecond})
		defer s.Close()
		for range 10 {
			if err := s.CountView(t.Context(), "a"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		// Views at 0, 2, ... 18 ms: windows open at 0, 6, 12 and 18 ms,
		// each with the views of the next 5 ms.
		want := []string{`CountViews(#1: "a"×3)`, `CountViews(#2: "a"×3)`, `CountViews(#3: "a"×3)`, `CountViews(#4: "a"×1)`}
		if diff := cmp.Diff(want, d.recorded()); diff != "" {
			t.Errorf("calls reaching the driver (-want +got):\n%s", diff)
		}
	})
}

func TestStore_CloseSendsTheViewsLeft(t *testing.T) {
	d := &fakeDriver{}
	s := retail.NewStoreWith(d, retail.StoreOptions{ViewFlush: time.Hour})
	if err := s.CountView(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{`CountViews(#1: "a"×1)`}, d.recorded()); diff != "" {
		t.Errorf("calls reaching the driver mismatch (-want +got):\n%s", diff)
	}
	if d.closed() != 1 {
		t.Errorf("driver closed %d times, want 1", d.closed())
	}
}

// A flush that fails is sent again as it was, under its number, before
// the views counted since, which go in the next flush: a driver that was
// told the first time after all counts it once (see driver.ViewFlush).
func TestStore_FailedFlushIsSentAgainAsItWas(t *testing.T) {
	ctx := t.Context()
	d := &fakeDriver{err: context.DeadlineExceeded}
	s := retail.NewStoreWith(d, retail.StoreOptions{ViewFlush: time.Hour})
	if err := s.CountView(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushViews(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("FlushViews() = %v, want the driver's error", err)
	}
	for _, item := range []string{"a", "b"} {
		if err := s.CountView(ctx, item); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FlushViews(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("FlushViews() = %v, want the driver's error", err)
	}
	d.mu.Lock()
	d.err = nil
	d.mu.Unlock()
	if err := s.FlushViews(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushViews(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`CountViews(#1: "a"×1)`,
		`CountViews(#1: "a"×1)`, // the failed flush again; the new views wait
		`CountViews(#1: "a"×1)`,
		`CountViews(#2: "a"×1, "b"×1)`,
	}
	if diff := cmp.Diff(want, d.recorded()); diff != "" {
		t.Errorf("calls reaching the driver mismatch (-want +got):\n%s", diff)
	}
	if n := s.Stats().ViewFlushFailures; n != 2 {
		t.Errorf("Stats().ViewFlushFailures = %d, want 2", n)
	}
}

// blockingViews is a driver whose CountViews waits for release.
type blockingViews struct {
	*fakeDriver
	entered chan struct{}
	release chan struct{}
}

func (d *blockingViews) CountViews(ctx context.Context, flush driver.ViewFlush, views []driver.ItemViews) error {
	d.entered <- struct{}{}
	<-d.release
	return d.fakeDriver.CountViews(ctx, flush, views)
}

// A call that must flush first while another flush hangs in the driver
// (its server stalls) returns when its own context ends, not when the
// other flush does. On synctest's clock, so that the deadline passes
// while the call waits, however slow the machine.
func TestStore_FlushWaitsForTheRunningOneOnlyAsLongAsItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &blockingViews{fakeDriver: &fakeDriver{}, entered: make(chan struct{}, 1), release: make(chan struct{})}
		s := retail.NewStoreWith(d, retail.StoreOptions{ViewFlush: time.Hour})
		if err := s.CountView(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		first := make(chan error, 1)
		go func() { first <- s.FlushViews(context.Background()) }()
		<-d.entered
		if err := s.CountView(t.Context(), "b"); err != nil {
			t.Fatal(err)
		}
		for _, call := range []struct {
			name string
			run  func(ctx context.Context) error
		}{
			{"FlushViews", s.FlushViews},
			{"ItemRank", func(ctx context.Context) error { _, _, err := s.ItemRank(ctx, "b"); return err }},
			{"TopItems", func(ctx context.Context) error { _, err := s.TopItems(ctx, 10); return err }},
			{"RescaleViews", func(ctx context.Context) error { return s.RescaleViews(ctx, 10, 0.5) }},
		} {
			// The deadline ends while the call waits (a context that has
			// ended already is refused before any flush).
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			done := make(chan error, 1)
			go func() { done <- call.run(ctx) }()
			select {
			case err := <-done:
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("%s past its deadline = %v, want context.DeadlineExceeded", call.name, err)
				}
			case <-time.After(10 * time.Second):
				cancel()
				t.Fatalf("%s did not return when its deadline passed: it waits for the flush hanging in the driver", call.name)
			}
		}
		close(d.release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if err := s.FlushViews(t.Context()); err != nil {
			t.Fatal(err)
		}
		want := []string{`CountViews(#1: "a"×1)`, `CountViews(#2: "b"×1)`}
		if diff := cmp.Diff(want, d.recorded()); diff != "" {
			t.Errorf("calls reaching the driver mismatch (-want +got):\n%s", diff)
		}
	})
}

// A ViewRescaler that stops stores the views its process added up.
func TestViewRescaler_StoresTheViewsLeftWhenItStops(t *testing.T) {
	d := &fakeDriver{}
	s := retail.NewStoreWith(d, retail.StoreOptions{ViewFlush: time.Hour})
	if err := s.CountView(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	r, err := retail.NewViewRescaler(s, retail.ViewRescalerOptions{Every: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatalf("Run() = %v, want nil", err)
	}
	eventually(t, "the views to reach the driver", func() bool { return len(d.recorded()) > 0 })
	if diff := cmp.Diff([]string{`CountViews(#1: "a"×1)`}, d.recorded()); diff != "" {
		t.Errorf("calls reaching the driver mismatch (-want +got):\n%s", diff)
	}
}

// A ViewRescaler whose last flush hangs (the server stalls) returns when
// its context ends all the same; the Store's Close waits for the flush.
func TestViewRescaler_ReturnsWhileItsLastFlushHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &blockingViews{fakeDriver: &fakeDriver{}, entered: make(chan struct{}, 1), release: make(chan struct{})}
		s := retail.NewStoreWith(d, retail.StoreOptions{ViewFlush: time.Hour})
		if err := s.CountView(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		r, err := retail.NewViewRescaler(s, retail.ViewRescalerOptions{Every: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := r.Run(ctx); err != nil {
			t.Fatalf("Run() = %v, want nil", err)
		}
		<-d.entered // the last flush is running, and hangs until released
		closed := make(chan error, 1)
		go func() { closed <- s.Close() }()
		synctest.Wait()
		select {
		case err := <-closed:
			t.Fatalf("Close() = %v before the hanging flush ended", err)
		default:
		}
		close(d.release)
		if err := <-closed; err != nil {
			t.Fatalf("Close() = %v", err)
		}
		if diff := cmp.Diff([]string{`CountViews(#1: "a"×1)`}, d.recorded()); diff != "" {
			t.Errorf("calls reaching the driver mismatch (-want +got):\n%s", diff)
		}
	})
}

// blockingRefreshDriver is a fakeDriver whose RefreshSession waits for a
// signal, so that a test can close the Store while a refresh runs.
type blockingRefreshDriver struct {
	*fakeDriver
	entered chan struct{}
	release chan struct{}
}

func (d *blockingRefreshDriver) RefreshSession(ctx context.Context, token, item string) (string, bool, error) {
	close(d.entered)
	<-d.release
	return d.fakeDriver.RefreshSession(ctx, token, item)
}

// A view counted by a RefreshSession that runs while Close runs, and that
// reports success, reaches the driver before the call returns: Close may
// have flushed the buffer already, and no timer is left to send it.
func TestStore_ViewCountedDuringCloseReachesTheDriver(t *testing.T) {
	d := &blockingRefreshDriver{fakeDriver: &fakeDriver{ok: true}, entered: make(chan struct{}), release: make(chan struct{})}
	s := retail.NewStoreWith(d, retail.StoreOptions{ViewFlush: 10 * time.Millisecond})
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		_, ok, err := s.RefreshSession(context.Background(), "tok", "kettle")
		done <- result{ok, err}
	}()
	<-d.entered
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	close(d.release)
	r := <-done
	if r.err != nil || !r.ok {
		t.Fatalf("RefreshSession during Close = %v, %v; want true, nil: the call had passed the closed check", r.ok, r.err)
	}
	if sent := slices.ContainsFunc(d.recorded(), func(c string) bool { return strings.HasPrefix(c, "CountViews(") }); !sent {
		t.Fatalf("RefreshSession reported success during Close, but its view never reached the driver: %q", d.recorded())
	}
}

// A window opened while a long flush runs is flushed once that flush ends,
// even though the timer's flush gave up waiting for it: the views do not
// wait for the next read or Close.
func TestStore_ViewsOfAWindowHeldOffByALongFlushAreStillSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &blockingViews{fakeDriver: &fakeDriver{}, entered: make(chan struct{}, 1), release: make(chan struct{})}
		s := retail.NewStoreWith(d, retail.StoreOptions{ViewFlush: time.Second})
		if err := s.CountView(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		first := make(chan error, 1)
		go func() { first <- s.FlushViews(context.Background()) }() // a read with no deadline, its server stalled
		<-d.entered
		if err := s.CountView(t.Context(), "b"); err != nil { // opens a window
			t.Fatal(err)
		}
		time.Sleep(12 * time.Second) // the timer's flush waited 10 s for the first, and gave up
		synctest.Wait()
		close(d.release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		go func() {
			for range d.entered {
			}
		}()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		want := []string{`CountViews(#1: "a"×1)`, `CountViews(#2: "b"×1)`}
		if diff := cmp.Diff(want, d.recorded()); diff != "" {
			t.Errorf("calls reaching the driver mismatch (-want +got):\n%s", diff)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		close(d.entered)
	})
}
