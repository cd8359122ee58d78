package retail

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
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
// above; values out of range make Run fail with an error matching
// [ErrInvalid].
type RowCacherOptions struct {
	// Poll is how long the cacher waits after a claim that returned fewer
	// than Batch rows, or failed; DefaultRowPoll if zero. It bounds how late
	// a due row is refreshed.
	Poll time.Duration

	// Batch is the most rows claimed at once, at most [MaxClaimRows];
	// DefaultRowBatch if zero. A claimed row waits for the rows before it
	// in its batch to load, and is refreshed a period late if Run stops
	// before loading it, so large batches trade latency for fewer claims.
	Batch int

	// Logger receives the errors the cacher skips or retries after;
	// slog.Default() if nil.
	Logger *slog.Logger
}

// RowCacher keeps the cached copies of scheduled database rows fresh: the
// book's cache_rows loop. It claims the rows that are due (see
// [Rows.ScheduleRowCache] and [Rows.ClaimDueRows]), loads each one through
// its RowLoader and stores the JSON with [Rows.SetRow]. Several RowCachers,
// in one process or many, may run against one Store: a due row is claimed
// by one of them per period.
type RowCacher struct {
	rows Rows
	load RowLoader
	opts RowCacherOptions
}

// NewRowCacher returns a cacher of s's scheduled rows that loads them with
// load. It panics if s or load is nil, which is a programming error, as
// http.Handle does with a nil handler.
func NewRowCacher(s Rows, load RowLoader, opts RowCacherOptions) *RowCacher {
	if s == nil {
		panic("retail: NewRowCacher: nil Rows")
	}
	if load == nil {
		panic("retail: NewRowCacher: nil RowLoader")
	}
	if opts.Poll == 0 {
		opts.Poll = DefaultRowPoll
	}
	if opts.Batch == 0 {
		opts.Batch = DefaultRowBatch
	}
	return &RowCacher{rows: s, load: load, opts: opts}
}

// Run refreshes due rows until ctx ends, and then returns nil. If the Store
// is closed it returns an error matching [ErrClosed]; if the options are
// out of range, an error matching [ErrInvalid] at once.
//
// A row whose load, encoding or storing fails is logged and skipped: it
// stays scheduled, since claiming it already set its next refresh, so it
// is tried again one delay later, and its previous cached copy, if any, is
// kept until then. A failed claim is logged and retried after Poll.
func (c *RowCacher) Run(ctx context.Context) error {
	const worker = "RowCacher"
	o := c.opts
	switch {
	case o.Poll < 0:
		return invalid(worker, "Poll", "negative")
	case o.Batch < 0 || o.Batch > MaxClaimRows:
		return invalid(worker, "Batch", "not in 1.."+strconv.Itoa(MaxClaimRows))
	}
	for {
		rows, err := c.rows.ClaimDueRows(ctx, o.Batch)
		if stop, runErr := stopOn(ctx, worker, err); stop {
			return runErr
		}
		if err != nil {
			logError(ctx, o.Logger, worker, "retail: claiming due rows failed; retrying", err)
		}
		for _, row := range rows {
			if ctx.Err() != nil {
				return nil
			}
			if err := c.refresh(ctx, row); err != nil {
				if stop, runErr := stopOn(ctx, worker, err); stop {
					return runErr
				}
				logError(ctx, o.Logger, worker, "retail: refreshing a cached row failed; skipping it", err, slog.String("row", row))
			}
		}
		poll := o.Poll
		if len(rows) >= o.Batch {
			// A full batch means more rows may be due.
			poll = 0
		}
		if !pause(ctx, poll) {
			return nil
		}
	}
}

// refresh loads row and stores its JSON.
func (c *RowCacher) refresh(ctx context.Context, row string) error {
	v, err := c.load(ctx, row)
	if err != nil {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.rows.SetRow(ctx, row, data)
}
