package retail

import "sync/atomic"

// Stats is a snapshot of a Store's counters, returned by [Store.Stats]: what
// an operator watches to see that the page cache serves, that sessions stay
// bounded and that the workers run.
//
// The counts are those of one Store, the value a backend's constructor
// returned, since it was created: its own calls, and the work of the
// policies built over it, which count into it: [PageCache] (and HTTP
// middleware built on it, such as retailhttp.PageMiddleware),
// [SessionCleaner] and [RowCacher]. Those take a Store, so a policy built
// over a decorator of a Store (a type that embeds one) counts into the
// Store it decorates. Processes that share one Redis each count their own.
//
// Every field only grows, except CleaningLag, which is a gauge. Each field is
// read atomically, but not all at one instant: a snapshot taken while
// requests run may, say, count a page's hit but not yet the miss that
// cached it.
//
// There is no count of expired sessions, because no backend reports one: a
// cleaning pass reports the expired sessions it removed together with the
// others (see SessionsCleaned), and an expired session found by another call
// is treated as absent, or removed, without a word.
type Stats struct {
	// PageHits counts requests for pages served from the cache, without
	// rendering: calls of [PageCache.Fetch] (and so of
	// [PageCache.CacheRequest] and of retailhttp.PageMiddleware for GET
	// requests) that returned hit == true, the page having been found in
	// the cache or given by a concurrent call's render; and calls of
	// [PageCache.Lookup] (retailhttp.PageMiddleware for HEAD requests) that
	// found the page.
	PageHits uint64

	// PageMisses counts requests for pages that could have come from the
	// cache but did not: calls of Fetch for a URL with a key (see
	// [PageCache.Key]) that returned hit == false (the page was rendered,
	// or reading the cache, rendering or waiting for a concurrent render
	// failed, or render panicked), and calls of Lookup for a URL with a key
	// that found no page or failed.
	PageMisses uint64

	// PageBypasses counts requests for pages served without consulting the
	// cache: calls of CacheRequest whose page may not be cached
	// ([PageCache.CanCache] said no, or failed); calls of Fetch and Lookup
	// for a URL without a key; and the GET and HEAD requests that
	// retailhttp.PageMiddleware passes by: those its Skip option selects (by
	// default, requests with a session) and those whose page may not be
	// cached.
	PageBypasses uint64

	// CoalescedRenders counts calls of Fetch that missed, waited for a
	// concurrent call for the same page on the same PageCache, and were
	// given the page that call rendered (or found): the renders that
	// coalescing saved. Each is counted in PageHits too.
	CoalescedRenders uint64

	// SessionsStarted counts the sessions [Sessions.StartSession] and
	// StartSessionFor created: their calls that returned created == true. UpdateToken creates
	// sessions too, but is not counted, since backends do not report
	// whether a call created a session or refreshed one; RenewSession moves
	// a session to a new token and creates none.
	SessionsStarted uint64

	// Logouts counts the sessions ended one at a time: the calls of
	// [Sessions.Logout] and EndSession that returned nil, and the sessions
	// a login ended under StoreOptions.MaxSessionsPerUser. Each call ends
	// at most one session; one for a token that had none counts too, since
	// backends do not report the difference.
	Logouts uint64

	// LogoutUserSessions counts the sessions [Sessions.LogoutUser] ended,
	// as it reported them, over all its calls (a call that failed after
	// ending some counts those it reported).
	LogoutUserSessions uint64

	// SessionsCleaned counts the sessions [Sessions.CleanSessions]
	// removed, as it reported them, over all its calls (each pass of a
	// SessionCleaner, and direct calls): expired sessions and those beyond
	// the number kept alike. A call that failed after removing some counts
	// those it reported.
	SessionsCleaned uint64

	// CleaningLag is a gauge: the number of sessions the Store held beyond
	// a SessionCleaner's Keep option when the cleaner last counted them
	// (SessionCount − Keep, or 0 if that is negative), which it does after
	// each pass that succeeded. It is 0 until a cleaner has finished a
	// pass; with several cleaners, it is the latest count of any of them.
	// It is as old as that pass: a cleaner that has caught up waits its
	// Idle option (a second by default) before counting again. One that
	// finds a lag runs its next pass at once, so a lag that stays above 0
	// from one snapshot to the next means sessions are started faster than
	// it removes them. The count includes expired sessions not yet
	// removed.
	CleaningLag uint64

	// SessionsRepaired counts the index entries [Sessions.RepairSessions]
	// found wrong, over all its calls (each repair of a SessionCleaner, and
	// direct calls): sessions missing from the session index or their
	// user's index, and entries whose session was gone. It stays 0 where
	// every call writes atomically (memory, a single Redis server); in a
	// cluster it grows after a master fails over.
	SessionsRepaired uint64

	// ViewFlushFailures counts the times the Store failed to send the
	// item views its process added up (see [StoreOptions].ViewFlush); the
	// views are sent again with the next window, and counted once.
	ViewFlushFailures uint64

	// RowsRefreshed counts the rows RowCachers stored: rows claimed,
	// loaded, encoded and stored with [Rows.SetScheduledRow] without
	// error. A row whose load, encoding or storing failed, or that was
	// unscheduled while it was loading, is not counted.
	RowsRefreshed uint64

	// Rescales counts the calls of [Views.RescaleViews] that returned nil:
	// each rescale of a ViewRescaler, and direct calls.
	Rescales uint64

	// ClientCacheHits and ClientCacheMisses count the backend's reads of
	// cacheable data that were served from process memory and that went
	// to the server, for a backend with a client-side cache (such as Redis
	// with rueidis's caching), as its driver reports them (see
	// driver.Store's CacheCounts); both are 0 for other backends.
	ClientCacheHits, ClientCacheMisses uint64
}

// cacheLine is the size of a CPU cache line on common processors.
const cacheLine = 64

// counter is an atomic count on a cache line of its own, so that requests
// that bump different counters on different cores do not slow each other.
type counter struct {
	atomic.Uint64
	_ [cacheLine - 8]byte
}

// counters is the block behind a Store's Stats. The Store's wrapper owns
// one, and the policies built over the Store count into it.
type counters struct {
	pageHits, pageMisses, pageBypasses, coalescedRenders counter
	sessionsStarted, logouts, logoutUserSessions         counter
	sessionsCleaned, cleaningLag, sessionsRepaired       counter
	viewFlushFailures                                    counter
	rowsRefreshed, rescales                              counter
}

// snapshot reads every counter; the driver's cache counts are the caller's.
func (c *counters) snapshot() Stats {
	return Stats{
		PageHits:           c.pageHits.Load(),
		PageMisses:         c.pageMisses.Load(),
		PageBypasses:       c.pageBypasses.Load(),
		CoalescedRenders:   c.coalescedRenders.Load(),
		SessionsStarted:    c.sessionsStarted.Load(),
		Logouts:            c.logouts.Load(),
		LogoutUserSessions: c.logoutUserSessions.Load(),
		SessionsCleaned:    c.sessionsCleaned.Load(),
		CleaningLag:        c.cleaningLag.Load(),
		SessionsRepaired:   c.sessionsRepaired.Load(),
		ViewFlushFailures:  c.viewFlushFailures.Load(),
		RowsRefreshed:      c.rowsRefreshed.Load(),
		Rescales:           c.rescales.Load(),
	}
}

// addCount adds n, a count a Store call reported, to c; a negative n (a
// driver's mistake) adds nothing.
func (c *counter) addCount(n int) {
	if n > 0 {
		c.Add(uint64(n))
	}
}
