package retail_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
)

// waitLimit bounds every wait for a worker's effect or a goroutine's
// signal. It is a watchdog so that a broken worker fails the test instead of
// hanging it, never a performance threshold: the effects it waits for take
// milliseconds, and it is long so that a loaded machine running -race never
// trips it.
const waitLimit = 30 * time.Second

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// newStore returns a memory Store on a manual clock, closed when the test
// ends.
func newStore(t *testing.T) (retail.Store, *retail.ManualClock) {
	t.Helper()
	clock := retail.NewManualClock(epoch)
	s, err := memory.New(memory.Options{Clock: clock})
	if err != nil {
		t.Fatalf("memory.New() = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clock
}

// eventually polls cond every millisecond until it holds, and fails the
// test if it does not within waitLimit. It is for the effects of workers,
// which run on timers of their own; goroutines a test starts itself signal
// through channels instead (see waitFor).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %v for %s", waitLimit, what)
		}
		time.Sleep(time.Millisecond)
	}
}

type worker interface {
	Run(ctx context.Context) error
}

// start runs w until the returned stop is called, which cancels Run's
// context and returns what Run returned. The test fails if Run does not
// return within waitLimit of stop, or returns before stop is called.
func start(t *testing.T, w worker) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		t.Helper()
		once.Do(func() {
			select {
			case err = <-done:
				t.Errorf("Run returned %v before its context ended", err)
				return
			default:
			}
			cancel()
			err = await(t, done)
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// runToEnd runs w with a context that never ends and returns what Run
// returns, failing the test if Run does not return within waitLimit.
func runToEnd(t *testing.T, w worker) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	return await(t, done)
}

func await(t *testing.T, done <-chan error) error {
	t.Helper()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		t.Fatalf("Run did not return within %v", waitLimit)
		return nil
	}
}

// waitFor waits until ch is closed or receives, failing the test if that
// does not happen within waitLimit.
func waitFor[T any](t *testing.T, what string, ch <-chan T) {
	t.Helper()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case <-ch:
	case <-timer.C:
		t.Fatalf("still waiting after %v for %s", waitLimit, what)
	}
}

// wantInputError fails the test unless err is an *retail.InputError for op
// and arg (any arg if arg is ""), and so matches retail.ErrInvalid; call
// says what returned err.
func wantInputError(t *testing.T, call string, err error, op, arg string) {
	t.Helper()
	var ie *retail.InputError
	switch {
	case !errors.Is(err, retail.ErrInvalid):
		t.Errorf("%s = %v, want an error matching ErrInvalid", call, err)
	case !errors.As(err, &ie):
		t.Errorf("%s = %v (%T), want an *retail.InputError", call, err, err)
	case ie.Op != op || arg != "" && ie.Arg != arg:
		t.Errorf("%s = InputError{Op: %q, Arg: %q}, want Op %q, Arg %q", call, ie.Op, ie.Arg, op, arg)
	}
}

// wantClosedError fails the test unless err is the error a closed Store
// returns for op, as the Store returned it: an *retail.OpError matching
// retail.ErrClosed, wrapped no further (one "retail:" prefix).
func wantClosedError(t *testing.T, call string, err error, op string) {
	t.Helper()
	var oe *retail.OpError
	switch {
	case !errors.Is(err, retail.ErrClosed):
		t.Errorf("%s = %v, want an error matching ErrClosed", call, err)
	case !errors.As(err, &oe) || oe.Op != op:
		t.Errorf("%s = %v, want the Store's *retail.OpError for %s", call, err, op)
	case strings.Count(err.Error(), "retail:") != 1:
		t.Errorf("%s = %q, want the Store's error as it is, not wrapped again", call, err)
	}
}

// logRecorder collects what a worker logs.
type logRecorder struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *logRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Write(p)
}

func (r *logRecorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

func (r *logRecorder) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(r, nil))
}

