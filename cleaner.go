package retail

import (
	"context"
	"log/slog"
	"time"
)

// The book's clean_sessions settings, used where a [SessionCleanerOptions]
// field is zero.
const (
	DefaultKeepSessions = 10_000_000  // sessions kept
	DefaultCleanBatch   = 100         // most sessions removed by one pass
	DefaultCleanIdle    = time.Second // wait after a pass that found too little to remove
)

// SessionCleanerOptions configures a [SessionCleaner]. Zero fields take the
// defaults named on each; negative ones make [NewSessionCleaner] fail with
// an error matching [ErrInvalid].
type SessionCleanerOptions struct {
	// Keep is how many of the most recently seen sessions survive;
	// DefaultKeepSessions if zero. Because zero means the default, a
	// cleaner cannot empty the store: to remove every session, call
	// [Sessions.CleanSessions] with keep 0 directly.
	Keep int

	// Batch is the most sessions one pass removes; DefaultCleanBatch if
	// zero. Small passes keep each one short, so that a Store shared with
	// live traffic is never busy for long.
	Batch int

	// Idle is how long the cleaner waits after a pass that removed fewer
	// than Batch sessions, or failed; DefaultCleanIdle if zero.
	Idle time.Duration

	// Logger receives the errors the cleaner retries after; slog.Default()
	// if nil.
	Logger *slog.Logger
}

// SessionCleaner keeps the number of sessions in a Store bounded: the
// book's clean_sessions loop over [Sessions.CleanSessions]. Each pass
// removes up to Batch of the least recently seen sessions beyond Keep,
// with their recently viewed items and carts; passes follow each other at
// once while there is a backlog.
type SessionCleaner struct {
	sessions Sessions
	opts     SessionCleanerOptions
}

// NewSessionCleaner returns a cleaner of s's sessions. It returns an error
// matching [ErrInvalid] if s is nil or an option is negative.
func NewSessionCleaner(s Sessions, opts SessionCleanerOptions) (*SessionCleaner, error) {
	const op = "NewSessionCleaner"
	switch {
	case s == nil:
		return nil, invalid(op, "store", "nil")
	case opts.Keep < 0:
		return nil, invalid(op, "Keep", "negative")
	case opts.Batch < 0:
		return nil, invalid(op, "Batch", "negative")
	case opts.Idle < 0:
		return nil, invalid(op, "Idle", "negative")
	}
	if opts.Keep == 0 {
		opts.Keep = DefaultKeepSessions
	}
	if opts.Batch == 0 {
		opts.Batch = DefaultCleanBatch
	}
	if opts.Idle == 0 {
		opts.Idle = DefaultCleanIdle
	}
	return &SessionCleaner{sessions: s, opts: opts}, nil
}

// Run cleans sessions until ctx ends, and then returns nil. If the Store is
// closed it returns the Store's error, which matches [ErrClosed]. Other
// errors are logged and the pass retried after Idle. Several cleaners may
// run at once, though one is enough.
func (c *SessionCleaner) Run(ctx context.Context) error {
	o := c.opts
	for {
		removed, err := c.sessions.CleanSessions(ctx, o.Keep, o.Batch)
		if stop, runErr := stopOn(ctx, err); stop {
			return runErr
		}
		idle := o.Idle
		switch {
		case err != nil:
			logError(ctx, o.Logger, "SessionCleaner", "retail: cleaning sessions failed; retrying", err)
		case removed >= o.Batch:
			// A full pass means more sessions may be over the limit.
			idle = 0
		}
		if !pause(ctx, idle) {
			return nil
		}
	}
}
