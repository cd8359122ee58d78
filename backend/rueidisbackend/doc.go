// Package rueidisbackend is a [retail.Store] on Redis, or on a Redis
// Cluster, through the rueidis client, with server-assisted client-side
// caching of the reads that repeat: sessions, pages and rows.
//
//	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
//	...
//	defer client.Close()
//	store, err := rueidisbackend.New(client, rueidisbackend.Options{})
//	...
//	defer store.Close()
//
// New returns a [*Store], which embeds the retail.Store that
// [retail.NewStore] builds over this package's driver: invalid input is
// refused before anything is sent. The caller owns the rueidis client:
// closing the Store does not close it. The same Store runs on one server
// and on a cluster (rueidis finds out which). It needs Redis 6.2 or newer.
// Give it a client that sends its commands to the masters: with
// ClientOption.SendToReplicas, reads may be a replication lag old, and a
// session just logged out may still be found.
//
// # Key layout
//
// With the default prefix "retail:", beside the book's:
//
//	book                     here                            why it differs
//	login:, viewed:T, cart:T retail:session:{T} (hash)       a session is one key: login, seen, recent, cart:ITEM, value:KEY (below)
//	recent: (zset token→ts)  retail:{sessions}:seen (zset)   the cleaning index; stamps are unique within a process
//	                         retail:user:{U} (zset)          a user's sessions, ID → created stamp, for UserSessions and LogoutUser
//	                         retail:loggedout:{U} (string)   the Unix ms of the user's last LogoutUser: their sessions logged in at or before it are over
//	                         retail:logoutmark:{N} (string)  the latest of those instants among the users of bucket N (a hash of U, of 1024): only sessions logged in at or before it read their user's
//	                         retail:logoutprobe:{R}          never seen: written and deleted in one script every second, to check that the Store hears the marks' and sessions' changes (see below)
//	viewed: (zset item→-n)   retail:{views}:viewed (zset)    same scores, so ZRANK gives rank 0 to the most viewed, ties by name
//	                         retail:{views}:flushed:P        the number of the last flush of views counted from process P, so that a flush sent again after a failure counts once
//	cache:H (string)         retail:page:KEY (string)        the page cache's key instead of a hash; the value starts with its expiry
//	inv:ID (string)          retail:row:ID (string)          same
//	schedule:, delay: (zset) retail:{rows}:schedule, :delay  one slot, so one script claims due rows
//	                         retail:{rows}:dropped (hash)    rows unscheduled whose copies a claim did not delete yet, each with that claim's ID
//	                         retail:pages:{I} (zset)         the keys of item I's pages, each scored with when it expires, for PurgeItemPages
//	                         retail:claim:{NAME} (string)    the latest turn of a worker's work, "TURN OWNER", so that processes take turns
//
// T is the session's ID, the hash of its token (the Store never hands a
// backend a token; see "Tokens at rest" in package retail), and U the
// user, with "%" and "}" escaped so that {T} and {U} are always the whole
// hash tag. A session's hash holds:
//
//	login      "CREATED DEADLINE USER": the created stamp, a coarse idle deadline (Unix ms), the user ("" for a guest);
//	           CREATED ends in "+LIFE" for a session with a lifetime of its own, LIFE ms (StartSessionFor, RenewSessionFor)
//	seen       the last-seen stamp, with the clock's ms after a space if the stamp ran ahead of them
//	recent     the recently viewed items, oldest first, one a line
//	#cart      the number of cart lines; cart:ITEM the count of each
//	#values    the number of values; value:KEY each value (a login's, SessionOptions.Values, written with the login)
//	label      the label the login gave it (StartSessionFor, RenewSessionFor), if any; copied by RenewSession
//
// A single server creates, refreshes and cleans a session in one script
// that also writes the session index (and, at creation, its user's), so a
// session and its index change in one atomic step; RenewSession runs in
// steps (renew.go), and a Logout removes the user's index entry in a
// second round trip. The scripts that every request runs (RefreshSession,
// UpdateToken and the cart writes) are group-committed: calls that arrive
// while earlier ones are on their way go out as one script call that runs
// each in turn and answers each. In a cluster every script touches one
// slot, and the writes to the index and the users' indexes follow or
// accompany it.
//
// A RefreshSession within TouchEvery that views a new item is decided by
// the process, from the session it read (from the tracker's table, or
// through the client-side cache), and so is an UpdateToken within
// TouchEvery of the session's own user that the table holds (after a
// CheckToken, as in the book's requests): view.lua only checks that the
// session still holds the login and the recent items the process read,
// and writes the seen stamp and the recent items the process computed. A
// session that holds something else is written by nothing, and refresh.lua
// or update.lua decides on the server. Such a visit costs the server about
// three quarters of what deciding there costs (docs/performance.md).
//
// # Expiry, TouchEvery and key TTLs
//
// Every expiry follows the Store's clock (Options.Clock) and is exact on
// every read: a session is live while its last-seen time is less than
// IdleTimeout ago and its login less than Lifetime ago, both in whole
// milliseconds, rounded up, as in every backend. Redis never decides when
// anything ends. A session's login is written when the session starts,
// changes user, or once Options.TouchEvery (see retail.DefaultTouchEvery)
// has passed since it was last written; a visit within it that views no new
// item writes nothing and costs no round trip. The login's deadline is
// therefore a lower bound of the real idle deadline, and past it the exact
// last-seen time is read from the server.
//
// Every key whose entry ends by the Store's clock (sessions, pages, users'
// indexes, logout instants, worker claims) also gets a TTL, a memory
// safety net Options.TTLSlack (a minute by default) beyond that moment: a
// page its TTL plus the slack; a session until its idle deadline or
// lifetime, plus the slack, plus at most TouchEvery; a user's index a
// lifetime plus the slack after its newest entry. A process's last view
// flush number ({views}:flushed:P) goes an hour after the flush
// (driver.ViewFlushMemory). Cached rows, which end when they are
// unscheduled, and the shared sets (the session index, the
// view counts, the row schedule, {rows}:dropped) have none. With a clock
// slower than real time, such as retail.ManualClock, keys can go before
// their entry ends only if it is held for its life plus TTLSlack of real
// time.
//
// # Client-side caching and read-your-writes
//
// CheckToken, RefreshSession, Cart, Value, RecentItems, Page and Row read
// through rueidis's DoCache (sessions' logins and recent items, on a single
// server, from a table of the Store's own, below): after the first read a
// value is served from process memory until the server reports that the
// key changed. An invalidation travels on the connection that cached the
// key, so a read right after this process's own write could see the old
// value: the Store remembers what it wrote and reads such a key from the
// server until the cache agrees. Writes by other processes reach the cache
// when their invalidation arrives, within milliseconds on a local network
// (docs/redis-backend.md gives the measurement). Ranks, counts and the
// indexes are read from the server.
//
// On a single server (not through Sentinel), with client-side caching, a
// Store keeps what every page view reads decoded in tables of its own,
// which a connection of its own keeps fresh with CLIENT TRACKING BCAST:
// each session's login and recent items (Options.SessionTableBytes of them
// at most; past that, sessions are dropped at random), and the 1,024
// logout marks that every call on a logged-in session reads. A session the
// table does not hold is read on that connection; one changed by another
// process stops being served when its invalidation arrives, as a cached
// value does, and this process's own writes drop it at once. A cached
// CheckToken then costs less than half the CPU it costs through rueidis's
// cache (docs/performance.md). BCAST tells each Store of every change of a
// session or a mark, not only of those it read: with N processes a change
// is sent N times (the server gathers an event loop's changes in one
// message), and an OnInvalidations callback of the client's options, which
// rueidis gives that connection too, hears of them all. The Store takes
// that connection from the client's pool for blocking commands
// (ClientOption.BlockingPoolSize) and holds it until Close, or until the
// client is closed; CLIENT LIST names it retail-tracker. Every second it
// writes and deletes a probe key (retail:logoutprobe:{R}, in one script,
// so the key is never seen) and stops serving the tables if the connection
// does not hear of a probe the server took within a second; while the
// server stalls the tables serve, as the cache does. Without the tables,
// sessions and marks are read through the client-side cache, or from the
// server without one.
//
// # Cleaning, logout and renewal against concurrent requests
//
// The book reads the oldest sessions, then deletes them; a request that
// refreshes one in between loses it. Here a pass deletes a session only if
// its last-seen stamp is still the one the pass read (or, on a single
// server, is idle-expired or below the newest entry the pass may take).
// Stamps are the clock's milliseconds made strictly increasing within a
// process, so even a refresh in the same millisecond is seen; across
// processes the guarantee rests on their clocks agreeing. An index entry
// may lag behind its session's stamp (it moves only every TouchEvery); a
// pass moves it up instead of deleting the session.
//
// The writes to a session (refresh, cart, values) check in the same script
// that it is live, so none can bring back a session that Logout deleted.
// RenewSession copies the old session under the new token and indexes it,
// then deletes the old one: both are live in between, and if the second
// step does not happen it returns an error, the old session still works and
// the new one expires unused. The values a login sets
// (SessionOptions.Values) are written in the first step, by the script
// that creates the new session, so the old session never holds them and
// the new one never lacks them.
//
// # Errors and what they can leave half done
//
// The driver returns errors as rueidis gives them; the Store wraps each in
// a *retail.OpError, so errors.As reaches the *rueidis.RedisError. A call
// returns once its context ends, even while the server stalls, but a call
// that fails may have run its script without hearing of it (as with any
// Redis client): an error matching context.DeadlineExceeded does not mean
// nothing was written. A call that returns nil was applied. rueidis limits
// two things: once a stall has filled a connection's ring of waiting
// commands (1,024 by default), a call waits for room past its context; and
// in a cluster, a call that finds a slot its client has no node for (a new
// client, a topology change) refreshes the slot map first, waiting up to
// ClientOption.ConnWriteTimeout whatever its context.
//
// A call of several round trips may stop between them. What that can
// leave, in a cluster: a session without its index entries (until
// RepairSessions or its next UpdateToken indexes it; its TTL frees it
// otherwise), an index entry without a session (cleaned or repaired after
// a minute), some of a user's sessions ended by LogoutUser and not others
// (call it again; the sessions are absent anyway, see below). On a single
// server too, ClaimDueRows deletes the copies of the rows it unscheduled
// after its script (copies it cannot delete stay named in {rows}:dropped,
// and later claims delete them, up to their limit each), and
// SetScheduledRow writes the copy and then reads the schedule (one that
// stops between them names the row in {rows}:dropped and deletes the copy
// in the background, for at most a second, which Close waits for; a later
// claim deletes the copy if that could not; the delete may take a copy a
// later call stored, which then misses until its next refresh).
//
// # Failover
//
// A master that fails is replaced by its replica after the cluster's node
// timeout; meanwhile its slots refuse every call. Sessions on the other
// masters keep working: index writes that cannot be sent wait in a bounded
// buffer and go with the next call that reaches their slot. Replication is
// asynchronous, so the writes a master acknowledged just before it failed
// may be lost: a session created or logged out in that moment, view counts,
// index entries. A LogoutUser still holds: its instant is kept beside the
// user's index and every call checks it, so sessions the index lost are
// absent too. In a cluster a logged-in session therefore needs its user's
// node as well as its own; while that node is down and its key is not
// cached, the session's calls fail rather than risk serving a session its
// user logged out of.
//
// # Moving slots
//
// Adding masters and moving slots to them (redis-cli --cluster reshard or
// rebalance) needs nothing stopped. A script with several keys in a slot
// that is moving is refused with TRYAGAIN while some of them have moved
// and others not; the Store sends it again, pausing up to 200 ms between tries, for at most 10 s or
// until the context ends. Set [rueidis.ClusterOption].ShardsRefreshInterval
// (10 s, say) on a cluster you reshard: a process learns that a slot moved
// only from a MOVED reply, which reads served from its cache never get,
// or from that refresh. Until it learns, it serves from its cache a key
// that was absent on the old master, such as the logout mark that a
// LogoutUser then writes on the new one, for up to CacheTTL: a session
// that the LogoutUser ended through the mark alone (one its user's index
// missed) is served meanwhile.
//
// [Store.RepairSessions] mends lost index entries: it scans the sessions
// of every master, indexes each that an index misses, and removes entries
// that have had no session for a minute. The retail.SessionCleaner runs it
// every RepairEvery (10 minutes by default). It needs CLUSTER SLOTS and
// SCAN, no admin rights; on a single server it returns at once.
package rueidisbackend
