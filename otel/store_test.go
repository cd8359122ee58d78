package retailotel_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
	retailotel "github.com/retailkit/retail/otel"
)

// harness is a Store wrapped over inner, with its spans and metrics kept
// in memory for the test to read.
type harness struct {
	store  *retailotel.Store
	spans  *tracetest.InMemoryExporter
	tracer trace.Tracer // the test's own, for parent spans
	reader *sdkmetric.ManualReader
}

func newHarness(t *testing.T, inner retail.Store) *harness {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		tp.Shutdown(context.Background())
		mp.Shutdown(context.Background())
	})
	s, err := retailotel.Wrap(inner, retailotel.Options{Backend: "memory", TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		t.Fatalf("Wrap() = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return &harness{store: s, spans: spans, tracer: tp.Tracer("test"), reader: reader}
}

func newMemory(t *testing.T) retail.Store {
	t.Helper()
	s, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatalf("memory.New() = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// collect reads every metric as "name{key=value,...}" -> value: a sum's or
// gauge's value, or a histogram's count (never its durations).
func (h *harness) collect(t *testing.T) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect() = %v", err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					got[series(m.Name, p.Attributes)] = p.Value
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					got[series(m.Name, p.Attributes)] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					got[series(m.Name, p.Attributes)] = int64(p.Count)
				}
			default:
				t.Fatalf("metric %s has data of type %T", m.Name, m.Data)
			}
		}
	}
	return got
}

func series(name string, set attribute.Set) string {
	var kvs []string
	for _, kv := range set.ToSlice() {
		kvs = append(kvs, string(kv.Key)+"="+kv.Value.Emit())
	}
	return name + "{" + strings.Join(kvs, ",") + "}"
}

// attrs returns a span's attributes as key -> value.
func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// method is one call of a Store method, as the tests make it.
type method struct {
	op   string
	call func(ctx context.Context, s retail.Store) error
}

