package retail

import (
	"context"
	"time"
)

// Store is the hot state of a web shop: login sessions, carts, cached pages,
// cached database rows and item-view analytics.
//
// Every method takes a context first. A context that has already ended makes
// the call return an error matching the context's error before anything is
// written. Invalid arguments make the call return an [*InputError] (matching
// [ErrInvalid]) before anything is written; the rules are in the package
// documentation, "Input rules". After [Store.Close], every call with valid
// arguments returns an error matching [ErrClosed]. Every other error is an
// [*OpError].
//
// A miss is not an error: methods that look something up report it with a
// false boolean or an empty result and a nil error.
//
// Implementations are safe for concurrent use by multiple goroutines. Slices,
// maps and byte slices returned by a Store belong to the caller, and the Store
// keeps no reference to slices passed in.
//
// The package [github.com/retailkit/retail/conformance] is the executable form
// of this contract; every implementation must pass it unchanged.
type Store interface {
	Sessions
	Carts
	Pages
	Rows
	Views

	// Close releases the Store's resources. Calls made after Close return
	// an error matching ErrClosed. Close is idempotent; calling it again
	// returns nil.
	Close() error
}

// Sessions keeps login sessions identified by token cookies: which user a
// token belongs to, when it was last seen, and the items it viewed most
// recently. It is the book's login, recent and viewed keys.
type Sessions interface {
	// CheckToken returns the user that token is logged in as. If the token
	// has no session (never seen, logged out or cleaned), it returns
	// ok == false and a nil error.
	CheckToken(ctx context.Context, token string) (user string, ok bool, err error)

	// UpdateToken records that token is logged in as user and was seen now
	// (by the Store's clock), creating the session if needed. If item is not
	// empty, the item moves to the front of the token's recently viewed list
	// (which keeps the newest [DefaultRecentLimit] items unless configured
	// otherwise) and one view of item is counted for [Views].
	UpdateToken(ctx context.Context, token, user, item string) error

	// RecentItems returns the items token viewed, newest first, each once.
	// A token without a session has no recent items: the result is empty and
	// the error nil.
	RecentItems(ctx context.Context, token string) ([]string, error)

	// Logout ends token's session, deleting its user, recently viewed items
	// and cart. View counts the session contributed are kept. Logging out a
	// token that has no session does nothing and returns nil.
	Logout(ctx context.Context, token string) error

	// SessionCount returns the number of live sessions.
	SessionCount(ctx context.Context) (int, error)

	// CleanSessions runs one cleaning pass: while more than keep sessions
	// are live it removes the least recently seen ones, at most max of them,
	// each with its recently viewed items and its cart, and returns how many
	// it removed. View counts are kept. A session updated (by UpdateToken)
	// after the pass began is never removed by that pass, even within the
	// same millisecond, and a removed session leaves nothing behind. keep
	// and max must not be negative.
	CleanSessions(ctx context.Context, keep, max int) (removed int, err error)
}

// Carts keeps a shopping cart per session: item -> count.
type Carts interface {
	// AddToCart sets the count of item in token's cart. A count of zero or
	// less removes the item's line. The session must exist (see
	// [Sessions.UpdateToken]); otherwise AddToCart returns an error matching
	// [ErrNoSession] and writes nothing, so no cart can outlive its session.
	AddToCart(ctx context.Context, token, item string, count int) error

	// Cart returns token's cart as item -> count. A token without a session,
	// or with an empty cart, yields an empty (possibly nil) map and a nil
	// error.
	Cart(ctx context.Context, token string) (map[string]int, error)
}

// Pages is a cache of rendered pages keyed by a canonical request key. The
// policy deciding what is cached, and the format of what is stored (a
// [CachedPage]), live in [PageCache]; Pages only stores bytes.
type Pages interface {
	// Page returns the body cached under key. If there is none, or it
	// expired, it returns ok == false and a nil error.
	Page(ctx context.Context, key string) (body []byte, ok bool, err error)

	// SetPage caches body under key for ttl, measured by the Store's clock,
	// replacing any page cached under key. A page set at t with ttl d is
	// served while the clock reads before t+d and misses from t+d on; no
	// other clock (a Redis key's TTL) ends it sooner.
	SetPage(ctx context.Context, key string, body []byte, ttl time.Duration) error
}

// Rows caches database rows as JSON and schedules their refreshes. The loop
// that refreshes them is [RowCacher].
type Rows interface {
	// ScheduleRowCache schedules row for caching every delay, starting at
	// once: whatever the delay, the row is due now. A delay of zero or less
	// unschedules the row: the next ClaimDueRows removes it from the
	// schedule and deletes its cached copy.
	ScheduleRowCache(ctx context.Context, row string, delay time.Duration) error

	// ClaimDueRows atomically claims at most limit rows whose refresh is due
	// by the Store's clock, most overdue first, and reschedules each one at
	// now + its delay, so that concurrent claimers never claim the same due
	// row twice in one period. Due rows whose delay is zero or less are
	// unscheduled and their cached copies deleted in the same step; they
	// are not returned. The caller is expected to load each returned row
	// and store it with SetRow.
	ClaimDueRows(ctx context.Context, limit int) (rows []string, err error)

	// Row returns the cached JSON of row. If there is none it returns
	// ok == false and a nil error.
	Row(ctx context.Context, row string) (data []byte, ok bool, err error)

	// SetRow stores data as the cached copy of row. It does not schedule the
	// row.
	SetRow(ctx context.Context, row string, data []byte) error
}

// Views ranks items by how often they were viewed (see
// [Sessions.UpdateToken]). Rank 0 is the most viewed item; items with equal
// counts are ranked by item name, ascending.
type Views interface {
	// ItemRank returns item's rank. An item that was never viewed, or was
	// dropped by RescaleViews, has no rank: ok == false and a nil error.
	ItemRank(ctx context.Context, item string) (rank int, ok bool, err error)

	// TopItems returns the n most viewed items with their counts, rank 0
	// first. Fewer are returned if fewer items have views.
	TopItems(ctx context.Context, n int) ([]ItemViews, error)

	// RescaleViews keeps only the keep most viewed items and multiplies the
	// count of each kept item by factor, which must be in (0, 1]. It is the
	// book's rescale_viewed: run periodically it lets new items catch up.
	RescaleViews(ctx context.Context, keep int, factor float64) error
}

// ItemViews is an item and its view count. Counts are whole numbers until
// [Views.RescaleViews] scales them.
type ItemViews struct {
	Item  string
	Views float64
}
