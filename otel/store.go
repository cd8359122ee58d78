package retailotel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/retailkit/retail"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/retailkit/retail/otel"

// Attribute keys. Their values are the names of methods, backends,
// outcomes and kinds: never a call's arguments.
const (
	OperationKey = attribute.Key("retail.operation")
	BackendKey   = attribute.Key("retail.backend")
	OutcomeKey   = attribute.Key("retail.outcome")
	ErrorTypeKey = attribute.Key("error.type")
	ResultKey    = attribute.Key("retail.result")
	ReasonKey    = attribute.Key("retail.reason")
)

// Outcomes of a call, the values of retail.outcome; the error ones are
// also the values of error.type.
const (
	OutcomeOK        = "ok"
	OutcomeMiss      = "miss"
	OutcomeInvalid   = "invalid"
	OutcomeNoSession = "no_session"
	OutcomeClosed    = "closed"
	OutcomeDeadline  = "deadline"
	OutcomeCanceled  = "canceled"
	OutcomeBackend   = "backend"
	OutcomePanic     = "panic" // the wrapped Store panicked
)

// Options configures Wrap.
type Options struct {
	// Backend names the wrapped Store's backend in every span and metric
	// (retail.backend), e.g. "memory" or "redis". Required.
	Backend string

	// TracerProvider makes the spans; otel.GetTracerProvider() if nil.
	TracerProvider trace.TracerProvider

	// MeterProvider makes the metrics; otel.GetMeterProvider() if nil.
	MeterProvider metric.MeterProvider
}

// Store is a retail.Store that traces and measures the Store it embeds
// (see the package documentation). It is safe for concurrent use.
type Store struct {
	retail.Store

	tracer   trace.Tracer
	backend  attribute.KeyValue
	calls    metric.Int64Counter
	duration metric.Float64Histogram
	errs     metric.Int64Counter
	stats    metric.Registration
}

var _ retail.Store = (*Store)(nil)

// durationBounds are the histogram's buckets, in seconds: from 100 µs (a
// memory Store's call) to 10 s (a call stuck behind a failing server).
var durationBounds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Wrap returns store traced and measured through opts's providers. It
// fails if opts.Backend is empty, or if the meter refuses an instrument.
func Wrap(store retail.Store, opts Options) (*Store, error) {
	if store == nil {
		return nil, errors.New("retailotel: Wrap: nil Store")
	}
	if opts.Backend == "" {
		return nil, errors.New("retailotel: Wrap: Options.Backend is empty")
	}
	if opts.TracerProvider == nil {
		opts.TracerProvider = otel.GetTracerProvider()
	}
	if opts.MeterProvider == nil {
		opts.MeterProvider = otel.GetMeterProvider()
	}
	meter := opts.MeterProvider.Meter(ScopeName)
	s := &Store{
		Store:   store,
		tracer:  opts.TracerProvider.Tracer(ScopeName),
		backend: BackendKey.String(opts.Backend),
	}
	var err1, err2, err3 error
	s.calls, err1 = meter.Int64Counter("retail.calls",
		metric.WithDescription("Store calls, by operation and outcome."), metric.WithUnit("{call}"))
	s.duration, err2 = meter.Float64Histogram("retail.call.duration",
		metric.WithDescription("How long Store calls took, by operation and outcome."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(durationBounds...))
	s.errs, err3 = meter.Int64Counter("retail.errors",
		metric.WithDescription("Store calls that failed, by operation and kind of error."), metric.WithUnit("{error}"))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	reg, err := observeStats(meter, store, s.backend)
	if err != nil {
		return nil, err
	}
	s.stats = reg
	return s, nil
}

// Close stops reporting the Stats metrics and closes the wrapped Store.
// Calls after it are still traced and counted (as closed).
func (s *Store) Close() error {
	return errors.Join(s.stats.Unregister(), s.Store.Close())
}

// call is one Store call being traced and timed.
type call struct {
	s     *Store
	ctx   context.Context // the span's, for the metrics' exemplars
	span  trace.Span
	op    string
	start time.Time
}

// begin starts a call of operation op: its span, a child of ctx's, and its
// clock. The wrapped Store is to be called with the returned context.
func (s *Store) begin(ctx context.Context, op string) (context.Context, call) {
	ctx, span := s.tracer.Start(ctx, "retail."+op,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(OperationKey.String(op), s.backend))
	return ctx, call{s: s, ctx: ctx, span: span, op: op, start: time.Now()}
}

// end records the call's outcome: found is the call's boolean result (true
// for calls without one), err its error, and panicked what the wrapped
// Store panicked with (nil if it returned). A panic is recorded with the
// outcome "panic" and goes on once the span has ended.
func (c call) end(found bool, err error, panicked any) {
	elapsed := time.Since(c.start).Seconds()
	outcome := Outcome(found, err)
	if panicked != nil {
		outcome = OutcomePanic
		defer panic(panicked)
	}
	ctx := c.ctx
	attrs := metric.WithAttributes(OperationKey.String(c.op), c.s.backend, OutcomeKey.String(outcome))
	c.s.calls.Add(ctx, 1, attrs)
	c.s.duration.Record(ctx, elapsed, attrs)
	c.span.SetAttributes(OutcomeKey.String(outcome))
	if err != nil || panicked != nil {
		c.s.errs.Add(ctx, 1, metric.WithAttributes(OperationKey.String(c.op), c.s.backend, ErrorTypeKey.String(outcome)))
		// The kind, never the message: an OpError names the call's key
		// argument (an item, a user, a token's first bytes).
		c.span.SetAttributes(ErrorTypeKey.String(outcome))
		c.span.SetStatus(codes.Error, outcome)
	}
	c.span.End()
}

// Outcome returns the retail.outcome of a call that returned found (true
// for calls without a boolean result) and err.
func Outcome(found bool, err error) string {
	switch {
	case err == nil && found:
		return OutcomeOK
	case err == nil:
		return OutcomeMiss
	case errors.Is(err, retail.ErrInvalid):
		return OutcomeInvalid
	case errors.Is(err, retail.ErrNoSession):
		return OutcomeNoSession
	case errors.Is(err, retail.ErrClosed):
		return OutcomeClosed
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeDeadline
	case errors.Is(err, context.Canceled):
		return OutcomeCanceled
	default:
		return OutcomeBackend
	}
}
