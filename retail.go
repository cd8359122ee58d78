package retail

import (
	"context"
	"time"
)

// Store is the hot state of a web shop: login sessions, carts, cached pages,
// cached database rows and item-view analytics.
//
// Every method but Stats and Close takes a context first. A context that has
// already ended makes the call return an error matching the context's error
// before anything is written. A context that ends while a call runs makes
// it return that error too, but what it wrote may still be applied: on a
// networked backend the command may reach the server after the caller gave
// up (see the backend's documentation for what such a call can leave). Invalid arguments make the call return an
// [*InputError] (matching [ErrInvalid]) before anything is written; the rules
// are in the package documentation, "Input rules". After [Store.Close], every
// call with valid arguments but Stats and Close returns an error matching
// [ErrClosed].
// Every other error is an [*OpError].
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
//
// The policies built over a Store ([PageCache], [SessionCleaner],
// [RowCacher], [ViewRescaler]) take a Store, not one of its parts: they
// count into its [Stats] through an unexported method of Store, and take
// turns with the workers of the other processes sharing its data through
// its [Coordinator]. So Store's implementations are the Stores that
// [NewStore] returns and the types that embed one, as the backends' Store
// types and any decorator of a Store do; a decorator passes both on to the
// Store it embeds, unless it overrides Claim.
type Store interface {
	Sessions
	SessionValues
	Carts
	Pages
	Rows
	Views
	Coordinator

	// Stats returns a snapshot of the Store's counters: page cache hits and
	// misses, sessions started, logged out and cleaned, worker passes and
	// the like (see [Stats] for each). It takes a few atomic loads, never
	// fails, and works after Close too.
	Stats() Stats

	// Close releases the Store's resources. Calls made after Close return
	// an error matching ErrClosed. Close is idempotent; calling it again
	// returns nil.
	Close() error

	// statCounters returns the counters that Stats reads, for the policies
	// built over the Store to count into.
	statCounters() *counters

	// closing returns a channel that is closed when Close begins, so that
	// the workers built over the Store stop waiting for their next pass.
	closing() <-chan struct{}
}

