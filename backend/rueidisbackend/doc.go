// Package rueidisbackend is a [retail.Store] on Redis, or on a Redis
// Cluster, through the rueidis client, with server-assisted client-side
// caching of the reads that repeat: logins, pages and rows.
//
//	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
//	...
//	defer client.Close()
//	store, err := rueidisbackend.New(client, rueidisbackend.Options{})
//	...
//	defer store.Close()
//
// New returns a [*Store], which embeds the retail.Store that
// [retail.NewStore] builds over this package's driver: that wrapper checks
// the input rules, the context and Close before a call reaches Redis, so
// invalid input sends nothing. Store adds what only this backend has,
// [Store.CacheStats]. The caller owns the rueidis client: closing the Store
// does not close it.
//
// The same code runs on one server and on a cluster: rueidis finds out which
// it is talking to, and every script and multi-key command touches one hash
// slot. It needs Redis 6.2 or newer (ZADD GT).
//
// # Key layout
//
// With the default prefix "retail:", beside the book's:
//
//	book                     here                            why it differs
//	login: (hash token→user) retail:login:{T} (string)       one key per session: a cached login is invalidated only when that user changes
//	recent: (zset token→ts)  retail:{sessions}:seen (zset)   the cleaning index; stamps are unique within a process (see below)
//	                         retail:seen:{T} (string)        the last-seen stamp on the session's slot, so a cleaning script can compare it there
//	viewed:T (zset item→ts)  retail:recent:{T} (list)        newest first by position, not by timestamp: views in one millisecond keep their order
//	cart:T (hash)            retail:cart:{T} (hash)          same, on the session's slot
//	viewed: (zset item→-n)   retail:{views}:viewed (zset)    same scores, so ZRANK gives rank 0 to the most viewed, ties by name
//	cache:H (string)         retail:page:KEY (string)        the page cache's key instead of a hash; the value starts with its expiry (see below)
//	inv:ID (string)          retail:row:ID (string)          same
//	schedule:, delay: (zset) retail:{rows}:schedule, :delay  one slot, so one script claims due rows
//
// T is the token, with "%" and "}" escaped so that {T} is always the whole
// hash tag: a session's keys share a slot and its scripts run there.
//
// # One round trip a call
//
// UpdateToken is one script on the session's slot, a ZADD of the index and a
// ZINCRBY of the views, sent together (in a cluster, to their nodes in
// parallel). Calls from many goroutines are auto-pipelined onto few
// connections. Logout and ClaimDueRows take a second round trip only when
// there is something to delete on another slot; CleanSessions takes three a
// batch of 1,000 sessions.
//
// # Cleaning without losing sessions
//
// The book reads the oldest sessions, then deletes them; a request that
// refreshes one in between loses it. Here each session's last-seen stamp is
// kept on its own slot, and a session is deleted only if its stamp is still
// the one the pass read. Stamps are the clock's milliseconds made strictly
// increasing within a process (in steps of 1/1024 ms), so even a refresh in
// the same millisecond is seen. The index entry goes only if its stamp is
// unchanged too, so an update racing a deletion leaves a whole session with
// its index entry, never half of one. A pass reads only stamps older than
// its own start, so sessions refreshed after it began are out of its reach.
// Across processes the guarantee rests on their clocks: a refresh from a
// process whose clock lags by more than the time between the pass's start
// and its read of that session can still be cleaned.
//
// # Time and key TTLs
//
// Every expiry follows the Store's clock (Options.Clock), as in every
// backend: a page is stored with the instant it ends by that clock, and
// Page reports a miss from then on. Redis never decides when an entry
// ends. A page's key still gets a TTL, so that Redis frees pages nobody
// reads again, but set Options.TTLSlack (a minute by default) beyond the
// page's own TTL, in real time: a memory safety net only. With a clock
// slower than real time, such as a test's retail.ManualClock, a page can
// lose its key only if it is held for longer than its TTL plus the slack.
//
// # Client-side caching and read-your-writes
//
// CheckToken, Page and Row read through rueidis's DoCache: after the first
// read a value is served from process memory until the server reports that
// the key changed. That report travels on the connection that cached the
// key, which need not be the one a write used, so a read right after this
// process's own write could see the old value. The Store therefore remembers
// a hash of what it wrote (or that it deleted) and, until a cached read
// agrees, reads that key from the server: a read after this process's write
// returns that write or a newer one. Writes by other processes reach this
// process's cache when their invalidation arrives: measured on loopback by
// BenchmarkCache_CrossProcessStaleness, tens of microseconds at the median,
// a few milliseconds at the 99th percentile and around ten at worst on a
// busy two-core machine. Recent items, carts, ranks and counts change on
// most requests and are always read from the server. CacheStats counts hits
// and misses.
//
// # Errors
//
// The driver returns errors as rueidis gives them, unwrapped; the Store
// wraps each once in a *retail.OpError naming the operation and its key,
// so errors.As still reaches the *rueidis.RedisError the server sent. A
// Redis nil is a miss, never an error. New returns an *retail.InputError
// (matching retail.ErrInvalid) for a nil client or an option out of range.
package rueidisbackend
