package retail

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// The book's rescale_viewed settings, used where a [ViewRescalerOptions]
// field is zero.
const (
	DefaultRescaleEvery  = 5 * time.Minute // time between rescales
	DefaultRescaleKeep   = 20_000          // items kept by each rescale
	DefaultRescaleFactor = 0.5             // what each kept item's count is multiplied by
)

// ViewRescalerOptions configures a [ViewRescaler]. Zero fields take the
// defaults named on each; values out of range make [NewViewRescaler] fail
// with an error matching [ErrInvalid].
type ViewRescalerOptions struct {
	// Every is the time from the start of Run, or the end of one rescale,
	// to the next rescale; DefaultRescaleEvery if zero.
	Every time.Duration

	// Keep is how many of the most viewed items each rescale keeps;
	// DefaultRescaleKeep if zero. Because zero means the default, a
	// rescaler cannot drop every item: call [Views.RescaleViews] with keep
	// 0 directly for that.
	Keep int

	// Factor multiplies the count of each kept item, in (0, 1];
	// DefaultRescaleFactor if zero.
	Factor float64

	// Logger receives the errors the rescaler retries after; slog.Default()
	// if nil.
	Logger *slog.Logger

	// Clock numbers the periods of length Every in which the rescalers of
	// every process sharing the Store take turns (see [Coordinator]): each
	// period, the first to wake rescales and the others do not.
	// SystemClock if nil; rescalers sharing a Store must agree on it.
	Clock Clock
}

// ViewRescaler periodically drops the items ranked past Keep and scales the
// view counts of the rest by Factor, so that new items can overtake old
// favourites and the set of ranked items stays bounded: the book's
// rescale_viewed loop over [Views.RescaleViews].
//
// Unlike the book's loop, it waits Every before its first rescale: a
// server that restarts, or is deployed, several times within Every would
// otherwise halve the counts on every start, far more often than once
// every Every.
type ViewRescaler struct {
	views   Views
	opts    ViewRescalerOptions
	turns   turnTaker
	closing <-chan struct{}
}

// NewViewRescaler returns a rescaler of s's view counts, which takes turns
// with the other rescalers over s's data through s (see [Coordinator]). It
// returns an error matching [ErrInvalid] if s is nil or an option is out of
// range.
func NewViewRescaler(s Store, opts ViewRescalerOptions) (*ViewRescaler, error) {
	const op = "NewViewRescaler"
	if s == nil {
		return nil, invalid(op, "store", "nil")
	}
	if opts.Every < 0 {
		return nil, invalid(op, "Every", "negative")
	}
	if opts.Every == 0 {
		opts.Every = DefaultRescaleEvery
	}
	if opts.Keep == 0 {
		opts.Keep = DefaultRescaleKeep
	}
	if opts.Factor == 0 {
		opts.Factor = DefaultRescaleFactor
	}
	if opts.Keep < 0 {
		return nil, invalid(op, "Keep", "negative")
	}
	if !(opts.Factor > 0 && opts.Factor <= 1) { // written so that NaN fails too
		return nil, invalid(op, "Factor", "not in (0, 1]")
	}
	return &ViewRescaler{views: s, opts: opts, turns: newTurnTaker(s, "rescale", opts.Every, opts.Clock), closing: s.closing()}, nil
}

// Run rescales view counts every Every until ctx ends, and then returns
// nil. If the Store is closed it returns, without waiting out Every, the
// Store's error, which matches [ErrClosed]. Other errors are logged, and the rescale is tried again
// Every later. Rescalers in several processes sharing a Store take turns
// (see ViewRescalerOptions.Clock): one rescale a period in all.
//
// When ctx ends, Run returns at once, and starts storing the views the
// process has added up and not yet stored (see [Views.FlushViews]) in the
// background, for 10 s at most; the Store's Close waits for that, and
// stores what is left, so that a process that closes its Store as it
// shuts its workers down loses none.
func (r *ViewRescaler) Run(ctx context.Context) (err error) {
	defer func() {
		if err == nil {
			r.flushViews(ctx)
		}
	}()
	o := r.opts
	done := int64(-1) // the turn this rescaler last rescaled in
	for pause(ctx, r.closing, o.Every) {
		turn, mine, err := r.turns.mine(ctx)
		if err == nil && (!mine || turn == done) {
			continue // another rescaler's turn, or done for this one
		}
		if err == nil {
			if err = r.views.RescaleViews(ctx, o.Keep, o.Factor); err == nil {
				done = turn
			}
		}
		if stop, runErr := stopOn(ctx, err); stop {
			return runErr
		}
		if err != nil {
			logError(ctx, o.Logger, "ViewRescaler", "retail: rescaling views failed; retrying later", err)
		}
	}
	return nil
}

// flushViews starts storing the process's views as Run returns, in the
// background, with a context of its own: Run's has ended. A closed Store
// has nothing to flush.
func (r *ViewRescaler) flushViews(ctx context.Context) {
	go func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		if err := r.views.FlushViews(fctx); err != nil && !errors.Is(err, ErrClosed) {
			logError(fctx, r.opts.Logger, "ViewRescaler", "retail: storing the views left failed", err)
		}
	}()
}
