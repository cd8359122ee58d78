// Package retail gives a web shop its hot state (login sessions, shopping
// carts, cached pages, cached database rows and item-view analytics) behind
// one interface, [Store], as built in chapter 2 of "Redis in Action".
//
// # Concepts
//
// A session is a token cookie that maps to a user. [Sessions.UpdateToken] is
// called on every request: it records the user and the time, and for item
// pages pushes the item onto the session's recently viewed list and counts a
// view. [Sessions.CleanSessions] keeps the number of sessions bounded by
// removing the least recently seen ones, with their carts; [SessionCleaner]
// runs it in a loop.
//
// A cart is item -> count and belongs to a session ([Carts]).
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
// On the web, [SessionManager] issues token cookies (or signed cookies),
// calls UpdateToken with the item of each item page and puts the [Session]
// in the request context; [NewPageMiddleware] serves cacheable pages from
// the page cache with an X-Cache header.
//
// Time comes from a [Clock], so tests move a [ManualClock] instead of
// sleeping.
//
// # Choosing a backend
//
//	backend                 for
//	backend/memory          tests, examples, one-process shops; fastest, nothing persisted
//	backend/rueidisbackend  production on Redis or a Redis Cluster, with client-side caching
//
// Code that takes a Store works with either.
//
// # Errors
//
// A miss is not an error: lookups report it with a false boolean or an empty
// result. Errors that callers branch on match sentinels with errors.Is:
// [ErrInvalid] for arguments outside the input rules (see [MaxIDLen] and the
// Validate functions; nothing is written), [ErrNoSession] when a cart is
// touched without a live session, [ErrClosed] after Close. A canceled
// context is returned as the context's error, before anything is written.
// Errors from a backend's client are wrapped, so errors.As reaches them.
//
// # Concurrency
//
// Stores, [PageCache] and the workers are safe for concurrent use. Each
// Store call is atomic on its own: a session is never half cleaned, a due
// row is claimed by one caller only, and a session refreshed while a
// cleaning pass runs is never removed by that pass. Calls are not atomic
// with each other; UpdateToken's view count and session update, for
// example, may be seen one before the other.
//
// # Writing a backend
//
// Implement [Store], call the Validate function of each method before doing
// anything, and run [github.com/retailkit/retail/conformance.Run] from a
// test. The suite is the specification; a backend that passes it behaves
// like the others.
package retail
