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
// ok == false, and a write that depends on a session's state reports a
// [Status]. It never returns one of the retail package's sentinel errors.
//
// Time comes from the Store's clock, which the backend's options give it;
// sessions expire by it (see retail.Sessions), and every limit the retail
// package names (MaxCartLines, MaxSessionValues, MaxCartCount) is the
// driver's to enforce where it depends on stored state.
//
// Every method is required, those that only some drivers have work for
// included (Claim, RepairSessions, CacheCounts): a driver says what it does
// by how it implements each, and the retail package never type-asserts a
// driver for more. So a decorator of a driver that embeds a driver.Store
// (to trace or time its calls) keeps every ability of the driver beneath
// it.
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
	// StartSession creates a session for token (user "" for a guest), or
	// reports Exists, writing nothing, if token names a live session. The
	// session is created with the options given (see SessionOptions): it
	// holds opts.Values (those that are not nil) from the start.
	StartSession(ctx context.Context, token, user string, opts SessionOptions) (Status, error)

	// CheckToken returns the user of token's live session, or ok == false.
	CheckToken(ctx context.Context, token string) (user string, ok bool, err error)

	// RefreshSession records a visit of token's live session (and moves
	// item, if not empty, to the front of its recent items, without
	// counting a view: see CountViews), or reports ok == false, writing
	// nothing.
	RefreshSession(ctx context.Context, token, item string) (user string, ok bool, err error)

	// UpdateToken creates or refreshes token's session as logged in as user;
	// a non-empty item goes to the front of its recent items (its view is
	// counted through CountViews).
	UpdateToken(ctx context.Context, token, user, item string) error

	// RenewSession moves token's live session to newToken (token !=
	// newToken), setting user if it is not empty. With a user (a login)
	// the session's lifetime starts again: opts.Lifetime if it is not 0,
	// else the driver's Lifetime. Without one (then opts is zero) the
	// session keeps its start and lifetime. The session keeps its label
	// unless opts.Label is not empty: it replaces it. The moved session
	// holds the old one's values with opts.Values applied (see
	// SessionOptions) from the instant newToken names it.
	//
	// It reports NoSession if token has no live session, Full if the
	// session would hold more than retail.MaxSessionValues values once
	// opts.Values are applied, and Exists if newToken names a live
	// session; then nothing is written.
	RenewSession(ctx context.Context, token, newToken, user string, opts SessionOptions) (Status, error)

	// RecentItems returns token's recently viewed items, newest first; nil
	// or empty without a live session.
	RecentItems(ctx context.Context, token string) ([]string, error)

	// Logout deletes token's session with its recent items, cart and values.
	Logout(ctx context.Context, token string) error

	// UserSessions returns the live sessions of user, oldest first.
	UserSessions(ctx context.Context, user string) ([]SessionInfo, error)

	// LogoutUser logs out every session of user and returns how many.
	LogoutUser(ctx context.Context, user string) (int, error)

	// SessionCount returns the number of sessions held.
	SessionCount(ctx context.Context) (int, error)

	// CleanSessions runs one cleaning pass and returns how many sessions it
	// removed; keep and max are not negative.
	CleanSessions(ctx context.Context, keep, max int) (removed int, err error)

	// SetValue stores value under key in token's live session. It reports
	// NoSession, or Full if the session holds retail.MaxSessionValues other
	// keys; then nothing is written.
	SetValue(ctx context.Context, token, key string, value []byte) (Status, error)

	// Value returns the value under key in token's live session.
	Value(ctx context.Context, token, key string) (value []byte, ok bool, err error)

	// PopValue returns and deletes the value under key, atomically.
	PopValue(ctx context.Context, token, key string) (value []byte, ok bool, err error)

	// DeleteValue deletes the value under key, if any.
	DeleteValue(ctx context.Context, token, key string) error

	// AddToCart sets item's count in token's cart (count <= 0 removes the
	// line). It reports NoSession, or Full if the line is new and the cart
	// has retail.MaxCartLines lines; then nothing is written.
	AddToCart(ctx context.Context, token, item string, count int) (Status, error)

	// IncrementCart adds n to item's count and returns the new count (0 if
	// the line is gone). It reports NoSession, Full as AddToCart does, or
	// TooMany if the count would exceed retail.MaxCartCount; then nothing
	// is written.
	IncrementCart(ctx context.Context, token, item string, n int) (count int, st Status, err error)

	// Cart returns token's cart; nil or empty without a live session.
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

	// SetItemPage stores data under key as SetPage does and records key as
	// one of item's pages, replacing whatever item (or none) the key had.
	// A page later stored under key with SetPage, or with SetItemPage for
	// another item, is no longer item's.
	SetItemPage(ctx context.Context, item, key string, data []byte, ttl time.Duration) error

	// DeletePage deletes the page stored under key; nothing if there is
	// none.
	DeletePage(ctx context.Context, key string) error

	// PurgeItemPages deletes every page still recorded as item's and
	// returns how many of them existed (were live by the Store's clock, or
	// at least not yet dropped by the backend). Pages stored with SetPage
	// are untouched. A SetItemPage for item concurrent with the purge may
	// survive it.
	PurgeItemPages(ctx context.Context, item string) (n int, err error)

	// ScheduleRowCache makes row due now and records its delay; a delay of
	// zero or less unschedules it at the next claim.
	ScheduleRowCache(ctx context.Context, row string, delay time.Duration) error

	// ClaimDueRows claims up to limit due rows (1 <= limit); due rows
	// whose delay is zero or less, which it unschedules, do not count
	// toward limit. The copies of the rows it unschedules must go, by a
	// later claim if this one cannot delete them.
	ClaimDueRows(ctx context.Context, limit int) (rows []string, err error)

	// Row returns row's cached data, or ok == false if there is none.
	Row(ctx context.Context, row string) (data []byte, ok bool, err error)

	// SetRow stores data as row's cached copy.
	SetRow(ctx context.Context, row string, data []byte) error

	// SetScheduledRow stores data as row's cached copy if row is
	// scheduled (a delay of zero or less not yet claimed counts as
	// scheduled); if a claim has unscheduled it, it stores nothing, leaves
	// no copy and returns stored == false. A claim that unschedules the
	// row at the same time must not leave the copy behind either, nor may
	// a call that fails once it may have stored the copy.
	SetScheduledRow(ctx context.Context, row string, data []byte) (stored bool, err error)

	// CountViews adds each entry's Views, a whole number of at least 1, to
	// the view count of its Item; the items are distinct. It is how the
	// views of CountView, RefreshSession and UpdateToken reach the driver:
	// those calls of the driver do not count views themselves.
	//
	// flush names the call if the Store will send the same views again
	// after a failure (see ViewFlush); the driver must then count them
	// once in all, even if a call that failed (its deadline passed while
	// the server stalled) was applied after all. A driver whose failed
	// calls apply nothing may ignore it. The zero ViewFlush names no
	// flush: the views are not sent again, and a driver that fails midway
	// may have added some of them.
	CountViews(ctx context.Context, flush ViewFlush, views []ItemViews) error

	// ItemRank returns item's rank by views, or ok == false if it has none.
	ItemRank(ctx context.Context, item string) (rank int, ok bool, err error)

	// TopItems returns the n most viewed items, rank 0 first (0 <= n).
	TopItems(ctx context.Context, n int) ([]ItemViews, error)

	// RescaleViews keeps the keep most viewed items and multiplies their
	// counts by factor, which is in (0, 1].
	RescaleViews(ctx context.Context, keep int, factor float64) error

	// Claim claims turn number turn of the work named name for owner if no
	// owner claimed it or a later turn, and reports whether owner holds it
	// (see retail.Coordinator): it is how the workers of every process
	// sharing the data take turns. It is atomic across everything that
	// shares the data: the processes sharing a server, for a driver such
	// as Redis; the goroutines of the process, for a driver whose data
	// lives in it, which keeps its claims in process memory. The claim is
	// kept for at least hold.
	Claim(ctx context.Context, name, owner string, turn int64, hold time.Duration) (bool, error)

	// RepairSessions finds the sessions that the driver's indexes miss (so
	// that SessionCount does not count them, CleanSessions never removes
	// them, or LogoutUser does not end them) and indexes them, and removes
	// index entries whose session has long been gone; it returns how many
	// entries it found wrong. Such entries are left by a failure between
	// the steps of a call that writes a session and its index entries
	// separately, such as on Redis Cluster, where they live on different
	// nodes and a master that fails over loses the writes its replica had
	// not received. A driver that writes each session and its entries in
	// one atomic step has nothing to repair and returns 0. It may run while
	// other calls do, in several processes at once.
	RepairSessions(ctx context.Context) (int, error)

	// CacheCounts returns how many reads of cacheable data the driver has
	// served from a client-side cache in process memory (hits) and from
	// its server (misses) since it was created; retail.Stats reports them
	// as ClientCacheHits and ClientCacheMisses. A driver without such a
	// cache returns 0, 0. Neither count ever decreases. Every Stats calls
	// it, so it must be cheap (a few atomic loads), safe for concurrent
	// use, and work after Close.
	CacheCounts() (hits, misses uint64)

	// Close releases the driver's resources. The wrapper calls it once, on
	// the first Close of the Store; its error is returned from that Close.
	Close() error
}