// everyMethod calls every method of retail.Store that takes a context,
// with token's live session; the calls that end sessions come last.
func everyMethod(token string) []method {
	ignore := func(err error) error { return err }
	return []method{
		{"StartSession", func(ctx context.Context, s retail.Store) error {
			_, err := s.StartSession(ctx, token+"-2", "")
			return err
		}},
		{"StartSessionFor", func(ctx context.Context, s retail.Store) error {
			_, err := s.StartSessionFor(ctx, token+"-5", "", retail.SessionOptions{Lifetime: time.Hour})
			return err
		}},
		{"CheckToken", func(ctx context.Context, s retail.Store) error { _, _, err := s.CheckToken(ctx, token); return err }},
		{"RefreshSession", func(ctx context.Context, s retail.Store) error {
			_, _, err := s.RefreshSession(ctx, token, "kettle")
			return err
		}},
		{"UpdateToken", func(ctx context.Context, s retail.Store) error { return s.UpdateToken(ctx, token, "alice", "mug") }},
		{"RecentItems", func(ctx context.Context, s retail.Store) error { _, err := s.RecentItems(ctx, token); return err }},
		{"UserSessions", func(ctx context.Context, s retail.Store) error { _, err := s.UserSessions(ctx, "alice"); return err }},
		{"SessionCount", func(ctx context.Context, s retail.Store) error { _, err := s.SessionCount(ctx); return err }},
		{"RepairSessions", func(ctx context.Context, s retail.Store) error { _, err := s.RepairSessions(ctx); return err }},
		{"SetValue", func(ctx context.Context, s retail.Store) error { return s.SetValue(ctx, token, "flash", []byte("hi")) }},
		{"Value", func(ctx context.Context, s retail.Store) error { _, _, err := s.Value(ctx, token, "flash"); return err }},
		{"PopValue", func(ctx context.Context, s retail.Store) error {
			_, _, err := s.PopValue(ctx, token, "flash")
			return err
		}},
		{"DeleteValue", func(ctx context.Context, s retail.Store) error { return s.DeleteValue(ctx, token, "flash") }},
		{"AddToCart", func(ctx context.Context, s retail.Store) error { return s.AddToCart(ctx, token, "kettle", 2) }},
		{"IncrementCart", func(ctx context.Context, s retail.Store) error {
			_, err := s.IncrementCart(ctx, token, "kettle", 1)
			return err
		}},
		{"Cart", func(ctx context.Context, s retail.Store) error { _, err := s.Cart(ctx, token); return err }},
		{"SetPage", func(ctx context.Context, s retail.Store) error {
			return s.SetPage(ctx, "page-1", []byte("p"), time.Minute)
		}},
		{"SetItemPage", func(ctx context.Context, s retail.Store) error {
			return s.SetItemPage(ctx, "kettle", "page-2", []byte("p"), time.Minute)
		}},
		{"Page", func(ctx context.Context, s retail.Store) error { _, _, err := s.Page(ctx, "page-1"); return err }},
		{"DeletePage", func(ctx context.Context, s retail.Store) error { return s.DeletePage(ctx, "page-1") }},
		{"PurgeItemPages", func(ctx context.Context, s retail.Store) error { _, err := s.PurgeItemPages(ctx, "kettle"); return err }},
		{"ScheduleRowCache", func(ctx context.Context, s retail.Store) error { return s.ScheduleRowCache(ctx, "row-1", time.Minute) }},
		{"ClaimDueRows", func(ctx context.Context, s retail.Store) error { _, err := s.ClaimDueRows(ctx, 10); return err }},
		{"SetRow", func(ctx context.Context, s retail.Store) error { return s.SetRow(ctx, "row-1", []byte(`{}`)) }},
		{"Row", func(ctx context.Context, s retail.Store) error { _, _, err := s.Row(ctx, "row-1"); return err }},
		{"SetScheduledRow", func(ctx context.Context, s retail.Store) error {
			_, err := s.SetScheduledRow(ctx, "row-1", []byte(`{}`))
			return err
		}},
		{"CountView", func(ctx context.Context, s retail.Store) error { return s.CountView(ctx, "kettle") }},
		{"FlushViews", func(ctx context.Context, s retail.Store) error { return s.FlushViews(ctx) }},
		{"ItemRank", func(ctx context.Context, s retail.Store) error { _, _, err := s.ItemRank(ctx, "kettle"); return err }},
		{"TopItems", func(ctx context.Context, s retail.Store) error { _, err := s.TopItems(ctx, 5); return err }},
		{"RescaleViews", func(ctx context.Context, s retail.Store) error { return s.RescaleViews(ctx, 100, 0.5) }},
		{"Claim", func(ctx context.Context, s retail.Store) error {
			_, err := s.Claim(ctx, "work", "owner-1", 1, time.Minute)
			return err
		}},
		{"CleanSessions", func(ctx context.Context, s retail.Store) error { _, err := s.CleanSessions(ctx, 100, 10); return err }},
		{"RenewSession", func(ctx context.Context, s retail.Store) error {
			_, err := s.RenewSession(ctx, token, token+"-3", "alice")
			return err
		}},
		{"RenewSessionFor", func(ctx context.Context, s retail.Store) error {
			_, err := s.RenewSessionFor(ctx, token+"-3", token+"-4", "alice", retail.SessionOptions{Lifetime: time.Hour})
			return err
		}},
		{"EndSession", func(ctx context.Context, s retail.Store) error {
			infos, err := s.UserSessions(ctx, "alice")
			if err != nil || len(infos) == 0 {
				return fmt.Errorf("UserSessions(alice) = %v, %v, want a session", infos, err)
			}
			return s.EndSession(ctx, infos[0].ID)
		}},
		{"Logout", func(ctx context.Context, s retail.Store) error { return s.Logout(ctx, token+"-2") }},
		{"LogoutUser", func(ctx context.Context, s retail.Store) error {
			_, err := s.LogoutUser(ctx, "alice")
			return ignore(err)
		}},
	}
}

