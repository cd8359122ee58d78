package rueidisbackend

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// In a cluster the session index lives on a slot of its own, usually on
// another node than a session. While the node that holds it is
// unreachable (it failed and its replica is not yet promoted, say), a
// request whose own session's node answers still checks and refreshes its
// session. A call that creates a session (StartSession, RenewSession, an
// UpdateToken that starts one) keeps the index entry it could not write in
// a bounded buffer (at most maxDeferred tokens; see indexNew), reports
// success, and the buffer goes with the next call that writes the index (an
// update, a refresh that moves its entry, RepairSessions). A refresh whose
// entry could not be raised keeps nothing: the session has an entry, which
// cleaning moves up. (Item views wait in the process anyway and are retried
// by the retail package.)
//
// Index entries are only ever raised or created, so a late or repeated one
// is harmless: an entry without a session is a stray that cleaning
// removes, and a session whose entry lags, or was lost, is moved up or
// indexed again by cleaning and RepairSessions (see cleaning.go).
const maxDeferred = 100_000

// retryAfter is how long the buffer waits to be sent again after a send of
// it failed, so that calls during an outage do not each resend it.
const retryAfter = 100 * time.Millisecond

// deferred is the buffer of index writes waiting for their node.
type deferred struct {
	pending atomic.Bool  // any writes buffered, so that callers skip the lock when none
	retry   atomic.Int64 // Unix ns before which the buffer is not sent again
	mu      sync.Mutex
	index   map[string]float64 // token -> stamp to raise its index entry to (ZADD GT)
}

// keep buffers the index entries of tokens at stamps, which could not be
// written: new ones, or ones taken from the buffer whose send failed. The
// buffer holds at most maxDeferred tokens; what does not fit is dropped.
func (d *deferred) keep(index map[string]float64) {
	d.retry.Store(time.Now().Add(retryAfter).UnixNano())
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.index == nil {
		d.index = map[string]float64{}
	}
	for token, stamp := range index {
		if old, ok := d.index[token]; ok || len(d.index) < maxDeferred {
			d.index[token] = max(old, stamp)
		}
	}
	d.pending.Store(len(d.index) > 0)
}

// take empties the buffer and returns what it held.
func (d *deferred) take() (index map[string]float64) {
	if !d.pending.Load() || time.Now().UnixNano() < d.retry.Load() {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	index, d.index = d.index, nil
	d.pending.Store(false)
	return index
}

// withDeferred sends calls, which write or read the shared sets, preceded
// by the buffered writes, in one round trip, and returns the replies to
// calls. Buffered writes that fail go back to the buffer.
func (s *store) withDeferred(ctx context.Context, calls ...call) []rueidis.RedisResult {
	res, _ := s.sendDeferred(ctx, calls...)
	return res
}

// sendDeferred is withDeferred that also reports how many index entries
// the buffered writes created: entries that a session had lost.
func (s *store) sendDeferred(ctx context.Context, calls ...call) (replies []rueidis.RedisResult, created int) {
	index := s.deferred.take()
	if index == nil {
		return s.do(ctx, calls...), 0
	}
	tokens := slices.Collect(maps.Keys(index))
	flush := make([]call, 0, len(tokens)+len(calls))
	for _, token := range tokens {
		flush = append(flush, s.indexCall(token, index[token]))
	}
	res := s.do(ctx, append(flush, calls...)...)
	failed := map[string]float64{}
	for i, token := range tokens {
		n, err := res[i].AsInt64()
		if err != nil {
			failed[token] = index[token]
		}
		created += int(n) // ZADD answers how many members it added
	}
	if len(failed) > 0 {
		s.deferred.keep(failed)
	}
	return res[len(flush):], created
}
