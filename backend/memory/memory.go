// Package memory is an in-process [retail.Store]: the reference semantics of
// the conformance suite, and a fast store for tests and single-process shops.
//
// Sessions are kept in maps by session ID (a hash of the token), lists ordered by last-seen time and an
// index of each user's sessions, so StartSession, RefreshSession,
// UpdateToken, RenewSession and Logout cost O(1), UserSessions and
// LogoutUser O(k) for a user's k sessions (and a sort), and a cleaning pass
// O(1) a session removed or put back in order. View counts live in an
// order-statistic B+tree, so ItemRank costs O(log n) with no sorting per
// query.
//
// Expiry is exact by the Store's clock, at millisecond resolution: a session
// is live while now < lastSeen + Options.IdleTimeout and now < created +
// Options.Lifetime, and every call treats it as absent from the first
// millisecond it is not. An expired session still holds its memory (and is
// counted by SessionCount) until a call touches its token, UserSessions or
// LogoutUser meets it, or CleanSessions removes it; run a
// [retail.SessionCleaner] to bound memory, as with any backend.
//
// Nothing is persisted: the state lives as long as the Store.
//
// # Concurrency
//
// Calls on different sessions or items seldom wait for each other, so that
// many callers do more work than one. Sessions are split into 64 shards by
// a hash of the token, each with its own lock, map and list by age; a call
// on one token locks its shard (RenewSession locks the shards of both
// tokens, in shard order). A refresh does not move its session in the list
// by age, it only marks it, and cleaning puts the marked sessions in order
// when it reaches them, so a refresh writes to no session but its own.
// SessionCount reads a count kept with the maps, exact at every moment.
//
// The index by user is split into shards of its own, by user, whose locks are
// taken after a session shard's. The calls that need every session at one
// moment lock all session shards, and meanwhile every call on sessions waits:
// UserSessions and LogoutUser, which are rare, and CleanSessions, in chunks
// of at most 1024 sessions removed or put in order. A pass removes the least
// recently seen sessions of all shards in order, merging the shards' lists
// (sessions seen in the same millisecond go in the order they were seen
// within a shard, and much so across shards). It never removes a session
// seen after it began.
//
// A view adds one to its item's pending count, in one of 64 shards of view
// counters chosen by the item's name. The first call after it that reads
// ranks (ItemRank, TopItems, RescaleViews) moves every pending count into
// the tree, under the tree's lock, before it reads; a read with nothing to
// move takes only the tree's read lock. So every view counted before a read
// begins is in what it reads, ranks are exact, and the tree changes once per
// item and batch however often the item is viewed. RescaleViews also holds
// every view shard, so no view is counted during it.
//
// Pages and rows each have a lock of their own.
package memory

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
	"github.com/retailkit/retail/internal/settings"
)

// Options configures a Store. The zero value is the book's configuration
// with the retail package's default session times.
type Options struct {
	// Clock tells the Store the time; retail.SystemClock if nil.
	Clock retail.Clock
	// RecentLimit is how many recently viewed items a session keeps;
	// retail.DefaultRecentLimit if zero. It must not be negative.
	RecentLimit int
	// IdleTimeout ends a session not refreshed for this long;
	// retail.DefaultIdleTimeout if zero.
	IdleTimeout time.Duration
	// Lifetime ends a session this long after it was started or last
	// logged in; retail.DefaultLifetime if zero. IdleTimeout and Lifetime
	// must be in retail.MinDuration..retail.MaxSessionTime.
	Lifetime time.Duration
	// TouchEvery is how often, at most, a session that only gets visits is
	// written; see retail.DefaultTouchEvery for the default and what it
	// changes.
	//
	// IdleTimeout, Lifetime and TouchEvery are kept in whole milliseconds,
	// rounded up, as every backend keeps them, so that a session never
	// ends sooner than configured: an IdleTimeout of 1.5 ms is 2 ms.
	TouchEvery time.Duration

	// MaxSessionsPerUser, if positive, is how many live sessions one user
	// may hold: a login beyond it ends the user's least recently seen
	// other sessions before it returns (see
	// retail.StoreOptions.MaxSessionsPerUser for exactly which, and what
	// holds when logins run at once). 0 is no limit; it must not be
	// negative.
	MaxSessionsPerUser int
}

// store is the driver under the retail.Store that New returns.
type store struct {
	clock       retail.Clock
	recentLimit int
	idle        int64 // ms
	lifetime    int64 // ms
	touch       int64 // TouchEvery in ms

	seed   maphash.Seed // picks the shard of a token or user
	shards [shardCount]sessionShard
	users  [shardCount]userShard // the index by user (users.go)
	count  atomic.Int64          // sessions held in all shards

	// loggedOut maps a user to the Unix ms of their last LogoutUser: a
	// session of theirs logged in at or before it is over (see revoked).
	// Entries older than a lifetime end nothing more and are pruned by
	// cleaning. anyLoggedOut spares every request the map while it is
	// empty.
	loggedOut    sync.Map
	anyLoggedOut atomic.Bool

	views viewCounts

	pageMu    sync.Mutex
	pages     map[string]*page
	expiry    pageHeap
	itemPages map[string]map[string]*page // item -> its pages by key (SetItemPage)

	rowMu    sync.Mutex
	rows     map[string]*rowEntry
	schedule rowHeap
	rowData  map[string][]byte

	claims claims // the workers' turns (workers.go)
}

var _ driver.Store = (*store)(nil)

// New returns an empty in-memory Store, safe for concurrent use. It returns
// an error matching retail.ErrInvalid if an option is out of range.
func New(opts Options) (retail.Store, error) {
	d, err := newDriver(opts)
	if err != nil {
		return nil, err
	}
	// Views are counted in the process already: each goes to the driver
	// at once.
	return retail.NewStoreWith(d, retail.StoreOptions{
		ViewFlush: -1, Lifetime: time.Duration(d.lifetime) * time.Millisecond, MaxSessionsPerUser: opts.MaxSessionsPerUser,
	}), nil
}

func newDriver(opts Options) (*store, error) {
	const op = "memory.New"
	if opts.RecentLimit < 0 {
		return nil, &retail.InputError{Op: op, Arg: "RecentLimit", Reason: "negative"}
	}
	if opts.MaxSessionsPerUser < 0 {
		return nil, &retail.InputError{Op: op, Arg: "MaxSessionsPerUser", Reason: "negative"}
	}
	if opts.Clock == nil {
		opts.Clock = retail.SystemClock{}
	}
	if opts.RecentLimit == 0 {
		opts.RecentLimit = retail.DefaultRecentLimit
	}
	times, err := settings.ResolveSessions(op, opts.IdleTimeout, opts.Lifetime, opts.TouchEvery)
	if err != nil {
		return nil, err
	}
	s := &store{
		clock:       opts.Clock,
		recentLimit: opts.RecentLimit,
		idle:        times.Idle,
		touch:       times.Touch,
		lifetime:    times.Lifetime,
		seed:        maphash.MakeSeed(),
		pages:       make(map[string]*page),
		itemPages:   make(map[string]map[string]*page),
		rows:        make(map[string]*rowEntry),
		rowData:     make(map[string][]byte),
	}
	for i := range shardCount {
		s.shards[i].sessions = make(map[string]*session)
		s.shards[i].index = i
		s.users[i].byUser = make(map[string]*session)
	}
	s.views.init()
	return s, nil
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