// A worker works with any period it accepts: with one under half a
// millisecond or near the largest Duration, twice it (how long a turn is
// held) is not a hold Claim takes, unless the hold is kept in range.
func TestWorkers_WorkWithAnyPeriodTheyAccept(t *testing.T) {
	ctx := t.Context()
	var logs logRecorder
	cleaner := func(idle time.Duration) func(s retail.Store) (worker, func() bool) {
		return func(s retail.Store) (worker, func() bool) {
			for _, tok := range []string{"a", "b", "c"} {
				if _, err := s.StartSession(ctx, tok, ""); err != nil {
					t.Fatal(err)
				}
			}
			c, err := retail.NewSessionCleaner(s, retail.SessionCleanerOptions{Keep: 1, Idle: idle, Logger: logs.Logger()})
			if err != nil {
				t.Fatal(err)
			}
			return c, func() bool { n, _ := s.SessionCount(ctx); return n == 1 }
		}
	}
	for _, tc := range []struct {
		name  string
		start func(s retail.Store) (w worker, done func() bool)
	}{
		{"SessionCleaner/Idle=100µs", cleaner(100 * time.Microsecond)},
		{"SessionCleaner/Idle=MaxInt64", cleaner(time.Duration(math.MaxInt64))},
		{"ViewRescaler/Every=100µs", func(s retail.Store) (worker, func() bool) {
			for _, it := range []string{"a", "b", "c"} {
				if err := s.CountView(ctx, it); err != nil {
					t.Fatal(err)
				}
			}
			r, err := retail.NewViewRescaler(s, retail.ViewRescalerOptions{Every: 100 * time.Microsecond, Keep: 1, Logger: logs.Logger()})
			if err != nil {
				t.Fatal(err)
			}
			return r, func() bool { top, _ := s.TopItems(ctx, 10); return len(top) == 1 }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := memory.New(memory.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			w, done := tc.start(s)
			stop := start(t, w)
			eventually(t, tc.name+" to do its work", done)
			if err := stop(); err != nil {
				t.Errorf("Run = %v, want nil once its context ended", err)
			}
		})
	}
}

// firstCallStore is a Store that tells when a worker's first Claim or
// ClaimDueRows over it has returned: the worker then goes on to wait for
// its next pass.
type firstCallStore struct {
	retail.Store
	once   sync.Once
	called chan struct{}
}

func (s *firstCallStore) Claim(ctx context.Context, name, owner string, turn int64, hold time.Duration) (bool, error) {
	defer s.once.Do(func() { close(s.called) })
	return s.Store.Claim(ctx, name, owner, turn, hold)
}

func (s *firstCallStore) ClaimDueRows(ctx context.Context, limit int) ([]string, error) {
	defer s.once.Do(func() { close(s.called) })
	return s.Store.ClaimDueRows(ctx, limit)
}

// A worker whose Store is closed stops at once with an error matching
// ErrClosed, however long its wait for its next pass.
func TestWorkers_StopWhenTheStoreCloses(t *testing.T) {
	load := func(context.Context, string) (any, error) { return "row", nil }
	for _, tc := range []struct {
		name       string
		callsFirst bool // calls the Store before it first waits
		run        func(s retail.Store) (func(context.Context) error, error)
	}{
		{"SessionCleaner", true, func(s retail.Store) (func(context.Context) error, error) {
			c, err := retail.NewSessionCleaner(s, retail.SessionCleanerOptions{Idle: time.Hour})
			return c.Run, err
		}},
		{"ViewRescaler", false, func(s retail.Store) (func(context.Context) error, error) {
			r, err := retail.NewViewRescaler(s, retail.ViewRescalerOptions{Every: time.Hour})
			return r.Run, err
		}},
		{"RowCacher", true, func(s retail.Store) (func(context.Context) error, error) {
			c, err := retail.NewRowCacher(s, load, retail.RowCacherOptions{Poll: time.Hour})
			return c.Run, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner, err := memory.New(memory.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := &firstCallStore{Store: inner, called: make(chan struct{})}
			run, err := tc.run(s)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- run(t.Context()) }()
			if tc.callsFirst {
				waitFor(t, tc.name+"'s first pass", s.called)
			} // else it waits for its first pass from the start
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := await(t, done); !errors.Is(err, retail.ErrClosed) {
				t.Errorf("%s.Run after Close = %v, want an error matching ErrClosed", tc.name, err)
			}
		})
	}
}