// TestStore_EveryMethodMakesOneSpanAndCountsOneCall calls every method of
// retail.Store that takes a context through the wrapper: each makes one
// span, named after it, a child of the caller's, with exactly the
// operation, the backend and the outcome as attributes, and counts one
// call and one latency in the metrics.
func TestStore_EveryMethodMakesOneSpanAndCountsOneCall(t *testing.T) {
	h := newHarness(t, newMemory(t))
	ctx := context.Background()
	const token = "tok-every"
	if _, err := h.store.StartSession(ctx, token, ""); err != nil {
		t.Fatalf("StartSession = %v", err)
	}

	methods := everyMethod(token)
	var tested []string
	for _, m := range methods {
		tested = append(tested, m.op)
	}
	var want []string
	storeType := reflect.TypeFor[retail.Store]()
	for i := range storeType.NumMethod() {
		if m := storeType.Method(i); m.IsExported() && m.Name != "Stats" && m.Name != "Close" {
			want = append(want, m.Name)
		}
	}
	if diff := cmp.Diff(want, slices.Sorted(slices.Values(tested))); diff != "" {
		t.Fatalf("the test calls other methods than retail.Store has (-Store +test):\n%s", diff)
	}

	for _, m := range methods {
		h.spans.Reset()
		parentCtx, parent := h.tracer.Start(ctx, "caller")
		if err := m.call(parentCtx, h.store); err != nil {
			t.Fatalf("%s: %v", m.op, err)
		}
		parent.End()
		var mine []tracetest.SpanStub
		for _, s := range h.spans.GetSpans() {
			if s.Name == "retail."+m.op {
				mine = append(mine, s)
			}
		}
		if len(mine) != 1 {
			t.Errorf("%s made %d spans named retail.%s, want 1", m.op, len(mine), m.op)
			continue
		}
		span := mine[0].Snapshot()
		if span.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s's span is not a child of the caller's span", m.op)
		}
		got := attrs(span)
		if got["retail.outcome"] != "ok" && got["retail.outcome"] != "miss" {
			t.Errorf("%s's span has outcome %q, want ok or miss", m.op, got["retail.outcome"])
		}
		wantAttrs := map[string]string{"retail.operation": m.op, "retail.backend": "memory", "retail.outcome": got["retail.outcome"]}
		if diff := cmp.Diff(wantAttrs, got); diff != "" {
			t.Errorf("%s's span attributes (-want +got):\n%s", m.op, diff)
		}
	}

	metrics := h.collect(t)
	for _, m := range methods {
		var calls, latencies int64
		for name, v := range metrics {
			if !strings.Contains(name, "retail.operation="+m.op+",") {
				continue
			}
			switch {
			case strings.HasPrefix(name, "retail.calls{"):
				calls += v
			case strings.HasPrefix(name, "retail.call.duration{"):
				latencies += v
			}
		}
		want := int64(1)
		if m.op == "UserSessions" { // EndSession's test calls it too
			want = 2
		} else if m.op == "StartSession" { // and so did the test's setup
			want = 2
		}
		if calls != want || latencies != want {
			t.Errorf("%s: retail.calls = %d, retail.call.duration count = %d, want %d each", m.op, calls, latencies, want)
		}
	}
}

// failing is a Store whose CheckToken fails as a backend that cannot reach
// its server does.
type failing struct{ retail.Store }

func (failing) CheckToken(_ context.Context, token string) (string, bool, error) {
	return "", false, &retail.OpError{Op: "CheckToken", Key: `token "` + token + `"`, Err: errors.New("dial tcp: connection refused")}
}

