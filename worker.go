package retail

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// This file holds what the workers (SessionCleaner, RowCacher,
// ViewRescaler) share: how they wait, log and decide to stop.

// pause waits for d, until ctx ends or until the Store whose closing
// channel is closing begins to close, and reports whether ctx is still
// alive. It uses a timer rather than time.Sleep so that a worker stops as
// soon as its context ends, however long its interval; a worker whose
// Store closed goes on to its next Store call, which fails with ErrClosed
// and stops it (see stopOn).
func pause(ctx context.Context, closing <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-closing:
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}

// stopOn reports whether a worker must stop after a Store call returned
// err, and what its Run returns then: nil once ctx has ended, whatever the
// call said, since ending ctx is how a worker is asked to stop; the Store's
// error (which names the operation) if the Store is closed, since retrying
// could never succeed.
func stopOn(ctx context.Context, err error) (stop bool, runErr error) {
	if ctx.Err() != nil {
		return true, nil
	}
	if d, ok := ctx.Deadline(); ok && errors.Is(err, context.DeadlineExceeded) && !time.Now().Before(d) {
		return true, nil // the client saw the deadline pass before ctx did
	}
	if errors.Is(err, ErrClosed) {
		return true, err
	}
	return false, nil
}

// logError reports an error a worker will retry after. The logger is looked
// up at each use so that slog.SetDefault after a worker is built still
// applies to it.
func logError(ctx context.Context, l *slog.Logger, worker, msg string, err error, attrs ...slog.Attr) {
	if l == nil {
		l = slog.Default()
	}
	attrs = append(attrs, slog.String("worker", worker), slog.Any("err", err))
	l.LogAttrs(ctx, slog.LevelError, msg, attrs...)
}
