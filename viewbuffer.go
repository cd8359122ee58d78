package retail

import (
	"context"
	"crypto/rand"
	"sync"
	"time"

	"github.com/retailkit/retail/driver"
)

// DefaultViewFlush is how long a Store over a networked backend adds up
// item views in its process before it sends them, as one increment per
// item (see [StoreOptions]).
const DefaultViewFlush = time.Second

// flushTimeout bounds a flush that no caller waits for (the timer's, and
// Close's).
const flushTimeout = 10 * time.Second

// viewBuffer adds up the views counted in this process, item -> views, so
// that a shop sends the backend one increment per item and window instead
// of one per page view. A flush takes the whole buffer; flushes run one at
// a time, so that a read that flushes first sees every view its process
// counted before it. A flush that fails is sent again, under the same
// driver.ViewFlush, before anything else, so that the driver counts it
// once even if the failed call was applied after all (a server that
// stalled past the call's deadline runs it when it wakes).
type viewBuffer struct {
	d     driver.Store
	every time.Duration

	mu      sync.Mutex
	pending map[string]int
	timer   *time.Timer // armed while pending is not empty or a flush failed
	closed  bool

	// flushing holds a value while a flush runs; the fields below it are
	// the flush's.
	flushing chan struct{}
	process  string // names this buffer's flushes (driver.ViewFlush)
	seq      uint64 // of the last flush taken from pending
	unsent   *unsentFlush
	failures *counter
}

// unsentFlush is a flush that failed, to be sent again as it was.
type unsentFlush struct {
	flush driver.ViewFlush
	views []driver.ItemViews
	since time.Time // when it first failed
}

func newViewBuffer(d driver.Store, every time.Duration, failures *counter) *viewBuffer {
	return &viewBuffer{d: d, every: every, pending: make(map[string]int),
		flushing: make(chan struct{}, 1), process: rand.Text(), failures: failures}
}

// add counts one view of item, and arms the timer that flushes it within
// the window. It reports false, counting nothing, once close has begun:
// close's flush may have run already and no timer will run again, so the
// caller must send the view itself.
func (b *viewBuffer) add(item string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	// The first view of an empty buffer opens the window; later ones,
	// of this item or another, wait for its end.
	opens := len(b.pending) == 0
	b.pending[item]++
	if opens {
		if b.timer == nil {
			b.timer = time.AfterFunc(b.every, b.flushLater)
		} else {
			b.timer.Reset(b.every)
		}
	}
	return true
}

// flushLater is the timer's flush; its errors wait for the next window.
func (b *viewBuffer) flushLater() {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	_ = b.flush(ctx)
}

// flush sends the flush that failed last, if any, then every view counted
// so far, once the flush running, if any, has ended or ctx has. If the
// driver fails, the flush is kept to be sent again as it was, and the
// timer is armed again. A flush that has failed for half of
// driver.ViewFlushMemory is given up: the driver may forget it soon, and
// would then count it twice.
func (b *viewBuffer) flush(ctx context.Context) error {
	select {
	case b.flushing <- struct{}{}:
	case <-ctx.Done():
		// The views waiting now may have opened their window while the
		// flush running held them off: no timer would take them.
		b.arm(true)
		return ctx.Err()
	}
	defer func() { <-b.flushing }()
	if u := b.unsent; u != nil && time.Since(u.since) < driver.ViewFlushMemory/2 {
		if err := b.send(ctx, u.flush, u.views); err != nil {
			return err
		}
	}
	b.unsent = nil
	b.mu.Lock()
	if len(b.pending) == 0 {
		b.mu.Unlock()
		return nil
	}
	taken := b.pending
	b.pending = make(map[string]int, len(taken))
	b.mu.Unlock()

	views := make([]driver.ItemViews, 0, len(taken))
	for item, n := range taken {
		views = append(views, driver.ItemViews{Item: item, Views: float64(n)})
	}
	b.seq++
	flush := driver.ViewFlush{Process: b.process, Seq: b.seq}
	if err := b.send(ctx, flush, views); err != nil {
		b.unsent = &unsentFlush{flush: flush, views: views, since: time.Now()}
		return err
	}
	return nil
}

// send sends one flush; if it fails, it counts the failure and arms the
// timer again. The caller holds flushing.
func (b *viewBuffer) send(ctx context.Context, flush driver.ViewFlush, views []driver.ItemViews) error {
	err := b.d.CountViews(ctx, flush, views)
	if err == nil {
		return nil
	}
	b.failures.Add(1)
	b.arm(false)
	return err
}

// arm arms the timer to flush in a window, unless close has begun, or
// ifPending is set and no views wait. The first view added made the
// timer; nothing else has anything to flush.
func (b *viewBuffer) arm(ifPending bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.timer == nil || ifPending && len(b.pending) == 0 {
		return
	}
	b.timer.Reset(b.every)
}

// close stops the timer and flushes what is left.
func (b *viewBuffer) close() error {
	b.mu.Lock()
	b.closed = true
	if b.timer != nil {
		b.timer.Stop()
	}
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	return b.flush(ctx)
}