// Sessions keeps the sessions of visitors, each named by a token (the
// cookie's value): the user it is logged in as, or none for a guest; when
// it was created and last seen; and the items it viewed most recently. It
// is the book's login, recent and viewed keys, with a lifecycle.
//
// # Lifecycle
//
// A session is created by [Sessions.StartSession] (a login, or a guest's
// first action that needs state, such as adding to a cart) or by the book's
// create-or-refresh [Sessions.UpdateToken]. [Sessions.RefreshSession]
// records a visit and never creates one, so a request that carries a token
// whose session ended cannot bring it back. [Sessions.RenewSession] moves a
// session to a new token (at login, or at any change of privilege), keeping
// its cart, recent items and values. [Sessions.Logout] ends it.
//
// A session expires, by the Store's clock, once it has not been refreshed
// for the Store's idle timeout ([DefaultIdleTimeout] unless configured) or
// once its lifetime has passed since it was created or last logged in: the
// Store's lifetime ([DefaultLifetime] unless configured), or a shorter one
// of its own given at login ([Sessions.StartSessionFor],
// [Sessions.RenewSessionFor]). From that instant on every call treats it
// as absent. Its
// data is removed by [Sessions.CleanSessions], on access, or (on Redis) by
// key TTLs set beyond that instant.
type Sessions interface {
	// StartSession creates a session for token, logged in as user, or a
	// guest session if user is empty, created and last seen now. If token
	// already names a live session it reports created == false and writes
	// nothing: tokens are meant to be new random values.
	//
	// Where the backend limits the sessions of a user (its
	// MaxSessionsPerUser option, see [StoreOptions]), a login, here or by
	// RenewSession with a user, ends the user's least recently seen other
	// sessions beyond the limit before it returns.
	StartSession(ctx context.Context, token, user string) (created bool, err error)

	// StartSessionFor is StartSession with the options a login gives (see
	// [SessionOptions]): a lifetime of its own, such as 30 days for a
	// "remember me" login and a day otherwise, a label naming the device,
	// and values it holds from the start. The session expires
	// opts.Lifetime after it started (and by the idle timeout, as every
	// session does); a zero Lifetime is the Store's. Options that break
	// their rules return an error matching [ErrInvalid] and write nothing.
	// Like every session time the lifetime is rounded up to whole
	// milliseconds.
	//
	// The session keeps its lifetime through RefreshSession, through
	// UpdateToken with its own user and through RenewSession without a
	// user (a renewal: its start is kept too). A login replaces it: a
	// RenewSessionFor with the lifetime it gives, a RenewSession with a
	// user, or an UpdateToken that changes the user, with the Store's
	// lifetime; each starts it again from the login. It keeps its label
	// through every call but a RenewSessionFor that gives another.
	StartSessionFor(ctx context.Context, token, user string, opts SessionOptions) (created bool, err error)

	// CheckToken returns the user token's session is logged in as ("" for
	// a guest). If the token has no live session (never seen, logged out,
	// expired or cleaned), it returns ok == false and a nil error.
	CheckToken(ctx context.Context, token string) (user string, ok bool, err error)

	// RefreshSession records a visit of token's live session: it is last
	// seen now, and if item is not empty the item moves to the front of the
	// recently viewed list (which keeps the newest [DefaultRecentLimit]
	// items unless configured otherwise) and one view of it is counted. It
	// returns the session's user ("" for a guest). Without a live session
	// it returns ok == false, writes nothing and counts no view: it never
	// creates a session.
	RefreshSession(ctx context.Context, token, item string) (user string, ok bool, err error)

	// UpdateToken is the book's update_token: it records that token is
	// logged in as user and was seen now, creating the session if there is
	// no live one (an expired session is replaced by a new, empty one), and
	// views item as RefreshSession does. Being create-or-refresh, it brings
	// back a session that a concurrent Logout ended; servers use
	// StartSession and RefreshSession instead.
	UpdateToken(ctx context.Context, token, user, item string) error

	// RenewSession moves token's live session to newToken, which must not
	// name a live session (an expired one under it is dropped): the cart, recent items and values go with it, and
	// token has no session once RenewSession returns. If user is not
	// empty the session is logged in as user and its lifetime starts again
	// (a login); if it is empty the user and lifetime are kept (a renewal
	// after a change of privilege). It reports ok == false, and writes
	// nothing, if token has no live session. If newToken already names a
	// live session it returns an error matching [ErrInvalid] and writes
	// nothing.
	//
	// At no moment is neither token live: a concurrent CheckToken finds
	// one of them. So a RenewSession that fails (the Store's error, a
	// context that ends) may leave both: token's session unchanged, and
	// newToken's, which nobody was handed, listed by UserSessions until
	// it idles out or the user logs out everywhere.
	RenewSession(ctx context.Context, token, newToken, user string) (ok bool, err error)

	// RenewSessionFor is RenewSession for a login that gives the session
	// options, as StartSessionFor does: the session is logged in as user
	// (which must not be empty) and expires opts.Lifetime after the login
	// (the Store's lifetime if it is zero); a non-empty opts.Label replaces
	// its label, an empty one keeps it; opts.Values replace or delete the
	// values of their keys in the moved session. If the options break
	// their rules (the values would leave the session more than
	// [MaxSessionValues] among them), or user is empty, it returns an
	// error matching [ErrInvalid] and writes nothing.
	RenewSessionFor(ctx context.Context, token, newToken, user string, opts SessionOptions) (ok bool, err error)

	// RecentItems returns the items token viewed, newest first, each once.
	// A token without a live session has no recent items: the result is
	// empty and the error nil.
	RecentItems(ctx context.Context, token string) ([]string, error)

	// Logout ends token's session, deleting its recently viewed items,
	// cart and values. View counts the session contributed are kept.
	// Logging out a token that has no session does nothing and returns
	// nil. Once Logout returns, no call other than those that create a
	// session under token (StartSession, UpdateToken, a RenewSession to
	// token) gives token a session again, whatever ran concurrently.
	Logout(ctx context.Context, token string) error

	// UserSessions returns the live sessions logged in as user, oldest
	// first by creation. Guests have none.
	UserSessions(ctx context.Context, user string) ([]SessionInfo, error)

	// EndSession ends the session that UserSessions listed with id (see
	// [SessionInfo]), as Logout ends a token's: a "your devices" page logs
	// one device out with it. An id that names no session does nothing and
	// returns nil; a string that is no session ID at all returns an error
	// matching [ErrInvalid].
	EndSession(ctx context.Context, id string) error

	// LogoutUser ends every session logged in as user (log out
	// everywhere) and returns how many live ones it ended. It ends every
	// session of user logged in at or before the millisecond of the Store's
	// clock in which LogoutUser began: those it finds in the user's index,
	// and also any it cannot find there, such as one that a RenewSession
	// or StartSession running at the same time creates, or one whose
	// index entry a failover lost. From the call on, every call treats
	// such a session as absent. A session logged in after that
	// millisecond is not ended. Across processes, the instant is read from
	// each process's clock, so clocks that disagree by d move the line by
	// up to d.
	LogoutUser(ctx context.Context, user string) (int, error)

	// SessionCount returns the number of sessions the Store holds: live
	// ones, and expired ones that no cleaning pass or access has removed
	// yet.
	SessionCount(ctx context.Context) (int, error)

	// CleanSessions runs one cleaning pass and returns how many sessions it
	// removed, at most max: first sessions that expired by the idle
	// timeout, least recently seen first, then, while more than keep
	// sessions remain, the least recently seen ones. Each goes with its
	// recently viewed items, cart and values; view counts are kept. A
	// session refreshed (by RefreshSession or UpdateToken) after the pass
	// began is never removed by that pass, even within the same
	// millisecond, and a removed session leaves no data behind (a backend
	// may keep its entry in its user's index, which UserSessions and
	// LogoutUser never act on, until the entry expires). keep and max must
	// not be negative.
	CleanSessions(ctx context.Context, keep, max int) (removed int, err error)

	// RepairSessions mends what a failure between the steps of a call can
	// leave behind where a session and its index entries are written in
	// separate steps (Redis Cluster: on different nodes, which fail over
	// one at a time and may lose their last writes): it indexes the
	// sessions that the session index or their user's index misses, and
	// removes index entries whose session has long been gone. It returns
	// how many entries it found wrong. Where every call writes atomically
	// (memory, a single Redis server) it has nothing to do and returns 0.
	// It reads every session, so it is meant for a worker: the
	// [SessionCleaner] runs it every RepairEvery.
	RepairSessions(ctx context.Context) (repaired int, err error)
}

