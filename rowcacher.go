package retail

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"
)

// The book's cache_rows settings, used where a [RowCacherOptions] field is
// zero.
const (
	DefaultRowPoll  = 50 * time.Millisecond // wait after a claim that found no backlog
	DefaultRowBatch = 100                   // most rows claimed at once
)

// RowLoader loads the current value of a database row for [RowCacher],
// which stores it as JSON (encoding/json). A loader that already has the
// JSON returns it as a json.RawMessage. An error leaves the row's cached
// copy as it was. RowLoader must be safe for concurrent use if several
// RowCachers share it.
type RowLoader func(ctx context.Context, row string) (any, error)

// RowCacherOptions configures a [RowCacher]. Zero fields take the defaults
// named on each; values out of range make [NewRowCacher] fail with an error
// matching [ErrInvalid].
type RowCacherOptions struct {
	// Poll is how long the cacher waits after a claim that returned fewer
	// than Batch rows, or failed (after claims that failed in a row, twice
	// as long each time, up to 5 s); DefaultRowPoll if zero. It bounds how
	// late a due row is refreshed.
	Poll time.Duration

	// Batch is the most rows claimed at once, at most [MaxClaimRows];
	// DefaultRowBatch if zero. A claimed row waits for the rows before it
	// in its batch to load, and is refreshed a period late if Run stops
	// before loading it, so large batches trade latency for fewer claims.
	Batch int

	// Logger receives the errors the cacher skips or retries after;
	// slog.Default() if nil.
	Logger *slog.Logger

	// OnChange, if not nil, is called with a row's id after the row was
	// stored with data different from its cached copy: for example to
	// purge the cached pages that show the row ([PageCache.PurgeItem]), so
	// that a change such as a new price is served at once instead of when
	// the pages expire. The first copy of a row, cached when there was
	// none, is not a change. It runs on Run's goroutine before the next
	// row is refreshed, and must be safe for concurrent use if several
	// RowCachers share it. An error it returns is logged; the row stays
	// stored.
	OnChange func(ctx context.Context, row string) error
}

// RowCacher keeps the cached copies of scheduled database rows fresh: the
// book's cache_rows loop. It claims the rows that are due (see
// [Rows.ScheduleRowCache] and [Rows.ClaimDueRows]), loads each one through
// its RowLoader and stores the JSON with [Rows.SetScheduledRow], which
// stores nothing if the row was unscheduled while it was loading. Several
// RowCachers, in one process or many, may run against one Store: a due row
// is claimed by one of them per period. Each row it stores counts in the Store's
// [Stats] (RowsRefreshed).
type RowCacher struct {
	rows    Rows
	load    RowLoader
	opts    RowCacherOptions
	stats   *counters // the Store's (see Stats)
	closing <-chan struct{}
}

// NewRowCacher returns a cacher of s's scheduled rows that loads them with
// load and counts into s's [Stats]. It returns an error matching
// [ErrInvalid] if s or load is nil or an option is out of range.
func NewRowCacher(s Store, load RowLoader, opts RowCacherOptions) (*RowCacher, error) {
	const op = "NewRowCacher"
	switch {
	case s == nil:
		return nil, invalid(op, "store", "nil")
	case load == nil:
		return nil, invalid(op, "load", "nil")
	case opts.Poll < 0:
		return nil, invalid(op, "Poll", "negative")
	}
	if opts.Poll == 0 {
		opts.Poll = DefaultRowPoll
	}
	if opts.Batch == 0 {
		opts.Batch = DefaultRowBatch
	}
	if err := checkClaimLimit(op, "Batch", opts.Batch); err != nil {
		return nil, err
	}
	return &RowCacher{rows: s, load: load, opts: opts, stats: s.statCounters(), closing: s.closing()}, nil
}

// Run refreshes due rows until ctx ends, and then returns nil. If the Store
// is closed it returns, without waiting out Poll, the Store's error, which
// matches [ErrClosed].
//
// A row whose load or encoding fails is logged and skipped: it stays
// scheduled, since claiming it already set its next refresh, so it is
// tried again one delay later, and its previous cached copy, if any, is
// kept until then. A row whose storing fails is logged and skipped too,
// and may miss until then. A failed claim is logged and retried after
// Poll.
func (c *RowCacher) Run(ctx context.Context) error {
	const worker = "RowCacher"
	o := c.opts
	failures := 0 // claims that failed in a row
	for {
		rows, err := c.rows.ClaimDueRows(ctx, o.Batch)
		if stop, runErr := stopOn(ctx, err); stop {
			return runErr
		}
		if err != nil {
			failures++
			logError(ctx, o.Logger, worker, "retail: claiming due rows failed; retrying", err)
		} else {
			failures = 0
		}
		for _, row := range rows {
			if ctx.Err() != nil {
				return nil
			}
			if err := c.refresh(ctx, row); err != nil {
				if stop, runErr := stopOn(ctx, err); stop {
					return runErr
				}
				logError(ctx, o.Logger, worker, "retail: refreshing a cached row failed; skipping it", err, slog.String("row", row))
			}
		}
		poll := o.Poll
		switch {
		case failures > 0:
			poll = retryPause(o.Poll, failures)
		case len(rows) >= o.Batch:
			// A full batch means more rows may be due.
			poll = 0
		}
		if !pause(ctx, c.closing, poll) {
			return nil
		}
	}
}

// maxRetryPause is the longest a RowCacher waits after failed claims.
const maxRetryPause = 5 * time.Second

// retryPause is how long a RowCacher waits after failures claims failed in
// a row: Poll, doubled each time up to maxRetryPause (or Poll if longer),
// so that a Store that cannot answer (Redis down) is asked, and the
// failure logged, a few times a minute rather than at every Poll.
func retryPause(poll time.Duration, failures int) time.Duration {
	d := poll
	for i := 1; i < failures && d < maxRetryPause; i++ {
		d *= 2
	}
	return max(min(d, maxRetryPause), poll)
}

// refresh loads row and stores its JSON, and calls OnChange if it is set
// and the data changed.
func (c *RowCacher) refresh(ctx context.Context, row string) error {
	v, err := c.load(ctx, row)
	if err != nil {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if c.opts.OnChange == nil {
		_, err := c.setRow(ctx, row, data)
		return err
	}
	old, cached, err := c.rows.Row(ctx, row)
	if err != nil {
		return err
	}
	stored, err := c.setRow(ctx, row, data)
	if !stored || !cached || bytes.Equal(old, data) {
		return err
	}
	if err := c.opts.OnChange(ctx, row); err != nil {
		return fmt.Errorf("retail: RowCacher: OnChange: %w", err)
	}
	return nil
}

// setRow stores data as row's cached copy, unless row was unscheduled
// while it was loading, and counts the refresh.
func (c *RowCacher) setRow(ctx context.Context, row string, data []byte) (stored bool, err error) {
	stored, err = c.rows.SetScheduledRow(ctx, row, data)
	if stored {
		c.stats.rowsRefreshed.Add(1)
	}
	return stored, err
}
