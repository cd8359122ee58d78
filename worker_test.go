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

// A SessionCleaner cleans with any Idle it accepts: with one under half a
// millisecond or near the largest Duration, twice it (how long a turn is
// held) is not a hold Claim takes, unless the hold is kept in range.
func TestSessionCleaner_CleansWithAnyIdleItAccepts(t *testing.T) {
	for _, idle := range []time.Duration{100 * time.Microsecond, time.Duration(math.MaxInt64)} {
		t.Run(idle.String(), func(t *testing.T) {
			s, err := memory.New(memory.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := t.Context()
			for _, tok := range []string{"a", "b", "c"} {
				if _, err := s.StartSession(ctx, tok, ""); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			c, err := retail.NewSessionCleaner(s, retail.SessionCleanerOptions{
				Keep: 1, Idle: idle, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			})
			if err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- c.Run(rctx) }()
			deadline := time.Now().Add(waitLimit)
			for {
				n, _ := s.SessionCount(ctx)
				if n == 1 {
					break
				}
				if time.Now().After(deadline) {
					cancel()
					<-done
					t.Fatalf("cleaner with Idle %v never cleaned: %d sessions; logs:\n%.600s", idle, n, logs.String())
				}
				time.Sleep(time.Millisecond)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A ViewRescaler rescales with any Every it accepts (see
// TestSessionCleaner_CleansWithAnyIdleItAccepts).
func TestViewRescaler_RescalesWithAnyEveryItAccepts(t *testing.T) {
	s, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	for _, it := range []string{"a", "b", "c"} {
		if err := s.CountView(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	r, err := retail.NewViewRescaler(s, retail.ViewRescalerOptions{
		Every: 100 * time.Microsecond, Keep: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	deadline := time.Now().Add(waitLimit)
	for {
		top, _ := s.TopItems(ctx, 10)
		if len(top) == 1 {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("rescaler never rescaled: %v; logs:\n%.600s", top, logs.String())
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A worker whose Store is closed stops at once with an error matching
// ErrClosed, however long its wait for its next pass.
func TestWorkers_StopWhenTheStoreCloses(t *testing.T) {
	load := func(context.Context, string) (any, error) { return "row", nil }
	for _, tc := range []struct {
		name string
		run  func(s retail.Store) (func(context.Context) error, error)
	}{
		{"SessionCleaner", func(s retail.Store) (func(context.Context) error, error) {
			c, err := retail.NewSessionCleaner(s, retail.SessionCleanerOptions{Idle: time.Hour})
			return c.Run, err
		}},
		{"ViewRescaler", func(s retail.Store) (func(context.Context) error, error) {
			r, err := retail.NewViewRescaler(s, retail.ViewRescalerOptions{Every: time.Hour})
			return r.Run, err
		}},
		{"RowCacher", func(s retail.Store) (func(context.Context) error, error) {
			c, err := retail.NewRowCacher(s, load, retail.RowCacherOptions{Poll: time.Hour})
			return c.Run, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := memory.New(memory.Options{})
			if err != nil {
				t.Fatal(err)
			}
			run, err := tc.run(s)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- run(t.Context()) }()
			time.Sleep(10 * time.Millisecond) // most likely waiting for its next pass by now; either way it must stop
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if !errors.Is(err, retail.ErrClosed) {
					t.Errorf("%s.Run after Close = %v, want an error matching ErrClosed", tc.name, err)
				}
			case <-time.After(waitLimit):
				t.Fatalf("%s.Run still running %v after its Store was closed", tc.name, waitLimit)
			}
		})
	}
}
