// Package retailhttp puts a [retail.Store] on the web with net/http:
// sessions of guests and logged-in users kept in token or signed cookies,
// and item pages served from a [retail.PageCache].
//
// # Sessions
//
// A [SessionManager] keeps each visitor's session in a cookie. Its Handler
// recognizes the cookie on every request, asks the Store once whether the
// session is live while recording the visit and the viewed item
// ([retail.Sessions.RefreshSession]), and puts the [Session] in the
// request's context (see [SessionFrom]); a cookie whose session has ended
// is cleared. Handlers change sessions with the manager's methods:
//
//	method            when                                      what it does
//	Ensure            before the first action that needs state  returns the session, or starts a guest one
//	Login             after checking a password                 moves the session (or starts one) to a new token, logged in
//	Renew             at another change of privilege            moves the session to a new token
//	Logout            on "log out"                              ends the session
//	LogoutEverywhere  on "log out everywhere"                   ends every session of the user
//
// A plain page view never creates a session: only Ensure and Login do.
// Visitors without one still rank the items they view
// ([retail.Views.CountView]); [SessionOptions].CountView with [LikelyBot]
// keeps crawlers out of the ranking. Login and Renew keep the session's
// cart, recently viewed items and values, always under a new token, so a
// token planted before a login is worth nothing after it (no session
// fixation), and the old cookie names no session once they return.
//
// Sessions end by the Store's clock (an idle timeout and a lifetime, see
// [retail.Sessions]; a guest's, [SessionOptions].GuestLifetime if set) and
// at Logout, whatever the cookie says. The cookie is one of the two kinds
// the book compares:
//
//	cookie           holds                        per request                  ends at the first of
//	token (default)  a random 128-bit token       one Store call               Logout, Store expiry, cleaning
//	signed           token, user, expiry and MAC  MAC check, one Store call    those, or the cookie's own expiry
//
// This departs from the book's table on purpose. There a signed cookie
// carries what the server needs, saving the lookup, and so cannot be
// revoked before it expires. Here every request with a session calls the
// Store anyway, to record the visit and the viewed item (the book's
// update_token), and that call also says whether the session is live; so
// Logout and expiry hold in both modes, and signed cookies save no round
// trip. What they do give: a cookie this server did not make (forged,
// guessed, tampered with) never reaches the Store, and a session cannot
// outlast the expiry signed into its cookie ([SessionOptions].MaxAge, or
// the [LoginOptions].Lifetime of its login) even if the Store's lifetime is
// longer. With token cookies a well-formed guess costs a lookup; on Redis
// that is a cached read and a script call, and Redis keeps a record that
// the client read the key (about 150 bytes, measured) until its tracking
// table is full (tracking-table-max-keys, a million keys by default), so a
// flood of guesses grows its memory by up to about 150 MB. What signed cookies cost:
// a longer cookie, keys to keep secret and rotate, and the user readable
// by the client. Token cookies are the simpler choice.
//
// Signed cookies use a [CookieSigner] (HMAC-SHA256, key rotation,
// constant-time checks), which shops can also use for cookies of their own.
// Both kinds are HttpOnly and SameSite=Lax; set [SessionOptions].Secure on
// HTTPS sites.
//
// # Session values
//
// A session keeps a few small values ([retail.SessionValues]) under its
// token, such as a flash message shown once after a redirect. A handler
// stores one in the request's session, starting a guest session if need
// be, and the next page pops it:
//
//	// POST /cart
//	s, err := sessions.Ensure(r.Context(), w)
//	...
//	err = store.SetValue(r.Context(), s.Token, "flash", []byte("Added to your cart."))
//	http.Redirect(w, r, "/cart", http.StatusSeeOther)
//
//	// GET /cart
//	if s, ok := retailhttp.SessionFrom(r.Context()); ok {
//		msg, ok, err := store.PopValue(r.Context(), s.Token, "flash")
//		...
//	}
//
// Values go with the session through Login and Renew, and away with it.
//
// # Pages
//
// A [PageMiddleware] serves the pages that its [retail.PageCache] may cache
// (by the book's rule: item pages of popular items) from the cache, and
// caches the handler's response when it is safe to share: a 200 without
// cookies, Vary or a private, no-store or no-cache directive. Its entries
// are the PageCache's own [retail.CachedPage] values, so pages cached by
// [retail.PageCache.CacheRequest] are served by the middleware and the
// other way round. Concurrent misses for one page run the handler once.
// Every GET and HEAD response says [CacheHit], [CacheMiss] or [CacheBypass]
// (the cache was not consulted: a personal request, or a page that may not
// be cached) in an X-Cache header. Cached responses carry a strong ETag,
// Age and Cache-Control: no-cache (browsers ask before each use, so a
// visitor who logs in gets their own page on their next visit to it, though
// not from the back button; see [PageMiddlewareOptions].PublicMaxAge), and
// If-None-Match answers 304 Not Modified. Keys leave tracking parameters
// out (the handler renders a page to store without them, so no link can put
// them in everyone's page) and refuse unknown ones (see
// [retail.PageCacheOptions]) and paths not spelled in their canonical form
// (see [retail.PageCache.Key]), so junk query strings and odd spellings of
// a path add no entries.
//
// # Statistics
//
// What the middlewares do is counted in the Store's [retail.Stats], read
// with its Stats method: the page middleware counts each GET and HEAD
// request as its X-Cache header says, and the sessions the manager starts
// (Ensure, and Login without a session to move) and ends (Logout,
// LogoutEverywhere) are counted by the Store calls it makes. A server can
// publish them, for instance with expvar:
//
//	expvar.Publish("retail", expvar.Func(func() any { return store.Stats() }))
//
// # Stacking
//
// Put the session middleware outside the page middleware:
//
//	handler := sessions.Handler(pages.Handler(mux))
//
// Then every request records its view, cache hits included, whether or
// not it has a session, and the page middleware sees the session in the
// request's context: by default (see [IsPersonalRequest]) it neither
// serves nor stores pages for requests with a session (a guest's too) or
// an Authorization header, so no visitor is shown a page rendered for
// another. Visitors without a session, most of them, share cached pages.
//
// # Errors
//
// Constructors return an error matching [retail.ErrInvalid], an
// [*retail.InputError] naming the option, for nil arguments and options out
// of range. Errors from the Store are returned as the Store returned them
// (an [*retail.OpError]). The middlewares survive Store failures where they
// can: the page middleware then serves the request from the handler, and
// the session middleware serves a request without a session even if its
// view could not be counted; only a failed session lookup stops a request,
// at [SessionOptions].ErrorHandler. What they survive they log through
// log/slog. [SessionManager.Renew] returns an error matching
// [retail.ErrNoSession] if the request has no live session. The
// SessionManager's methods return an error matching [ErrNoHandler], and
// write nothing, if their context did not come from its Handler.
//
// # Concurrency
//
// [SessionManager], [PageMiddleware] and [CookieSigner] are safe for
// concurrent use; a server creates each once. The SessionManager's methods
// called for one request run one at a time, so that a handler's goroutines
// that all call Ensure share one new session. Concurrent misses render once
// per [retail.PageCache], so all page middlewares of a server should share
// one.
package retailhttp