// SessionInfo describes a live session, as [Sessions.UserSessions] lists
// them.
type SessionInfo struct {
	// ID names the session for [Sessions.EndSession]. It is not the
	// session's token: Stores keep only a hash of each token (see the
	// package documentation, "Tokens at rest"), and an ID used as a token
	// names no session. It is safe to show the session's owner.
	ID       string
	User     string
	Created  time.Time // when it was started, or last logged in (see RenewSession)
	LastSeen time.Time // its last refresh
	Label    string    // as the login gave it (see [SessionOptions]); "" for none
}

// SessionOptions are what a login gives its session beyond the user
// ([Sessions.StartSessionFor], [Sessions.RenewSessionFor]). The zero value
// is StartSession's and RenewSession's.
type SessionOptions struct {
	// Lifetime, if not zero, is the session's own lifetime: positive and
	// at most the Store's lifetime, which is the longest any session lives
	// (see the backend's Lifetime option).
	Lifetime time.Duration

	// Label names the session for its owner on a "your devices" page, such
	// as "Firefox on Linux": the application's words, which UserSessions
	// returns as given. At most [MaxLabelLen] bytes of printable UTF-8
	// (the ASCII space included; other spaces and control characters
	// refused); "" for none.
	Label string

	// Values are session values (see [SessionValues]) that the session
	// holds from the instant it exists under its token: StartSessionFor
	// creates it holding them, and RenewSessionFor moves it to the new
	// token holding the old session's values with these in place of
	// those of the same keys. Since they are written in the same step as
	// the session, no call finds the new session without them, and a
	// RenewSessionFor that fails or reports ok == false leaves the old
	// session's values as they were. A login records what it chose with
	// them, so that nothing is left to write, and fail, once the old token
	// names no session.
	//
	// A nil value deletes its key: the new session does not keep the old
	// one's value under it (at StartSessionFor there is nothing to delete,
	// and it does nothing). An empty value that is not nil, such as
	// []byte{}, is stored as the empty value. Each key and value follows
	// SetValue's rules, and the session may hold at most
	// [MaxSessionValues] values once they are applied; otherwise the call
	// returns an error matching [ErrInvalid] and writes nothing. The Store
	// keeps no reference to the map or its values.
	Values map[string][]byte
}

// SessionValues keeps a few small values per session (a flash message, a
// checkout step, a CSRF token): key -> bytes, at most [MaxSessionValues] of
// them and [MaxValueSize] bytes each. They go wherever the session goes:
// through RenewSession, and away with Logout, expiry and cleaning.
type SessionValues interface {
	// SetValue stores value under key in token's session, replacing what
	// was there. Without a live session it returns an error matching
	// [ErrNoSession]; if the session already holds MaxSessionValues other
	// keys, one matching [ErrInvalid]. Either way nothing is written.
	SetValue(ctx context.Context, token, key string, value []byte) error

	// Value returns the value under key in token's session, or ok == false
	// if there is none (or no live session).
	Value(ctx context.Context, token, key string) (value []byte, ok bool, err error)

	// PopValue returns the value under key and deletes it, atomically: of
	// concurrent PopValues of one key, one gets the value. ok is false if
	// there is none.
	PopValue(ctx context.Context, token, key string) (value []byte, ok bool, err error)

	// DeleteValue deletes the value under key, if any.
	DeleteValue(ctx context.Context, token, key string) error
}

