package retailotel_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"

	"github.com/retailkit/retail"
	retailotel "github.com/retailkit/retail/otel"
)

// panicking is a Store whose CheckToken panics, as a buggy decorator or
// driver may.
type panicking struct{ retail.Store }

func (panicking) CheckToken(context.Context, string) (string, bool, error) {
	panic("boom")
}

// TestStore_PanicOfTheWrappedStoreEndsTheSpan: a call whose wrapped Store panics still
// ends its span (status Error) and counts the call, and the panic goes on
// to the caller unchanged.
func TestStore_PanicOfTheWrappedStoreEndsTheSpan(t *testing.T) {
	h := newHarness(t, panicking{newMemory(t)})
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recover() = %v, want the wrapped Store's panic", r)
			}
		}()
		h.store.CheckToken(context.Background(), "tok")
	}()
	spans := h.spans.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("after a panicking call, %d spans ended, want 1", len(spans))
	}
	if spans[0].Status.Code != codes.Error {
		t.Errorf("span status = %v, want Error", spans[0].Status)
	}
	calls := only(h.collect(t), "retail.calls{")
	want := map[string]int64{"retail.calls{retail.backend=memory,retail.operation=CheckToken,retail.outcome=" + retailotel.OutcomePanic + "}": 1}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("retail.calls after the panicking CheckToken (-want +got):\n%s", diff)
	}
}

// TestStore_KeepsSentinelsContextAndDeadline: errors keep their sentinels, the wrapped
// Store gets the span's context with the caller's deadline.
func TestStore_KeepsSentinelsContextAndDeadline(t *testing.T) {
	var got context.Context
	h := newHarness(t, ctxSpy{Store: newMemory(t), got: &got})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	ctx, parent := h.tracer.Start(ctx, "parent")
	_, _, _ = h.store.CheckToken(ctx, "tok-x")
	parent.End()
	if dl, ok := got.Deadline(); !ok || time.Until(dl) > time.Hour {
		t.Errorf("wrapped Store's context has deadline %v, %v", dl, ok)
	}
	spans := h.spans.GetSpans()
	if len(spans) != 2 || spans[0].Name != "retail.CheckToken" || spans[0].Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("spans = %v", spans)
	}
	if id := spanIDOf(got); id != spans[0].SpanContext.SpanID().String() {
		t.Errorf("wrapped Store got span %s, want the call's %s", id, spans[0].SpanContext.SpanID())
	}

	s := h.store
	bg := context.Background()
	if err := s.SetValue(bg, "nosuch", "k", []byte("v")); !errors.Is(err, retail.ErrNoSession) {
		t.Errorf("SetValue without a session = %v, want ErrNoSession", err)
	}
	if _, err := s.StartSession(bg, "", ""); !errors.Is(err, retail.ErrInvalid) {
		t.Errorf("StartSession with an empty token = %v, want ErrInvalid", err)
	}
	dead, cancel2 := context.WithCancel(bg)
	cancel2()
	if _, _, err := s.CheckToken(dead, "tok"); !errors.Is(err, context.Canceled) {
		t.Errorf("CheckToken with a canceled context = %v, want context.Canceled", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if _, _, err := s.CheckToken(bg, "tok"); !errors.Is(err, retail.ErrClosed) {
		t.Errorf("CheckToken after Close = %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	h.collect(t) // the callback is gone; collecting must not fail
}

type ctxSpy struct {
	retail.Store
	got *context.Context
}

func (s ctxSpy) CheckToken(ctx context.Context, token string) (string, bool, error) {
	*s.got = ctx
	return s.Store.CheckToken(ctx, token)
}

func spanIDOf(ctx context.Context) string {
	return trace.SpanFromContext(ctx).SpanContext().SpanID().String()
}

// TestStore_InstrumentKindsUnitsAndNames: counters are monotonic sums,
// the lag a gauge, latency a histogram in seconds, names follow the rules.
func TestStore_InstrumentKindsUnitsAndNames(t *testing.T) {
	h := newHarness(t, newMemory(t))
	h.store.CheckToken(context.Background(), "tok")
	h.store.SetValue(context.Background(), "tok", "k", nil) // an error
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)
	seen := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			seen++
			if !name.MatchString(m.Name) || len(m.Name) > 255 {
				t.Errorf("bad name %q", m.Name)
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if !d.IsMonotonic || d.Temporality != metricdata.CumulativeTemporality {
					t.Errorf("%s: monotonic=%v temporality=%v", m.Name, d.IsMonotonic, d.Temporality)
				}
				if m.Name == "retail.cleaner.lag" {
					t.Errorf("%s is a sum, want a gauge", m.Name)
				}
				if !strings.HasPrefix(m.Unit, "{") {
					t.Errorf("%s: unit %q", m.Name, m.Unit)
				}
			case metricdata.Gauge[int64]:
				if m.Name != "retail.cleaner.lag" {
					t.Errorf("%s is a gauge", m.Name)
				}
			case metricdata.Histogram[float64]:
				if m.Unit != "s" {
					t.Errorf("%s: unit %q, want s", m.Name, m.Unit)
				}
			default:
				t.Errorf("%s: %T", m.Name, m.Data)
			}
		}
	}
	if seen != 13 {
		t.Errorf("%d metrics, want 13", seen)
	}
}

// TestStore_WorkersOverTheWrapperStopWhenItCloses: workers over the wrapper
// count into its Stats and stop when it is closed.
func TestStore_WorkersOverTheWrapperStopWhenItCloses(t *testing.T) {
	h := newHarness(t, newMemory(t))
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i := range 5 {
		h.store.StartSession(ctx, "tok-"+string(rune('a'+i)), "")
	}
	h.store.ScheduleRowCache(ctx, "row-1", time.Hour)
	cleaner, err := retail.NewSessionCleaner(h.store, retail.SessionCleanerOptions{Keep: 2, Idle: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	cacher, err := retail.NewRowCacher(h.store, func(context.Context, string) (any, error) { return map[string]int{"a": 1}, nil },
		retail.RowCacherOptions{Poll: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	rescaler, err := retail.NewViewRescaler(h.store, retail.ViewRescalerOptions{Every: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	// A watchdog against hangs, not a bound on speed.
	const limit = 30 * time.Second
	stopped := make(chan error, 3)
	for _, run := range []func(context.Context) error{cleaner.Run, cacher.Run, rescaler.Run} {
		go func() { stopped <- run(ctx) }()
	}
	deadline := time.Now().Add(limit)
	for {
		st := h.store.Stats()
		if st.SessionsCleaned >= 3 && st.RowsRefreshed >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Stats = %+v, want 3 cleaned and 1 row", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	got := h.collect(t)
	if got["retail.sessions.ended{retail.backend=memory,retail.reason=cleaned}"] < 3 ||
		got["retail.rows.refreshed{retail.backend=memory}"] < 1 {
		t.Errorf("metrics = %v", got)
	}
	// concurrent collection, calls and Close, for -race
	var wg2 sync.WaitGroup
	for range 4 {
		wg2.Go(func() {
			for range 50 {
				h.store.CheckToken(ctx, "tok-a")
				var rm metricdata.ResourceMetrics
				h.reader.Collect(ctx, &rm)
			}
		})
	}
	wg2.Go(func() { h.store.Close() })
	wg2.Wait()
	for range 3 {
		select {
		case err := <-stopped:
			if !errors.Is(err, retail.ErrClosed) {
				t.Errorf("a worker's Run after the wrapper closed = %v, want ErrClosed", err)
			}
		case <-time.After(limit):
			t.Fatalf("workers still running %v after the wrapper closed", limit)
		}
	}
}