// Status is the outcome of a write that depends on a session's state.
type Status int

// The outcomes. The zero value is OK.
const (
	OK        Status = iota // written
	NoSession               // the token has no live session
	Exists                  // the new token already names a session
	Full                    // the cart has MaxCartLines lines, or the session MaxSessionValues values (or would have more)
	TooMany                 // the cart line would exceed MaxCartCount
)

// SessionOptions are what StartSession and RenewSession give the session
// beyond its user (retail.SessionOptions, checked against the input rules).
type SessionOptions struct {
	// Lifetime is 0 for the driver's Lifetime, or else the session's
	// own, positive and at most the driver's Lifetime, to be rounded up to
	// whole milliseconds.
	Lifetime time.Duration

	// Label is kept with the session for UserSessions; "" for none, or,
	// in RenewSession, to keep the session's.
	Label string

	// Values are set in the session in the same atomic step that creates
	// it under its token (or moves it there): no call, in any process,
	// may find the session under its token without them. A nil value
	// deletes its key (RenewSession) or does nothing (StartSession); any
	// other, an empty one included, is stored. Keys and values follow
	// SetValue's rules, and at most retail.MaxSessionValues values are
	// not nil; whether the moved session would hold more is the driver's
	// to check. The driver must not keep the map or its values.
	Values map[string][]byte
}

// SessionInfo describes a live session, as UserSessions lists them.
type SessionInfo struct {
	ID       string // the session's ID, as the driver's calls take it
	User     string
	Created  time.Time
	LastSeen time.Time
	Label    string // as StartSession or RenewSession last gave it; "" for none
}

// ViewFlush names one sending of the views a Store added up: Seq counts
// the flushes of the Store named Process, from 1, and a flush that fails
// is sent again, with its Seq, before any later one. So a driver counts
// each flush once by keeping, for each Process, the last Seq it counted,
// and counting a flush only if its Seq is greater; it keeps it for at
// least ViewFlushMemory after the Process's last flush.
type ViewFlush struct {
	Process string
	Seq     uint64
}

// ViewFlushMemory is how long after a Store's last flush a driver must
// still know it (see ViewFlush): twice as long as a Store keeps sending a
// flush that fails.
const ViewFlushMemory = time.Hour

// ItemViews is an item and its view count, as TopItems returns them.
type ItemViews struct {
	Item  string
	Views float64
}