// TestStore_CountsOutcomesAndErrorsByKind makes calls of every outcome:
// each span says its outcome, failed ones have status Error described by
// the kind, and the metrics count calls by outcome and errors by kind.
func TestStore_CountsOutcomesAndErrorsByKind(t *testing.T) {
	h := newHarness(t, failing{newMemory(t)})
	ctx := context.Background()
	closed := newHarness(t, newMemory(t))
	closed.store.Close()
	ended, cancel := context.WithCancel(ctx)
	cancel()
	past, cancelPast := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancelPast()

	for _, tc := range []struct {
		outcome string
		h       *harness
		call    func() error
	}{
		{"ok", h, func() error { _, err := h.store.StartSession(ctx, "tok-ok", ""); return err }},
		{"miss", h, func() error { _, _, err := h.store.Value(ctx, "tok-ok", "none"); return err }},
		{"invalid", h, func() error { _, err := h.store.StartSession(ctx, "", ""); return err }},
		{"no_session", h, func() error { return h.store.AddToCart(ctx, "tok-none", "kettle", 1) }},
		{"canceled", h, func() error { return h.store.CountView(ended, "kettle") }},
		{"deadline", h, func() error { _, err := h.store.Cart(past, "tok-ok"); return err }},
		{"backend", h, func() error { _, _, err := h.store.CheckToken(ctx, "tok-ok"); return err }},
		{"closed", closed, func() error { _, err := closed.store.TopItems(ctx, 3); return err }},
	} {
		tc.h.spans.Reset()
		err := tc.call()
		if got := retailotel.Outcome(true, err); tc.outcome != "miss" && got != tc.outcome {
			t.Errorf("%s call returned %v, of outcome %s", tc.outcome, err, got)
		}
		spans := tc.h.spans.GetSpans()
		if len(spans) != 1 {
			t.Fatalf("%s call made %d spans, want 1", tc.outcome, len(spans))
		}
		span := spans[0]
		if got := attrs(span.Snapshot())["retail.outcome"]; got != tc.outcome {
			t.Errorf("%s: span's retail.outcome = %q", tc.outcome, got)
		}
		wantStatus := sdktrace.Status{Code: codes.Unset}
		if tc.outcome != "ok" && tc.outcome != "miss" {
			wantStatus = sdktrace.Status{Code: codes.Error, Description: tc.outcome}
			if got := attrs(span.Snapshot())["error.type"]; got != tc.outcome {
				t.Errorf("%s: span's error.type = %q", tc.outcome, got)
			}
		}
		if span.Status != wantStatus {
			t.Errorf("%s: span status = %+v, want %+v", tc.outcome, span.Status, wantStatus)
		}
	}

	op := func(name string) string { return "retail.backend=memory,retail.operation=" + name }
	want := map[string]int64{
		"retail.calls{" + op("StartSession") + ",retail.outcome=ok}":      1,
		"retail.calls{" + op("Value") + ",retail.outcome=miss}":           1,
		"retail.calls{" + op("StartSession") + ",retail.outcome=invalid}": 1,
		"retail.calls{" + op("AddToCart") + ",retail.outcome=no_session}": 1,
		"retail.calls{" + op("CountView") + ",retail.outcome=canceled}":   1,
		"retail.calls{" + op("Cart") + ",retail.outcome=deadline}":        1,
		"retail.calls{" + op("CheckToken") + ",retail.outcome=backend}":   1,
		"retail.errors{error.type=invalid," + op("StartSession") + "}":    1,
		"retail.errors{error.type=no_session," + op("AddToCart") + "}":    1,
		"retail.errors{error.type=canceled," + op("CountView") + "}":      1,
		"retail.errors{error.type=deadline," + op("Cart") + "}":           1,
		"retail.errors{error.type=backend," + op("CheckToken") + "}":      1,
	}
	if diff := cmp.Diff(want, only(h.collect(t), "retail.calls{", "retail.errors{")); diff != "" {
		t.Errorf("calls and errors (-want +got):\n%s", diff)
	}
	wantClosed := map[string]int64{
		"retail.calls{" + op("TopItems") + ",retail.outcome=closed}": 1,
		"retail.errors{error.type=closed," + op("TopItems") + "}":    1,
	}
	if diff := cmp.Diff(wantClosed, only(closed.collect(t), "retail.calls{", "retail.errors{")); diff != "" {
		t.Errorf("calls and errors after Close (-want +got):\n%s", diff)
	}
}

// only keeps the series whose names start with one of prefixes.
func only(m map[string]int64, prefixes ...string) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				out[k] = v
			}
		}
	}
	return out
}

