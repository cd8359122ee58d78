// Package retailhttp puts a [retail.Store] on the web with net/http: login
// sessions kept in token or signed cookies, and item pages served from a
// [retail.PageCache].
//
// # Sessions
//
// A [SessionManager] issues a session cookie at [SessionManager.Login],
// recognizes it on every request in its Handler (recording the visit and
// the viewed item with [retail.Sessions.UpdateToken] and putting the
// [Session] in the request's context, see [SessionFrom]) and clears it at
// [SessionManager.Logout]. The cookie is one of the two kinds the book
// compares:
//
//	cookie          holds                         per request          ends
//	token (default) a random 128-bit token        one Store lookup     at Logout or cleaning, everywhere
//	signed          token, user, expiry and MAC   no lookup            at its expiry; a copy outlives Logout
//
// Signed cookies use a [CookieSigner] (HMAC-SHA256, key rotation,
// constant-time checks), which shops can also use for cookies of their own.
// Both kinds are HttpOnly and SameSite=Lax; set [SessionOptions].Secure on
// HTTPS sites.
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
// Every GET and HEAD response says [CacheHit] or [CacheMiss] in an X-Cache
// header.
//
// # Stacking
//
// Put the session middleware outside the page middleware:
//
//	handler := sessions.Handler(pages.Handler(mux))
//
// Then every request with a session records its visit and view, cache hits
// included, and the page middleware sees the session in the request's
// context: by default (see [IsPersonalRequest]) it neither serves nor
// stores pages for requests with a session or an Authorization header, so
// no visitor is shown a page rendered for another.
//
// # Errors
//
// Constructors return an error matching [retail.ErrInvalid], an
// [*retail.InputError] naming the option, for nil arguments and options out
// of range. Errors from the Store are returned as the Store returned them
// (an [*retail.OpError]). The middlewares survive Store failures where they
// can: the page middleware then serves the request from the handler, and
// the session middleware serves it without recording the visit; only a
// failed session lookup stops a request, at [SessionOptions].ErrorHandler.
// What they survive they log through log/slog.
//
// # Concurrency
//
// [SessionManager], [PageMiddleware] and [CookieSigner] are safe for
// concurrent use; a server creates each once. Concurrent misses render once
// per [retail.PageCache], so all page middlewares of a server should share
// one.
package retailhttp
