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
		`CountViews("a"×5, "b"×1)`,
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
		if diff := cmp.Diff([]string{`CountViews("a"×1)`}, d.recorded()); diff != "" {
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
		want := []string{`CountViews("a"×3)`, `CountViews("a"×3)`, `CountViews("a"×3)`, `CountViews("a"×1)`}
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
	if diff := cmp.Diff([]string{`CountViews("a"×1)`}, d.recorded()); diff != "" {
		t.Errorf("calls reaching the driver mismatch (-want +got):\n%s", diff)
	}
	if d.closed() != 1 {
		t.Errorf("driver closed %d times, want 1", d.closed())
	}
}

func TestStore_FailedFlushKeepsTheViews(t *testing.T) {
	ctx := t.Context()
	derr := errors.New("connection refused")
	d := &fakeDriver{err: derr}
	s := retail.NewStoreWith(d, retail.StoreOptions{ViewFlush: time.Hour})
	if err := s.CountView(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushViews(ctx); !errors.Is(err, derr) {
		t.Fatalf("FlushViews() = %v, want the driver's error", err)
	}
	if err := s.CountView(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	d.err = nil
	d.mu.Unlock()
	if err := s.FlushViews(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{`CountViews("a"×1)`, `CountViews("a"×2)`}
	if diff := cmp.Diff(want, d.recorded()); diff != "" {
		t.Errorf("calls reaching the driver mismatch (-want +got):\n%s", diff)
	}
	if n := s.Stats().ViewFlushFailures; n != 1 {
		t.Errorf("Stats().ViewFlushFailures = %d, want 1", n)
	}
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
	if diff := cmp.Diff([]string{`CountViews("a"×1)`}, d.recorded()); diff != "" {
		t.Errorf("calls reaching the driver mismatch (-want +got):\n%s", diff)
	}
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
