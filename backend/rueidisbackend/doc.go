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
// The same Store runs on one server and on a cluster: rueidis finds out
// which it is talking to. In a cluster every script and multi-key command
// touches one hash slot; on a single server, where slots do not matter, a
// session's script also writes the shared sets it affects, so that the
// session and its index change in one atomic step. It needs Redis 6.2 or
// newer (ZADD GT).
//
// # Key layout
//
// With the default prefix "retail:", beside the book's:
//
//	book                     here                            why it differs
//	login: (hash token→user) retail:login:{T} (string)       one key per session, "CREATED DEADLINE USER", cached by CheckToken, so written rarely (see below)
//	recent: (zset token→ts)  retail:{sessions}:seen (zset)   the cleaning index; stamps are unique within a process (see below)
//	viewed:T (zset item→ts)  retail:seen:{T} (string)        the last-seen stamp and the recently viewed items, newest first by position (views in one millisecond keep their order), written by every refresh
//	cart:T (hash)            retail:cart:{T} (hash)          same, on the session's slot
//	                         retail:values:{T} (hash)        the session's values, key → bytes
//	                         retail:user:{U} (zset)          a user's sessions, ID → created stamp, for UserSessions and LogoutUser
//	                         retail:loggedout:{U} (string)   the Unix ms of the user's last LogoutUser: their sessions logged in at or before it are over
//	viewed: (zset item→-n)   retail:{views}:viewed (zset)    same scores, so ZRANK gives rank 0 to the most viewed, ties by name
//	cache:H (string)         retail:page:KEY (string)        the page cache's key instead of a hash; the value starts with its expiry (see below)
//	inv:ID (string)          retail:row:ID (string)          same
//	schedule:, delay: (zset) retail:{rows}:schedule, :delay  one slot, so one script claims due rows
//	                         retail:claim:{NAME} (string)    the latest turn claimed of a worker's work, "TURN OWNER", so that workers of several processes take turns
//
// T is the session's ID, the hash of its token (the Store never hands a
// backend a token; see "Tokens at rest" in package retail), and U the
// user, with "%" and "}" escaped so that {U} is always the whole hash tag: a session's keys share a slot and its
// scripts run there, and each user's index has a slot of its own.
//
// The login holds the session's created stamp (with its clock milliseconds
// after a "/" when the stamp ran ahead of the clock), a coarse idle
// deadline in Unix ms and the user ("" for a guest); seen holds the
// last-seen stamp (with the clock's milliseconds after a space in the same
// case), then, if the session viewed items, a line with their number and a
// line for each, newest first. Login keys written by an earlier version,
// which held the user alone, count as no session; sessions written before
// recent items moved into the seen key keep their login but lose their
// recent items.
//
// The cleaning index and the view counts are one sorted set each, written
// by every request (see "Hot keys" below). Versions that had
// Options.Spread kept them in these same keys with its default of 1; the
// parts that a Spread above 1 wrote ({sessions:K}:seen, {views:K}:viewed)
// are not read.
//
// # Round trips
//
// Calls from many goroutines are auto-pipelined onto few connections, and
// each call takes as few round trips as its slots allow. CheckToken usually
// takes none (see below). On a single server RefreshSession, UpdateToken,
// StartSession, the cart and value writes and a guest's Logout are one
// script each, and the three that every request makes (RefreshSession,
// UpdateToken and the cart writes) are group-committed: calls that arrive
// while two batches of the same script are on their way go out together as
// one script call that runs each in turn, atomically, and answers each
// separately. A batch changes when a call reaches the server, not what it
// does there; it saves the server and the client the fixed cost of a
// call. In a cluster the session index, the view counts and the
// users' indexes live on other slots than the session, and what RefreshSession
// and StartSession write there depends on the session's state, so they
// follow the session script in a second round trip: for RefreshSession only
// when an item was viewed or the index moves (see below); UpdateToken sends
// its three writes at once, as the book's update_token does. Logout of a
// logged-in user takes two round trips, UserSessions two, LogoutUser three,
// RenewSession three to five, and CleanSessions two a batch of 1,000
// sessions on a single server, where a pass of several batches sends each
// batch's deletions with the next batch's read, one round trip a batch
// (three in a cluster, with one script a session in the second).
//
// # Expiry, and key TTLs
//
// Every expiry follows the Store's clock (Options.Clock), as in every
// backend, and is exact on every read: a session is live while its
// last-seen time is less than IdleTimeout ago and its created time less
// than Lifetime ago, and every script and read checks that by the clock's
// milliseconds passed in with the call. Redis never decides when anything
// ends. A cached page is stored with the instant it ends by that clock,
// and Page reports a miss from then on.
//
// Every key still gets a TTL, a memory safety net set Options.TTLSlack (a
// minute by default) beyond the moment the entry ends by the Store's
// clock, so that Redis frees what nobody reads or cleans again: a page
// lives TTL plus slack; a session's keys live until its idle deadline or
// lifetime, whichever comes first, plus the slack, plus at most
// Options.TouchEvery (the login's deadline is moved only every TouchEvery,
// see below); a user's index lives a lifetime plus the slack after its
// newest entry, and drops entries older than a lifetime whenever one is
// added. TTLs are durations measured by the server, so with a clock slower
// than real time, such as a test's retail.ManualClock, keys can go before
// their entry ends only if the entry is held for its Store-clock life plus
// TTLSlack of real time.
//
// Refreshes set the TTL of the keys they write, and of every key of the
// session when they move the login's deadline; no call writes a key only
// to move its TTL on every request. An abandoned session's keys thus go by
// their TTLs even if no cleaner runs; its index entry stays until a
// cleaning pass finds it has no session (see below), which also frees
// sessions sooner.
//
// # Client-side caching and read-your-writes
//
// CheckToken, Page and Row read through rueidis's DoCache: after the first
// read a value is served from process memory until the server reports that
// the key changed. A session's login key is therefore written only when the
// session starts, changes user, or needs its coarse idle deadline moved:
// a refresh moves the deadline, to now plus the idle timeout, only once
// Options.TouchEvery (a minute by default) has passed since the login was
// written, so a shopper's login is rewritten at most once a minute. A
// refresh within it that views no new item writes nothing at all and is
// answered from the cached login and recent items, without a round trip;
// Cart, Value and RecentItems read through the cache too. The deadline
// is a lower bound of the real one (last-seen times only grow), so while it
// lies ahead CheckToken answers from the cache alone; past it, CheckToken
// reads the exact last-seen stamp from the server to decide.
//
// An invalidation travels on the connection that cached the key, which need
// not be the one a write used, so a read right after this process's own
// write could see the old value. The Store therefore remembers a hash of
// what it wrote (or that it deleted) and, until a cached read agrees, reads
// that key from the server: a read after this process's write returns that
// write or a newer one. Writes by other processes reach this process's
// cache when their invalidation arrives: measured on loopback by
// BenchmarkCache_CrossProcessStaleness, tens of microseconds at the median,
// a few milliseconds at the 99th percentile and around ten at worst on a
// busy two-core machine. Recent items, carts, values, ranks and counts
// change often and are always read from the server. CacheStats counts hits
// and misses.
//
// # Cleaning without losing sessions
//
// The book reads the oldest sessions, then deletes them; a request that
// refreshes one in between loses it. Here each session's last-seen stamp is
// kept on its own slot, and a session is deleted only if its stamp is still
// the one the pass read (on a single server, where the pass reads no
// stamps: only if its stamp is idle-expired or at most the newest entry the
// pass may take, which lies below the pass's start; see below). Stamps are
// the clock's milliseconds made strictly increasing within a process (in
// steps of 1/1024 ms), so even a refresh in the same millisecond is seen. A
// pass reads only stamps older than its own start, so sessions refreshed
// after it began are out of its reach.
// Across processes the guarantee rests on their clocks: a refresh from a
// process whose clock lags by more than the time between the pass's start
// and its read of that session can still be cleaned.
//
// RefreshSession writes the session's stamp to the index only when it moves
// the login's deadline, so that most requests leave the shared index (one
// slot, one node of a cluster) alone. An index entry may thus lag behind its
// session's stamp; a pass that reads such an entry leaves the session alone
// and moves the entry up to the session's stamp, then reads again, so it
// still removes sessions in the order they were last seen. On a single
// server it deletes such a session at once if its stamp is at most the
// newest entry the pass may take by the count (or is idle-expired): its
// entry is below that too, so the pass would take it anyway. The index entry
// of a deleted session goes only if its stamp is unchanged, so an update
// racing a deletion keeps its entry. An entry whose session has no keys
// (they expired by their TTLs, or a cluster write failed half way) goes
// once it is older than a minute; a younger one may be a cluster update
// whose session write has not landed yet. Cleaning leaves users' indexes
// alone: their entries of sessions it deleted are never returned, and go
// as described under Logout below.
//
// # Logout against concurrent requests
//
// RefreshSession, AddToCart, IncrementCart and SetValue write only to a
// live session, checked in the same script on the session's slot, so none
// of them can bring back a session that Logout deleted. Their writes to
// other slots are made so that they cannot leave anything either: in a
// cluster, RefreshSession raises the session's index entry only after its
// script found the session live, and only if the entry still exists (ZADD
// XX GT); Logout, after deleting the session, removes its entry if the
// entry's stamp is no newer than the session's was. Whichever lands first,
// nothing is left.
//
// Calls that create sessions (StartSession, UpdateToken, RenewSession)
// racing Logout or cleaning of the same token in a cluster can leave an
// index entry without a session, which cleaning removes after a minute, or
// an entry in a user's index for a session that is gone; UserSessions and
// LogoutUser check every session they find there, so such an entry is never
// returned, and goes with the index's own TTL or when a newer entry is
// added more than a lifetime after it. On a single server a session's
// creation and its index entries are one step.
//
// # RenewSession
//
// The old and the new token's keys live on different slots of a cluster, so
// RenewSession works in two steps (on a single server too, so that one path
// is tested everywhere): it copies the old session into a new one under the
// new token and indexes it (in the cleaning index and its user's index),
// then deletes the old one and drops the old token's entries. Both tokens
// are live between the steps, so a concurrent CheckToken finds one of them,
// and a concurrent LogoutUser ends the new one even if the old one is gone
// by the time it looks. If the second step does not happen (a crash, a lost
// connection, a context that ends), RenewSession returns an error and the
// caller hands the new token to nobody: the old session is unchanged and
// still works, and the new one, which no browser holds, is listed with its
// user's sessions (so LogoutUser ends it too) until it expires by the idle
// timeout and is removed by cleaning or by its keys' TTLs. If the old session is gone when the second step runs
// (a concurrent Logout or RenewSession), the new one is deleted again and
// RenewSession reports that there was no session. A write to the old token
// that lands between the copy and the deletion is lost with it.
//
// # Errors and what they can leave half done
//
// The driver returns errors as rueidis gives them, unwrapped; the Store
// wraps each once in a *retail.OpError naming the operation and its key,
// so errors.As still reaches the *rueidis.RedisError the server sent. A
// Redis nil is a miss, never an error. New returns an *retail.InputError
// (matching retail.ErrInvalid) for a nil client or an option out of range.
//
// A script runs whole or not at all, but a call that fails (a context
// deadline, a lost connection) may have run its script without the caller
// hearing of it, and a call of several round trips may stop between them.
// In particular an error matching context.DeadlineExceeded does not mean
// nothing was written: the command may have reached the server and run
// after the caller gave up, as with any Redis client. Conversely, a call
// returns once its context ends, even while the server stalls: it waits
// for its reply or its context, whichever comes first. A group-committed
// call that gives up while queued is never sent; one whose batch is on its
// way leaves the batch, which goes on for the other calls in it. A call
// that returns nil was applied. One limit is rueidis's: a connection holds
// at most 2^ClientOption.RingScaleEachConn commands waiting for replies
// (1,024 by default), and once a stall has filled that, a call sent on the
// connection waits for room, past its context, until the server answers.
// What that can leave: RefreshSession in a cluster, a view not counted and
// an index entry lagging (cleaning corrects it); StartSession or
// UpdateToken in a cluster, a session without its index entry or its
// user's index entry (until RepairSessions or its next UpdateToken indexes
// it; its keys' TTLs free it otherwise) or an index entry without a session
// (cleaned or repaired after a minute); Logout, a session
// deleted whose index entries remain (cleaned, or never returned, as
// above); LogoutUser, some of the user's sessions ended and not others
// (call it again); RenewSession, as described above; CleanSessions,
// sessions deleted with their index entries left for the next pass.
//
// # Failover
//
// In a cluster with replicas, a master that fails is replaced by its
// replica after the cluster's node timeout. Meanwhile the slots it served
// refuse every call: sessions whose keys live there cannot be checked or
// refreshed. Sessions on the other masters keep working even if the
// failed master holds the session index or the view counts: RefreshSession
// and UpdateToken keep the index and view writes they could not send in a
// bounded buffer (views of up to 100,000 distinct items) and send it with
// the next call that reaches those slots, at most every 100 ms, and
// ItemRank, TopItems and RescaleViews send it before they read. Replication
// is asynchronous, so the writes a master acknowledged just before it
// failed may be missing on its replica: sessions created or logged out in
// that moment (a session lost is a logout; a logout lost brings the session
// back until it expires), view counts, and the entries of the session index
// and the users' indexes, which live on other masters than their sessions.
// What is lost is bounded by the replication lag, typically milliseconds of
// writes; what is buffered in a process that stops before the master is back
// is lost with it, and a buffered view whose first send reached the server
// but whose reply did not is counted twice.
//
// Lost index entries leave sessions that SessionCount does not count,
// CleanSessions does not remove and LogoutUser does not end, and entries
// whose session is gone. [Store.RepairSessions] mends both: it scans the
// login keys of every master and indexes each session its index or its
// user's index misses, at the session's own stamps, and removes each index
// entry that has had no session for a minute (an update in flight writes its
// entry a moment before its session, so a younger one is left alone).
// Entries of users' indexes whose session is gone are never returned, and
// go when UserSessions or LogoutUser reads them, or with the lifetime
// pruning of those indexes. The retail.SessionCleaner runs it every RepairEvery (10 minutes by default, one
// cleaner at a time, a failed repair retried a minute later), so a session
// stays unindexed for about that long at most after a failover; UpdateToken
// re-indexes its session at once. A repair scans every key of every master
// (SCAN, matching the login keys), reads each session's login and seen keys
// and its two index scores in batches of about a thousand, and checks each
// index entry older than a minute for its session: a few commands per
// session, pipelined, and one write per entry to mend. It needs CLUSTER SLOTS
// and SCAN, no admin rights. On a single server every call writes a session
// and its entries in one script and RepairSessions returns at once.
// TestFailover_RepairLeavesNoOrphans kills the master of the session index of
// a 3-master cluster with replicas under load, with its calls failing for the
// two or three seconds of the failover; over the runs made while writing it,
// this left 1 to 21 sessions unindexed, 14 to 356 entries without a session
// and 19 to 307 sessions missing from their user's index, most of them from calls that
// failed between their steps rather than from writes the replica missed.
// After one repair, a scan of every master finds none.
//
// Every guarantee here assumes that the Store's commands reach the masters.
// A client whose ClientOption.SendToReplicas sends some of them (its read-only
// commands) to replicas reads values up to the replication lag old: a login
// just logged out may still be found, a write just made may not be, and
// UserSessions may take a session just created for one that is gone and
// drop it from its user's index, where LogoutUser would then miss it. Give
// the Store a client that sends its commands to the masters.
//
// # Hot keys, and how far a cluster scales
//
// A session's keys hash to slots all over a cluster, but every view goes to
// one sorted set and every request's index entry to another, so their two
// masters do more than the others. examples/loadgen (64 users, 10,000
// items, 30 s) on a private 6-master cluster, with INFO commandstats and
// INFO cpu read off every master (2-core machine, Redis 7.0.15,
// 2026-11-22; the client shares the cores, so only the ratios mean
// anything), ran 34,257 ops/s at 29 µs of server CPU an op, the hottest
// master, that of {views}, taking 19.8% of the commands and 21.8% of the
// CPU (ideal 16.7%). Reading its server time as 25.6 µs a request spread
// over all masters plus 2.1 µs on the master of {views} (ZINCRBY and
// ZRANK) and 1.4 µs on that of {sessions}: the busiest master does
// 25.6/N + 2.1 µs a request, so N masters serve, against N perfectly even
// ones,
//
//	masters  share of even
//	3        92%
//	12       58%
//	48       23%
//
// So the {views} master is what bounds a large cluster. Splitting the two
// sets into parts on slots of their own (the former Options.Spread) evened
// the masters out (17.3% on 6 masters) but cost more than it spread: every
// item page's ItemRank then read every part, and the same run lost 36% of
// its throughput with 6 parts (21,896 ops/s) and 59% with 12 (14,123). The orders of magnitude, not the
// figures, carry over to a cluster whose masters have cores of their own.
package rueidisbackend
