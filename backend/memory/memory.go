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
	"sync"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
)

// Options configures a Store. The zero value is the book's configuration.
type Options struct {
	// Clock tells the Store the time; retail.SystemClock if nil.
	Clock retail.Clock
	// RecentLimit is how many recently viewed items a session keeps;
	// retail.DefaultRecentLimit if zero. It must not be negative.
	RecentLimit int
}

// Store is an in-memory retail.Store. Create one with New; it is safe for
// concurrent use.
type Store struct {
	retail.Store
}

// store is the driver under Store.
type store struct {
	clock       retail.Clock
	recentLimit int

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

var (
	_ retail.Store = (*Store)(nil)
	_ driver.Store = (*store)(nil)
)

// New returns an empty Store. It returns an error matching retail.ErrInvalid
// if an option is out of range.
func New(opts Options) (*Store, error) {
	if opts.RecentLimit < 0 {
		return nil, &retail.InputError{Op: "memory.New", Arg: "RecentLimit", Reason: "negative"}
	}
	if opts.Clock == nil {
		opts.Clock = retail.SystemClock{}
	}
	if opts.RecentLimit == 0 {
		opts.RecentLimit = retail.DefaultRecentLimit
	}
	d := &store{
		clock:       opts.Clock,
		recentLimit: opts.RecentLimit,
		sessions:    make(map[string]*session),
		views:       make(map[string]*rankKey),
		pages:       make(map[string]*page),
		rows:        make(map[string]*rowEntry),
		rowData:     make(map[string][]byte),
	}
	return &Store{retail.NewStore(d)}, nil
}

// Close implements driver.Store. There is nothing to release; calls still
// running when the Store is closed complete.
func (s *store) Close() error { return nil }

// now reads the clock at the millisecond resolution every backend uses.
func (s *store) now() int64 { return s.clock.Now().UnixMilli() }

func cloneBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return append(make([]byte, 0, len(b)), b...)
}
