package retail_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
)

// waitLimit bounds every wait for a worker's effect. It is a watchdog so
// that a broken worker fails the test instead of hanging it, never a
// performance threshold.
const waitLimit = 5 * time.Second

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// newStore returns a memory Store on a manual clock, closed when the test
// ends.
func newStore(t *testing.T) (*memory.Store, *retail.ManualClock) {
	t.Helper()
	clock := retail.NewManualClock(epoch)
	s := memory.New(memory.Options{Clock: clock})
	t.Cleanup(func() { s.Close() })
	return s, clock
}

// eventually polls cond every millisecond until it holds, and fails the
// test if it does not within waitLimit.
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

// wantPanic fails the test unless f panics; call says what f calls.
func wantPanic(t *testing.T, call string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", call)
		}
	}()
	f()
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
