package retail

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// lateContext is a context whose deadline has passed but that has not
// ended yet: the moment between a client seeing the deadline and the
// context's own timer firing.
type lateContext struct {
	context.Context
	deadline time.Time
}

func (c lateContext) Deadline() (time.Time, bool) { return c.deadline, true }

// TestStopOn_StopsWhenTheDeadlineHasPassed: a Store call that failed with
// DeadlineExceeded stops the worker, with nil, once its context's deadline
// has passed, even if the context has not ended yet; before the deadline
// (a deadline of the call's own) the worker goes on.
func TestStopOn_StopsWhenTheDeadlineHasPassed(t *testing.T) {
	timedOut := fmt.Errorf("retail: CleanSessions: %w", context.DeadlineExceeded)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		err      error
		wantStop bool
		wantErr  error
	}{
		{"deadline passed, context not ended", lateContext{context.Background(), time.Now().Add(-time.Millisecond)}, timedOut, true, nil},
		{"deadline to come", lateContext{context.Background(), time.Now().Add(time.Hour)}, timedOut, false, nil},
		{"deadline passed, another error", lateContext{context.Background(), time.Now().Add(-time.Millisecond)}, errors.New("refused"), false, nil},
		{"context ended", canceled, ErrClosed, true, nil},
		{"store closed", context.Background(), fmt.Errorf("retail: CleanSessions: %w", ErrClosed), true, ErrClosed},
		{"no deadline", context.Background(), timedOut, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop, err := stopOn(tc.ctx, tc.err)
			if stop != tc.wantStop || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("stopOn = %v, %v; want %v, %v", stop, err, tc.wantStop, tc.wantErr)
			}
		})
	}
}
