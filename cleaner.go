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

// DefaultRepairEvery is how often the cleaners sharing a Store repair its
// sessions (see SessionCleanerOptions.RepairEvery) unless told otherwise.
const DefaultRepairEvery = 10 * time.Minute

// repairRetry is how long a cleaner waits to retry a repair that failed,
// within the same period.
const repairRetry = time.Minute

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

	// RepairEvery is how often the cleaners sharing a Store run
	// [Sessions.RepairSessions] between passes, one of them a period
	// (the first to ask after its cleaning pass; they take turns as for
	// cleaning); DefaultRepairEvery if zero. A repair that fails is
	// retried a minute later within the period. A cleaner repairs after
	// its first pass unless another did in the same period. Only a Store
	// whose session writes can part (Redis Cluster) does any work; there
	// a repair reads every session, and the cleaner does not clean while
	// it repairs, so the period bounds its cost and, with the time a
	// repair takes, how long a session can stay unindexed after a master
	// fails over.
	RepairEvery time.Duration

	// Logger receives the errors the cleaner retries after; slog.Default()
	// if nil.
	Logger *slog.Logger

	// Clock numbers the periods of length Idle in which the cleaners of
	// every process sharing the Store take turns (see [Coordinator]): each
	// period, the first to ask cleans, as often as the backlog needs, and
	// the others wait. SystemClock if nil; cleaners sharing a Store must
	// agree on it.
	Clock Clock
}

// SessionCleaner keeps the number of sessions in a Store bounded: the
// book's clean_sessions loop over [Sessions.CleanSessions]. Each pass
// removes up to Batch of the least recently seen sessions beyond Keep,
// with their recently viewed items and carts; passes follow each other at
// once while there is a backlog.
//
// Every RepairEvery, one of the cleaners sharing a Store also runs
// [Sessions.RepairSessions], which mends what a failover between the steps
// of a call left behind (on Redis Cluster; elsewhere it does nothing).
//
// The cleaner also measures its backlog for the Store's [Stats]
// (CleaningLag), with one [Sessions.SessionCount] after each pass.
type SessionCleaner struct {
	sessions Sessions
	opts     SessionCleanerOptions
	stats    *counters // the Store's (see Stats)
	closing  <-chan struct{}
	turns    turnTaker
	repairs  turnTaker

	// The repair turn this cleaner last asked for (-1 before the first),
	// whether that turn's repair is done (by it or by another cleaner), and
	// if not, when to retry it.
	repairTurn  int64
	repairDone  bool
	repairRetry time.Time
}

// NewSessionCleaner returns a cleaner of s's sessions, which takes turns
// with the other cleaners over s's data through s (see [Coordinator]) and
// counts into s's [Stats]. It returns an error matching [ErrInvalid] if s
// is nil or an option is negative.
func NewSessionCleaner(s Store, opts SessionCleanerOptions) (*SessionCleaner, error) {
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
	case opts.RepairEvery < 0:
		return nil, invalid(op, "RepairEvery", "negative")
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
	if opts.RepairEvery == 0 {
		opts.RepairEvery = DefaultRepairEvery
	}
	return &SessionCleaner{
		sessions:   s,
		opts:       opts,
		stats:      s.statCounters(),
		closing:    s.closing(),
		turns:      newTurnTaker(s, "clean", opts.Idle, opts.Clock),
		repairs:    newTurnTaker(s, "repair", opts.RepairEvery, opts.Clock),
		repairTurn: -1,
	}, nil
}

// Run cleans sessions until ctx ends, and then returns nil. If the Store is
// closed it returns, without waiting out Idle, the Store's error, which
// matches [ErrClosed]. Other
// errors are logged and the pass retried after Idle. Cleaners in several
// processes sharing a Store take turns (see SessionCleanerOptions.Clock), so
// that one cleans at a time.
func (c *SessionCleaner) Run(ctx context.Context) error {
	o := c.opts
	for {
		_, mine, err := c.turns.mine(ctx)
		if stop, runErr := stopOn(ctx, err); stop {
			return runErr
		}
		if err == nil && !mine {
			// Another cleaner's turn.
			if !pause(ctx, c.closing, o.Idle) {
				return nil
			}
			continue
		}
		removed := 0
		if err == nil {
			removed, err = c.sessions.CleanSessions(ctx, o.Keep, o.Batch)
		}
		if stop, runErr := stopOn(ctx, err); stop {
			return runErr
		}
		if err == nil {
			if stop, runErr := c.measureLag(ctx); stop {
				return runErr
			}
		}
		if stop, runErr := c.repair(ctx); stop {
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
		if !pause(ctx, c.closing, idle) {
			return nil
		}
	}
}

// repair runs RepairSessions if this period's repair is due and this
// cleaner's turn, and reports whether Run must stop, as stopOn does. It
// asks for the turn once a period; a failure is logged, and the repair
// retried after repairRetry.
func (c *SessionCleaner) repair(ctx context.Context) (stop bool, runErr error) {
	now := c.repairs.clock.Now()
	if c.repairs.current() != c.repairTurn {
		turn, mine, err := c.repairs.mine(ctx)
		if stop, runErr := stopOn(ctx, err); stop {
			return true, runErr
		}
		if err != nil {
			logError(ctx, c.opts.Logger, "SessionCleaner", "retail: asking for the turn to repair sessions failed", err)
			return false, nil
		}
		c.repairTurn, c.repairDone, c.repairRetry = turn, !mine, now
	}
	if c.repairDone || now.Before(c.repairRetry) {
		return false, nil
	}
	_, err := c.sessions.RepairSessions(ctx)
	if stop, runErr := stopOn(ctx, err); stop {
		return true, runErr
	}
	if err != nil {
		c.repairRetry = now.Add(repairRetry)
		logError(ctx, c.opts.Logger, "SessionCleaner", "retail: repairing sessions failed; retrying in a minute", err)
		return false, nil
	}
	c.repairDone = true
	return false, nil
}

// measureLag sets the Store's CleaningLag from a count of its sessions, and
// reports whether Run must stop, as stopOn does. A failure to count is
// logged; the lag keeps its last value.
func (c *SessionCleaner) measureLag(ctx context.Context) (stop bool, runErr error) {
	n, err := c.sessions.SessionCount(ctx)
	if stop, runErr := stopOn(ctx, err); stop {
		return true, runErr
	}
	if err != nil {
		logError(ctx, c.opts.Logger, "SessionCleaner", "retail: counting sessions failed", err)
		return false, nil
	}
	c.stats.cleaningLag.Store(uint64(max(n-c.opts.Keep, 0)))
	return false, nil
}
