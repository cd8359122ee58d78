// Package memory is an in-process [retail.Store]: the reference semantics of
// the conformance suite, and a fast store for tests and single-process shops.
//
// Sessions are kept in a map and a list ordered by last-seen time, so
// UpdateToken and CleanSessions cost O(1) a session. View counts live in an
// order-statistic B+tree, so ItemRank costs O(log n) with no sorting per
// query. Each concern (sessions and carts, views, pages, rows) has its own
// lock, so callers touching different concerns do not wait for each other.
//
// Nothing is persisted: the state lives as long as the Store.
package memory

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/retailkit/retail"
)

// Options configures a Store. The zero value is the book's configuration.
type Options struct {
	// Clock tells the Store the time. Zero means retail.SystemClock.
	Clock retail.Clock
	// RecentLimit is how many recently viewed items a session keeps.
	// Zero or less means retail.DefaultRecentLimit.
	RecentLimit int
}

// Store is an in-memory retail.Store. Create one with New; it is safe for
// concurrent use.
type Store struct {
	clock       retail.Clock
	recentLimit int
	closed      atomic.Bool

	sessMu   sync.RWMutex
	sessions map[string]*session
	byAge    sessionList // oldest first
	seq      uint64      // bumped by every UpdateToken, under sessMu

	viewMu sync.RWMutex
	views  map[string]*rankKey // each item's current place in ranks
	ranks  rankTree

	pageMu sync.Mutex
	pages  map[string]*page
	expiry pageHeap

	rowMu    sync.Mutex
	rows     map[string]*rowEntry
	schedule rowHeap
	rowData  map[string][]byte
}

var _ retail.Store = (*Store)(nil)

// New returns an empty Store.
func New(opts Options) *Store {
	if opts.Clock == nil {
		opts.Clock = retail.SystemClock{}
	}
	if opts.RecentLimit <= 0 {
		opts.RecentLimit = retail.DefaultRecentLimit
	}
	return &Store{
		clock:       opts.Clock,
		recentLimit: opts.RecentLimit,
		sessions:    make(map[string]*session),
		views:       make(map[string]*rankKey),
		pages:       make(map[string]*page),
		rows:        make(map[string]*rowEntry),
		rowData:     make(map[string][]byte),
	}
}

// Close makes every later call return retail.ErrClosed. Calls already
// running complete. Close always returns nil.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

// begin gates every call: invalid input first (inputErr, from the retail
// Validate functions), then a done context, then a closed store.
func (s *Store) begin(ctx context.Context, inputErr error) error {
	if inputErr != nil {
		return inputErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return retail.ErrClosed
	}
	return nil
}

// now reads the clock at the millisecond resolution every backend uses.
func (s *Store) now() int64 { return s.clock.Now().UnixMilli() }

func cloneBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return append(make([]byte, 0, len(b)), b...)
}
