package retail_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
)

func topItems(t *testing.T, s retail.Views) []retail.ItemViews {
	t.Helper()
	top, err := s.TopItems(context.Background(), 100)
	if err != nil {
		t.Fatalf("TopItems(100) = %v", err)
	}
	return top
}

// newRescaler returns a ViewRescaler, failing the test if the options are
// refused.
func newRescaler(t *testing.T, s retail.Store, opts retail.ViewRescalerOptions) *retail.ViewRescaler {
	t.Helper()
	r, err := retail.NewViewRescaler(s, opts)
	if err != nil {
		t.Fatalf("NewViewRescaler(%+v) = %v", opts, err)
	}
	return r
}

func TestViewRescaler_ScalesCountsAndKeepsTop(t *testing.T) {
	s, _ := newStore(t)
	view(t, s, "a", 8)
	view(t, s, "b", 4)
	view(t, s, "c", 2)
	view(t, s, "d", 1)
	views := newFlakyViews(s, 0, nil)
	stop := start(t, newRescaler(t, views, retail.ViewRescalerOptions{Every: time.Millisecond, Keep: 2}))
	waitFor(t, "a first rescale", views.rescaled)
	if err := stop(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}

	// The rescaler may have run k >= 1 times before it stopped: every
	// count is then its original halved k times.
	k := views.count()
	want := []retail.ItemViews{{Item: "a", Views: math.Ldexp(8, -k)}, {Item: "b", Views: math.Ldexp(4, -k)}}
	if diff := cmp.Diff(want, topItems(t, s)); diff != "" {
		t.Errorf("TopItems after %d rescales mismatch (-want +got):\n%s", k, diff)
	}
}

// flakyViews fails the first failures rescales, and counts the others that
// succeed.
type flakyViews struct {
	retail.Store
	failWith error
	rescaled chan struct{} // closed by the first rescale that succeeds

	mu       sync.Mutex
	failures int
	rescales int
}

func newFlakyViews(s retail.Store, failures int, failWith error) *flakyViews {
	return &flakyViews{Store: s, failWith: failWith, failures: failures, rescaled: make(chan struct{})}
}

func (v *flakyViews) RescaleViews(ctx context.Context, keep int, factor float64) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.failures > 0 {
		v.failures--
		return v.failWith
	}
	// Under the lock, so that count is exact whenever it is read.
	err := v.Store.RescaleViews(ctx, keep, factor)
	if err == nil {
		if v.rescales == 0 {
			close(v.rescaled)
		}
		v.rescales++
	}
	return err
}

func (v *flakyViews) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.rescales
}

func TestViewRescaler_LogsAndRetriesErrors(t *testing.T) {
	s, _ := newStore(t)
	view(t, s, "a", 2)
	flaky := newFlakyViews(s, 1, errors.New("store hiccup"))
	var logs logRecorder
	stop := start(t, newRescaler(t, flaky, retail.ViewRescalerOptions{Every: time.Millisecond, Logger: logs.Logger()}))
	waitFor(t, "a rescale after the failure", flaky.rescaled)
	if err := stop(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	if got := logs.String(); strings.Count(got, "store hiccup") != 1 {
		t.Errorf("log = %q, want the error logged once", got)
	}
}

func TestViewRescaler_ReturnsNilOnCancel(t *testing.T) {
	s, _ := newStore(t)
	stop := start(t, newRescaler(t, s, retail.ViewRescalerOptions{Every: time.Hour}))
	if err := stop(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestViewRescaler_ReturnsErrClosed(t *testing.T) {
	s, _ := newStore(t)
	r := newRescaler(t, s, retail.ViewRescalerOptions{Every: time.Millisecond})
	s.Close()
	wantClosedError(t, "Run on a closed store", runToEnd(t, r), "Claim") // a rescaler asks for its turn first
}

func TestNewViewRescaler_RejectsInvalidOptions(t *testing.T) {
	s, _ := newStore(t)
	// Keep and Factor are checked by the rule RescaleViews applies, which
	// names them "keep" and "factor"; the Arg of those is not pinned here.
	for _, tc := range []struct {
		opts retail.ViewRescalerOptions
		arg  string
	}{
		{retail.ViewRescalerOptions{Every: -time.Nanosecond}, "Every"},
		{retail.ViewRescalerOptions{Keep: -1}, ""},
		{retail.ViewRescalerOptions{Factor: 1.5}, ""},
		{retail.ViewRescalerOptions{Factor: math.Nextafter(1, 2)}, ""},
		{retail.ViewRescalerOptions{Factor: -0.5}, ""},
		{retail.ViewRescalerOptions{Factor: math.NaN()}, ""},
		{retail.ViewRescalerOptions{Factor: math.Inf(1)}, ""},
	} {
		r, err := retail.NewViewRescaler(s, tc.opts)
		wantInputError(t, fmt.Sprintf("NewViewRescaler(%+v)", tc.opts), err, "NewViewRescaler", tc.arg)
		if r != nil {
			t.Errorf("NewViewRescaler(%+v) returned a rescaler with its error", tc.opts)
		}
	}
}

func TestNewViewRescaler_RejectsNilStore(t *testing.T) {
	r, err := retail.NewViewRescaler(nil, retail.ViewRescalerOptions{})
	wantInputError(t, "NewViewRescaler(nil, ...)", err, "NewViewRescaler", "store")
	if r != nil {
		t.Errorf("NewViewRescaler(nil, ...) returned a rescaler with its error")
	}
}