// TestStore_RecordsNoTokenUserOrOtherArgument runs every method, a failing
// call and invalid ones with arguments that each hold a marker, and looks
// for the markers, and the session IDs, in every span name, attribute,
// event, link and status, and in every metric's attributes.
func TestStore_RecordsNoTokenUserOrOtherArgument(t *testing.T) {
	const marker = "SECRET"
	h := newHarness(t, failing{newMemory(t)})
	ctx := context.Background()
	token := "tok-" + marker
	user := "alice-" + marker
	if _, err := h.store.StartSession(ctx, token, user); err != nil {
		t.Fatalf("StartSession = %v", err)
	}
	infos, err := h.store.UserSessions(ctx, user)
	if err != nil || len(infos) != 1 {
		t.Fatalf("UserSessions = %v, %v, want one session", infos, err)
	}
	secrets := []string{marker, infos[0].ID}
	for _, m := range everyMethod(token) {
		m.call(ctx, h.store) // outcomes do not matter here
	}
	h.store.AddToCart(ctx, token, "item-"+marker, 1)
	h.store.SetValue(ctx, token, "key-"+marker, []byte("value-"+marker))
	h.store.SetItemPage(ctx, "item-"+marker, "page-"+marker, []byte("body-"+marker), time.Minute)
	h.store.CheckToken(ctx, token)                        // fails, its error naming the token
	h.store.StartSession(ctx, token+"\n", user)           // invalid
	h.store.LogoutUser(ctx, user+"\xff")                  // invalid
	h.store.AddToCart(ctx, "tok-gone-"+marker, "item", 1) // no session
	h.store.LogoutUser(ctx, user)

	var texts []string
	spans := h.spans.GetSpans()
	if len(spans) < 40 {
		t.Fatalf("only %d spans recorded", len(spans))
	}
	for _, s := range spans {
		texts = append(texts, s.Name, s.Status.Description)
		for _, kv := range s.Attributes {
			texts = append(texts, string(kv.Key), kv.Value.Emit())
		}
		for _, e := range s.Events {
			t.Errorf("span %s has event %q; spans record no events (an error's message names its key argument)", s.Name, e.Name)
		}
		for _, l := range s.Links {
			for _, kv := range l.Attributes {
				texts = append(texts, string(kv.Key), kv.Value.Emit())
			}
		}
	}
	texts = append(texts, slices.Collect(mapsKeys(h.collect(t)))...)
	for _, text := range texts {
		for _, secret := range secrets {
			if strings.Contains(text, secret) {
				t.Errorf("recorded %q, which holds an argument or session ID %q", text, secret)
			}
		}
	}
}

func mapsKeys(m map[string]int64) func(func(string) bool) {
	return func(yield func(string) bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !yield(k) {
				return
			}
		}
	}
}

// fixedStats is a Store whose Stats are given.
type fixedStats struct {
	retail.Store
	stats retail.Stats
}

func (s fixedStats) Stats() retail.Stats { return s.stats }

