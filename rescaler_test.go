package retail_test

import (
	"context"
	"errors"
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

func TestViewRescaler_ScalesCountsAndKeepsTop(t *testing.T) {
	s, _ := newStore(t)
	view(t, s, "a", 8)
	view(t, s, "b", 4)
	view(t, s, "c", 2)
	view(t, s, "d", 1)
	stop := start(t, retail.NewViewRescaler(s, retail.ViewRescalerOptions{Every: time.Millisecond, Keep: 2}))
	eventually(t, "items past the top 2 to be dropped", func() bool { return len(topItems(t, s)) == 2 })
	if err := stop(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}

	// The rescaler may have run any number k >= 1 of times: every count is
	// then its original halved k times.
	top := topItems(t, s)
	if len(top) != 2 {
		t.Fatalf("TopItems = %v, want 2 items", top)
	}
	scale := 8 / top[0].Views
	if _, exp := math.Frexp(scale); scale < 2 || scale != math.Ldexp(1, exp-1) {
		t.Fatalf("TopItems = %v, want a's 8 views halved one or more times", top)
	}
	want := []retail.ItemViews{{Item: "a", Views: 8 / scale}, {Item: "b", Views: 4 / scale}}
	if diff := cmp.Diff(want, top); diff != "" {
		t.Errorf("TopItems mismatch (-want +got):\n%s", diff)
	}
}

// flakyViews fails the first failures rescales and counts the others.
type flakyViews struct {
	retail.Views
	failWith error

	mu       sync.Mutex
	failures int
	rescales int
}

func (v *flakyViews) RescaleViews(ctx context.Context, keep int, factor float64) error {
	v.mu.Lock()
	if v.failures > 0 {
		v.failures--
		v.mu.Unlock()
		return v.failWith
	}
	v.mu.Unlock()
	err := v.Views.RescaleViews(ctx, keep, factor)
	v.mu.Lock()
	v.rescales++
	v.mu.Unlock()
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
	flaky := &flakyViews{Views: s, failWith: errors.New("store hiccup"), failures: 1}
	var logs logRecorder
	stop := start(t, retail.NewViewRescaler(flaky, retail.ViewRescalerOptions{Every: time.Millisecond, Logger: logs.Logger()}))
	eventually(t, "a rescale after the failure", func() bool { return flaky.count() > 0 })
	if err := stop(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	if got := logs.String(); strings.Count(got, "store hiccup") != 1 {
		t.Errorf("log = %q, want the error logged once", got)
	}
}

func TestViewRescaler_ReturnsNilOnCancel(t *testing.T) {
	s, _ := newStore(t)
	stop := start(t, retail.NewViewRescaler(s, retail.ViewRescalerOptions{Every: time.Hour}))
	if err := stop(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestViewRescaler_ReturnsErrClosed(t *testing.T) {
	s, _ := newStore(t)
	s.Close()
	err := runToEnd(t, retail.NewViewRescaler(s, retail.ViewRescalerOptions{Every: time.Millisecond}))
	if !errors.Is(err, retail.ErrClosed) {
		t.Errorf("Run on a closed store = %v, want %v", err, retail.ErrClosed)
	}
}

func TestViewRescaler_RejectsInvalidOptions(t *testing.T) {
	s, _ := newStore(t)
	for _, opts := range []retail.ViewRescalerOptions{
		{Every: -time.Second},
		{Keep: -1},
		{Factor: 1.5},
		{Factor: -0.5},
		{Factor: math.NaN()},
	} {
		err := runToEnd(t, retail.NewViewRescaler(s, opts))
		if !errors.Is(err, retail.ErrInvalid) {
			t.Errorf("Run with %+v = %v, want %v", opts, err, retail.ErrInvalid)
		}
	}
}

func TestNewViewRescaler_PanicsOnNilStore(t *testing.T) {
	wantPanic(t, "NewViewRescaler(nil, ...)", func() { retail.NewViewRescaler(nil, retail.ViewRescalerOptions{}) })
}
