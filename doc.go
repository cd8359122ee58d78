// Package retail gives a web shop its hot state (login sessions, shopping
// carts, cached pages, cached database rows and item-view analytics) behind
// one interface, [Store], as built in chapter 2 of "Redis in Action".
//
// # Concepts
//
// A session is a token cookie that maps to a user, or to no user for a
// guest. It is started by a login or by a guest's first action that needs
// state ([Sessions.StartSession]), refreshed by every request
// ([Sessions.RefreshSession], which records the time and, for item pages,
// pushes the item onto the session's recently viewed list and counts a
// view), moved to a new token at login or renewal ([Sessions.RenewSession])
// and ended by Logout, by expiry (an idle timeout and a lifetime, see
// [DefaultIdleTimeout]) or by [Sessions.CleanSessions], which also keeps
// their number bounded as the book's clean_sessions does; [SessionCleaner]
// runs it in a loop. A session holds a few small values ([SessionValues]),
// and a user's sessions can be listed and ended together.
//
// A cart is item -> count and belongs to a session ([Carts]). Views of
// visitors without a session count too ([Views.CountView]).
//
// Views rank items by popularity ([Views]). [PageCache] uses the ranking to
// cache only the pages of popular items, as the book's can_cache does, and
// [ViewRescaler] periodically drops the tail and halves the counts so that
// new items can climb.
//
// Rows are database rows cached as JSON and refreshed on a schedule
// ([Rows]); [RowCacher] claims due rows, loads them through a callback and
// stores them.
//
// On the web, package [github.com/retailkit/retail/retailhttp] issues
// token cookies (or signed cookies), records each visit and serves popular
// pages from the [PageCache]. This package imports no net/http.
//
// Time comes from a [Clock], so tests move a [ManualClock] instead of
// sleeping. Every expiry follows the Store's clock.
//
// A Store counts what it and the policies built over it do: page cache
// hits, misses and bypasses, sessions started, logged out and cleaned,
// worker passes. [Store.Stats] returns the counts ([Stats]), for a server to
// publish (with expvar, say); counting costs an atomic add and allocates
// nothing.
//
// [PageCache] and the workers take the Store whole, not a part of it: they
// count into its Stats, and the workers of every process sharing the
// Store's data take turns through it ([Coordinator]), so that N servers
// rescale once a period and clean one at a time. To wrap a Store (to trace
// or time its calls), embed it in a struct and override what you need: the
// wrapper is a Store, and passes both on.
//
// # Choosing a backend
//
//	backend                 for
//	backend/memory          tests, examples, one-process shops; fastest, nothing persisted
//	backend/rueidisbackend  production on Redis or a Redis Cluster, with client-side caching
//
// Code that takes a Store works with either. Each backend's New returns a
// Store.
//
// # Input rules
//
// Every Store applies the same rules to its arguments, before anything is
// written; an argument outside them is rejected with an [*InputError]
// (matching [ErrInvalid]):
//
//	argument            rule
//	token, item, row,   1..MaxIDLen bytes, no ASCII control characters
//	  value key         (item may also be empty in RefreshSession and UpdateToken:
//	                    no item viewed; RenewSession's newToken must differ from token)
//	user                1..MaxUserLen bytes of valid UTF-8 (empty in StartSession:
//	                    a guest; empty in RenewSession: keep the user)
//	cart count          at most MaxCartCount (zero or less removes the line)
//	cart increment n    -MaxCartCount..MaxCartCount
//	session value       at most MaxValueSize bytes
//	session options     Lifetime 0 (the Store's) or positive and at most the Store's lifetime;
//	                    Label at most MaxLabelLen bytes of printable UTF-8, or empty;
//	                    Values: keys and values as above, at most MaxSessionValues not nil
//	page key            1..MaxPageKeyLen bytes, no ASCII control characters
//	page data           at most MaxPageSize bytes
//	page ttl            MinDuration..MaxPageTTL
//	row data            at most MaxRowSize bytes
//	row delay           zero or less (unschedule), or MinDuration..MaxRowDelay
//	keep, max           not negative (CleanSessions, RescaleViews)
//	TopItems n          0..MaxTopItems
//	ClaimDueRows limit  1..MaxClaimRows
//	rescale factor      greater than 0 and at most 1
//
// Some limits depend on what is stored, and are checked as the write is
// made, with the same error: a new line in a cart of MaxCartLines lines, a
// count above MaxCartCount after IncrementCart, a new value in a session of
// MaxSessionValues values (by SetValue, or by a RenewSessionFor's Values),
// a RenewSession to a token that names a session.
//
// Constructors (NewPageCache, the workers', the backends') check their
// options the same way: an option out of range is an *InputError too.
//
// # Tokens at rest
//
// A Store never keeps a session's token, the secret its cookie carries:
// it hashes every token it is given (SHA-256, the first 16 bytes) and
// keeps the session under that ID, for every backend alike. Whoever reads
// the data (a Redis replica, a backup, MONITOR or SCAN) learns no token and
// can take over no session; an ID sent as a cookie names no session, since
// it is hashed again. [Sessions.UserSessions] lists sessions by ID,
// [Sessions.EndSession] ends one by ID, and [SessionID] gives a token's ID.
// Sessions stored by a version before hashing (under their raw tokens)
// are not found by this one: their visitors log in again, and the old
// keys expire by themselves.
//
// # Log out everywhere
//
// [Sessions.LogoutUser] ends the sessions it finds in the user's index and
// records the millisecond of the Store's clock in which it began: a
// session of that user logged in at or before it is over for every call
// from then on, whether or not the index listed it (a login running at the
// same time, or an entry a Redis failover lost). Call it after changing a
// password; a login that begins a millisecond later is not ended.
//
// # Errors
//
// A miss is not an error: lookups report it with a false boolean or an empty
// result. Errors that callers branch on match sentinels with errors.Is:
// [ErrInvalid] for arguments outside the input rules (nothing is written),
// [ErrNoSession] when a cart is touched without a live session, [ErrClosed]
// after Close. A context that has ended before a call makes it return the
// context's error (errors.Is(err, context.Canceled)) before anything is
// written. Every error a Store returns, other than an *InputError, is an
// [*OpError] that names the operation and its key argument, wrapped once:
// errors.As reaches the backend client's own error beneath it.
//
// A call whose context ends while it runs may or may not have been applied:
// on Redis, a command already sent is carried out even when the caller
// stopped waiting for its reply.
//
// # Concurrency
//
// Stores, [PageCache] and the workers are safe for concurrent use. Each
// Store call is atomic on its own, except where a backend says it runs in
// steps (on Redis, RenewSession copies the session before it deletes the
// old one, ClaimDueRows deletes the copies of the rows it unscheduled
// after claiming, SetScheduledRow reads the schedule after storing, and in
// a cluster calls that touch several slots write them one after the
// other): a session is never half cleaned, a due row is claimed
// by one caller only, and a session refreshed while a cleaning pass runs
// is never removed by that pass. Calls are not atomic with each other;
// UpdateToken's view count and session update, for example, may be seen
// one before the other.
//
// # Writing a backend
//
// A backend implements the narrower contract of package
// [github.com/retailkit/retail/driver], which may assume valid arguments, a
// live context and an open store and returns raw errors, and hands its
// driver to [NewStoreWith], which does the checking and wrapping for every
// backend alike, with the lifetime the backend resolved (the longest a
// session may ask for) and its MaxSessionsPerUser, which the wrapper
// enforces:
//
//	type driver struct{ /* ... */ }      // implements driver.Store
//
//	func New(opts Options) (retail.Store, error) {
//		// ... resolve the session times, as below
//		return retail.NewStoreWith(&driver{ /* ... */ }, retail.StoreOptions{
//			Lifetime:           lifetime,
//			MaxSessionsPerUser: opts.MaxSessionsPerUser,
//		}), nil
//	}
//
// Every method of driver.Store is required, those that only some backends
// have work for included, so that none is lost by omission: Claim, through
// which the workers of every process sharing the backend's data take turns
// (a backend whose data lives in its process claims in process memory, as
// backend/memory does), RepairSessions (0 where nothing can part a session
// from its index entries) and CacheCounts (0, 0 without a client-side
// cache).
//
// Its options include the session times IdleTimeout, Lifetime and
// TouchEvery, with the defaults and the rounding every backend applies (see
// [DefaultIdleTimeout] and [DefaultTouchEvery]): whole milliseconds,
// rounded up.
//
// Then it runs the conformance suite, which is the specification, from a
// test:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, func(tb testing.TB, clock retail.Clock, cfg conformance.Config) retail.Store {
//			s, err := New(Options{
//				Clock:       clock,
//				IdleTimeout: cfg.IdleTimeout,
//				Lifetime:    cfg.Lifetime,
//				TouchEvery:  cfg.TouchEvery,
//				// and the backend's MaxSessionsPerUser from cfg.MaxSessionsPerUser
//			})
//			if err != nil {
//				tb.Fatal(err)
//			}
//			return s
//		})
//	}
//
// A backend that passes [github.com/retailkit/retail/conformance.Run]
// behaves like the others.
package retail