// TestStore_ReportsEveryStatThroughObservableInstruments gives each field
// of Stats a value of its own and reads every one back from the metrics.
func TestStore_ReportsEveryStatThroughObservableInstruments(t *testing.T) {
	stats := retail.Stats{
		PageHits: 1, PageMisses: 2, PageBypasses: 3, CoalescedRenders: 4,
		SessionsStarted: 5, Logouts: 6, LogoutUserSessions: 7, SessionsCleaned: 8,
		CleaningLag: 9, SessionsRepaired: 10, ViewFlushFailures: 11, RowsRefreshed: 12,
		Rescales: 13, ClientCacheHits: 14, ClientCacheMisses: 15,
	}
	if n := reflect.TypeFor[retail.Stats]().NumField(); n != 15 {
		t.Fatalf("retail.Stats has %d fields; this test (and the instruments) know 15", n)
	}
	h := newHarness(t, fixedStats{Store: newMemory(t), stats: stats})
	const b = "retail.backend=memory"
	want := map[string]int64{
		"retail.page_cache.requests{" + b + ",retail.result=hit}":    1,
		"retail.page_cache.requests{" + b + ",retail.result=miss}":   2,
		"retail.page_cache.requests{" + b + ",retail.result=bypass}": 3,
		"retail.page_cache.coalesced{" + b + "}":                     4,
		"retail.sessions.started{" + b + "}":                         5,
		"retail.sessions.ended{" + b + ",retail.reason=logout}":      6,
		"retail.sessions.ended{" + b + ",retail.reason=logout_user}": 7,
		"retail.sessions.ended{" + b + ",retail.reason=cleaned}":     8,
		"retail.cleaner.lag{" + b + "}":                              9,
		"retail.sessions.repaired{" + b + "}":                        10,
		"retail.views.flush_failures{" + b + "}":                     11,
		"retail.rows.refreshed{" + b + "}":                           12,
		"retail.views.rescales{" + b + "}":                           13,
		"retail.client_cache.reads{" + b + ",retail.result=hit}":     14,
		"retail.client_cache.reads{" + b + ",retail.result=miss}":    15,
	}
	if diff := cmp.Diff(want, h.collect(t)); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

// TestStore_PolicyOverTheWrapperCountsIntoTheMetrics builds a PageCache
// over the wrapper, as a server does: its hits and misses count into the
// wrapped Store's Stats, and the metrics report them.
func TestStore_PolicyOverTheWrapperCountsIntoTheMetrics(t *testing.T) {
	h := newHarness(t, newMemory(t))
	ctx := context.Background()
	if err := h.store.CountView(ctx, "kettle"); err != nil { // ranks the kettle: its page may be cached
		t.Fatalf("CountView = %v", err)
	}
	pages, err := retail.NewPageCache(h.store, retail.PageCacheOptions{})
	if err != nil {
		t.Fatalf("NewPageCache = %v", err)
	}
	u, _ := url.Parse("http://shop.test/item?item=kettle")
	render := func(context.Context) ([]byte, error) { return []byte("kettle"), nil }
	for range 2 {
		if _, _, err := pages.CacheRequest(ctx, u, render); err != nil {
			t.Fatalf("CacheRequest = %v", err)
		}
	}
	const b = "retail.backend=memory"
	want := map[string]int64{
		"retail.page_cache.requests{" + b + ",retail.result=hit}":    1,
		"retail.page_cache.requests{" + b + ",retail.result=miss}":   1,
		"retail.page_cache.requests{" + b + ",retail.result=bypass}": 0,
	}
	if diff := cmp.Diff(want, only(h.collect(t), "retail.page_cache.requests{")); diff != "" {
		t.Errorf("page cache metrics (-want +got):\n%s", diff)
	}
	if st := h.store.Stats(); st.PageHits != 1 || st.PageMisses != 1 {
		t.Errorf("Stats() = %+v, want 1 page hit and 1 miss", st)
	}
}

// TestStore_CloseClosesTheStoreAndStopsTheStats: after Close the wrapped
// Store is closed and the Stats are no longer reported.
func TestStore_CloseClosesTheStoreAndStopsTheStats(t *testing.T) {
	inner := newMemory(t)
	h := newHarness(t, inner)
	if got := only(h.collect(t), "retail.sessions.started{"); len(got) != 1 {
		t.Fatalf("before Close, retail.sessions.started = %v, want one series", got)
	}
	if err := h.store.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if _, err := inner.SessionCount(context.Background()); !errors.Is(err, retail.ErrClosed) {
		t.Errorf("the wrapped Store's SessionCount after Close = %v, want ErrClosed", err)
	}
	if got := only(h.collect(t), "retail.sessions.", "retail.page_cache."); len(got) != 0 {
		t.Errorf("after Close, the Stats metrics are still reported: %v", got)
	}
}

func TestWrap_RequiresAStoreAndABackendName(t *testing.T) {
	if _, err := retailotel.Wrap(newMemory(t), retailotel.Options{}); err == nil {
		t.Errorf("Wrap without Backend = nil error, want one")
	}
	if _, err := retailotel.Wrap(nil, retailotel.Options{Backend: "memory"}); err == nil {
		t.Errorf("Wrap(nil) = nil error, want one")
	}
}

// TestStore_PassesTheStatsCountersOn: the wrapper is a Store that the
// policies accept, and it reports the wrapped Store's Stats.
func TestStore_PassesTheStatsCountersOn(t *testing.T) {
	inner := newMemory(t)
	h := newHarness(t, inner)
	if _, err := h.store.StartSession(context.Background(), "tok-1", ""); err != nil {
		t.Fatalf("StartSession = %v", err)
	}
	if diff := cmp.Diff(inner.Stats(), h.store.Stats()); diff != "" || h.store.Stats().SessionsStarted != 1 {
		t.Errorf("Stats through the wrapper differ (-inner +wrapper):\n%s", diff)
	}
}
