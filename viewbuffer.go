package retail

import (
	"context"
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
// counted before it. A flush that fails puts its counts back for the next.
type viewBuffer struct {
	d     driver.Store
	every time.Duration

	mu      sync.Mutex
	pending map[string]int
	timer   *time.Timer // armed while pending is not empty
	closed  bool

	flushing sync.Mutex // held by the one flush running
	failures *counter
}

func newViewBuffer(d driver.Store, every time.Duration, failures *counter) *viewBuffer {
	return &viewBuffer{d: d, every: every, pending: make(map[string]int), failures: failures}
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

// flush sends every view counted so far. If the backend fails, the counts
// go back into the buffer and the timer is armed again.
func (b *viewBuffer) flush(ctx context.Context) error {
	b.flushing.Lock()
	defer b.flushing.Unlock()
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
	err := b.d.CountViews(ctx, views)
	if err == nil {
		return nil
	}
	b.failures.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	for item, n := range taken {
		b.pending[item] += n
	}
	if !b.closed {
		b.timer.Reset(b.every)
	}
	return err
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