// Carts keeps a shopping cart per session: item -> count, at most
// [MaxCartLines] lines of at most [MaxCartCount] each.
type Carts interface {
	// AddToCart sets the count of item in token's cart, as the book's
	// add_to_cart does. A count of zero or less removes the item's line. The
	// session must be live; otherwise AddToCart returns an error matching
	// [ErrNoSession] and writes nothing, so no cart can outlive its session.
	// A new line in a cart of MaxCartLines lines is refused with an error
	// matching [ErrInvalid], and nothing is written.
	AddToCart(ctx context.Context, token, item string, count int) error

	// IncrementCart adds n (which may be negative) to the count of item in
	// token's cart and returns the new count; a count that reaches zero or
	// less removes the line (and is returned as 0). It fails as AddToCart
	// does, and also with an error matching [ErrInvalid], writing nothing,
	// if the count would exceed MaxCartCount.
	IncrementCart(ctx context.Context, token, item string, n int) (count int, err error)

	// Cart returns token's cart as item -> count. A token without a live
	// session, or with an empty cart, yields an empty map and a nil error.
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

	// SetItemPage caches body under key for ttl as SetPage does, and
	// records the page as one of item's pages, so that PurgeItemPages(item)
	// deletes it. A page is the page of the item it was last stored for:
	// storing it again under key with SetPage, or with SetItemPage for
	// another item, makes it no longer item's.
	SetItemPage(ctx context.Context, item, key string, body []byte, ttl time.Duration) error

	// DeletePage deletes the page cached under key. Deleting a page that
	// is not cached (or expired) does nothing and returns nil.
	DeletePage(ctx context.Context, key string) error

	// PurgeItemPages deletes every live page stored with SetItemPage for
	// item and returns how many it deleted. Pages stored with SetPage are
	// left alone. An item without pages gives 0 and a nil error. A purge
	// concurrent with a SetItemPage for the same item may leave the page
	// that call stores; a purge that starts after it returns deletes it.
	PurgeItemPages(ctx context.Context, item string) (n int, err error)
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
	// row twice in one period. Due rows whose delay is zero or less do not
	// count toward limit: they are unscheduled and their cached copies
	// deleted before it returns, and not returned. A copy that cannot be
	// deleted then (Redis: its node does not answer) is deleted by a later
	// claim. The caller is expected to load each returned row and store it
	// with SetScheduledRow.
	ClaimDueRows(ctx context.Context, limit int) (rows []string, err error)

	// Row returns the cached JSON of row. If there is none it returns
	// ok == false and a nil error.
	Row(ctx context.Context, row string) (data []byte, ok bool, err error)

	// SetRow stores data as the cached copy of row. It does not schedule the
	// row.
	SetRow(ctx context.Context, row string, data []byte) error

	// SetScheduledRow stores data as the cached copy of row, as SetRow
	// does, if row is scheduled: a row unscheduled with ScheduleRowCache
	// counts as scheduled until a ClaimDueRows has unscheduled it. If it is
	// not (never scheduled, or unscheduled by a claim), it stores nothing,
	// deletes any copy, SetRow's included, and returns stored == false.
	// RowCacher stores the rows it loaded with it, so that a row
	// unscheduled while it was being loaded is not cached again. A call
	// that fails may have stored the copy; backends then delete it (Redis:
	// after the call, or by a later claim if the server did not answer),
	// and the row misses until its next refresh.
	SetScheduledRow(ctx context.Context, row string, data []byte) (stored bool, err error)
}

// Views ranks items by how often they were viewed (see [Views.CountView]
// and [Sessions.RefreshSession]). Rank 0 is the most viewed item; items with equal
// counts are ranked by item name, ascending.
type Views interface {
	// CountView counts one view of item, as RefreshSession does for a
	// session: the views of visitors without a session count too. The
	// Store may add views up in its process before it stores them (see
	// [StoreOptions].ViewFlush); ItemRank and TopItems see every view the
	// process counted before them.
	CountView(ctx context.Context, item string) error

	// FlushViews stores the views this process has added up and not yet
	// stored. Close does it too; a Store that stores each view at once has
	// nothing to do.
	FlushViews(ctx context.Context) error

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
