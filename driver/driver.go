// Package driver is the contract between the retail package and a backend.
//
// Users never see a driver: they use a [github.com/retailkit/retail.Store],
// which a backend's constructor makes with
// [github.com/retailkit/retail.NewStore] over its driver. That wrapper checks
// every argument against the input rules, returns a canceled context's error,
// refuses calls after Close and wraps every error once, naming the operation
// and its key argument. So a driver may assume, on every call:
//
//   - every argument follows the input rules of the retail package (ids of
//     1..256 bytes without control characters, and so on);
//   - the context was live when the call began (it may still end during it);
//   - Close has not been called.
//
// A driver returns raw errors (its client's, unwrapped) and reports
// conditions the user branches on as results, not errors: a miss is
// ok == false, a cart change without a session is found == false. It never
// returns one of the retail package's sentinel errors.
//
// Beyond that, each method's contract is the one documented on the
// corresponding method of retail.Store; this package documents only what
// differs. The conformance suite (github.com/retailkit/retail/conformance)
// is the executable form of both.
package driver

import (
	"context"
	"time"
)

// Store is what a backend implements. Implementations must be safe for
// concurrent use. Slices, maps and byte slices a driver returns belong to the
// caller; a driver must not keep slices passed to it after the call returns.
type Store interface {
	// CheckToken returns the user token's session is logged in as, or
	// ok == false if there is no session.
	CheckToken(ctx context.Context, token string) (user string, ok bool, err error)

	// UpdateToken records that token is logged in as user and was seen now,
	// creating the session if needed; a non-empty item is moved to the front
	// of the recently viewed list and counted as one view.
	UpdateToken(ctx context.Context, token, user, item string) error

	// RecentItems returns token's recently viewed items, newest first; nil
	// or empty without a session.
	RecentItems(ctx context.Context, token string) ([]string, error)

	// Logout deletes token's session with its recent items and cart.
	Logout(ctx context.Context, token string) error

	// SessionCount returns the number of live sessions.
	SessionCount(ctx context.Context) (int, error)

	// CleanSessions runs one cleaning pass and returns how many sessions it
	// removed; keep and max are not negative.
	CleanSessions(ctx context.Context, keep, max int) (removed int, err error)

	// AddToCart sets item's count in token's cart (count <= 0 removes the
	// line), only while token has a session: found is false, and nothing
	// is written, if it has none.
	AddToCart(ctx context.Context, token, item string, count int) (found bool, err error)

	// Cart returns token's cart; nil or empty without a session.
	Cart(ctx context.Context, token string) (map[string]int, error)

	// Page returns the bytes stored under key by SetPage, or ok == false if
	// there are none or they expired by the Store's clock.
	Page(ctx context.Context, key string) (data []byte, ok bool, err error)

	// SetPage stores data under key until ttl has passed by the Store's
	// clock. A backend that also expires keys by a clock of its own (a
	// Redis TTL) must set that expiry beyond the Store's, as a memory safety
	// net only: it must never end an entry the Store's clock still
	// considers live.
	SetPage(ctx context.Context, key string, data []byte, ttl time.Duration) error

	// ScheduleRowCache makes row due now and records its delay; a delay of
	// zero or less unschedules it at the next claim.
	ScheduleRowCache(ctx context.Context, row string, delay time.Duration) error

	// ClaimDueRows claims up to limit due rows (1 <= limit).
	ClaimDueRows(ctx context.Context, limit int) (rows []string, err error)

	// Row returns row's cached data, or ok == false if there is none.
	Row(ctx context.Context, row string) (data []byte, ok bool, err error)

	// SetRow stores data as row's cached copy.
	SetRow(ctx context.Context, row string, data []byte) error

	// ItemRank returns item's rank by views, or ok == false if it has none.
	ItemRank(ctx context.Context, item string) (rank int, ok bool, err error)

	// TopItems returns the n most viewed items, rank 0 first (0 <= n).
	TopItems(ctx context.Context, n int) ([]ItemViews, error)

	// RescaleViews keeps the keep most viewed items and multiplies their
	// counts by factor, which is in (0, 1].
	RescaleViews(ctx context.Context, keep int, factor float64) error

	// Close releases the driver's resources. The wrapper calls it once, on
	// the first Close of the Store; its error is returned from that Close.
	Close() error
}

// ItemViews is an item and its view count, as TopItems returns them.
type ItemViews struct {
	Item  string
	Views float64
}
