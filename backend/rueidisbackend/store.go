package rueidisbackend

import (
	"cmp"
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
	"github.com/retailkit/retail/internal/settings"
)

// Defaults for Options.
const (
	// DefaultPrefix starts every key unless Options.Prefix says otherwise.
	DefaultPrefix = "retail:"
	// DefaultCacheTTL bounds a value's life in the client-side cache.
	DefaultCacheTTL = time.Minute
	// DefaultTTLSlack is how long Redis keeps a key after the page or
	// session it holds ended by the Store's clock: a memory safety net (see
	// Options.TTLSlack).
	DefaultTTLSlack = time.Minute
	// DefaultSessionTableBytes bounds the memory of a Store's table of
	// sessions (see Options.SessionTableBytes).
	DefaultSessionTableBytes = 128 << 20
)

// Options configures a Store. The zero value is the book's configuration.
type Options struct {
	// Prefix starts every key; DefaultPrefix if empty. It must not contain
	// "{" or "}", which would change the keys' hash slots. Stores with
	// different prefixes share a server without seeing each other.
	Prefix string

	// Clock tells the Store the time; retail.SystemClock if nil. Session
	// expiry, last-seen stamps, page expiry and row schedules use it, not
	// the server's clock.
	Clock retail.Clock

	// IdleTimeout ends a session that has not been refreshed for this long;
	// retail.DefaultIdleTimeout if zero.
	IdleTimeout time.Duration

	// Lifetime ends a session this long after it started or last logged in;
	// retail.DefaultLifetime if zero. IdleTimeout and Lifetime must be in
	// retail.MinDuration..retail.MaxSessionTime. Every Store on one Redis
	// and Prefix must have the same two: a LogoutUser keeps its record, and
	// a session its key, as long as the Store that wrote them says a
	// session lives.
	Lifetime time.Duration

	// RecentLimit is how many recently viewed items a session keeps;
	// retail.DefaultRecentLimit if zero. It must not be negative.
	RecentLimit int

	// CacheTTL bounds how long a value stays in the client-side cache;
	// DefaultCacheTTL if zero. Invalidation messages from the server end it
	// sooner when the key changes; the TTL only limits memory and the damage
	// of a lost invalidation. Negative disables client-side caching.
	CacheTTL time.Duration

	// TTLSlack is how much longer, at least, Redis keeps a key with a TTL
	// (a cached page, a session) than the Store's clock says
	// the entry lives; DefaultTTLSlack if zero. It must not be negative. The
	// Store's clock alone decides when an entry ends: the Redis TTL is a
	// memory safety net only, so that keys nobody reads again are freed.
	// TTLs are durations measured by the server, so with a clock slower than
	// real time, such as a test's retail.ManualClock, an entry can lose its
	// keys only if it is held for its Store-clock life plus TTLSlack of real
	// time.
	TTLSlack time.Duration

	// TouchEvery is how often, at most, a session that only gets visits is
	// written; see retail.DefaultTouchEvery for the default and what it
	// changes. A visit within it that views no new item costs no round
	// trip: the session's login and recent items come from the client-side
	// cache.
	//
	// IdleTimeout, Lifetime and TouchEvery are kept in whole milliseconds,
	// rounded up, as every backend keeps them, so that a session never
	// ends sooner than configured: an IdleTimeout of 1.5 ms is 2 ms.
	TouchEvery time.Duration

	// ViewFlush is how long the Store adds up item views in its process
	// before it sends them, one ZINCRBY an item: retail.DefaultViewFlush
	// (a second) if zero, each view at once if negative (see
	// retail.StoreOptions). A page view then costs the server nothing for
	// its view; a process that dies loses the views of its last window.
	ViewFlush time.Duration

	// MaxSessionsPerUser, if positive, is how many live sessions one user
	// may hold: a login beyond it ends the user's least recently seen
	// other sessions before it returns, reading their sessions as UserSessions does (see
	// retail.StoreOptions.MaxSessionsPerUser for exactly which, and what
	// holds when logins run at once). 0 is no limit; it must not be
	// negative.
	MaxSessionsPerUser int

	// SessionTableBytes bounds, roughly, the memory of the table in which a
	// Store on a single server keeps sessions' logins and recent items
	// decoded (see "Client-side caching and read-your-writes" in the
	// package doc): DefaultSessionTableBytes if zero, about 300,000
	// sessions with few recent items. Past it, storing a session drops
	// others at random; the table holds 256 sessions at least. Negative
	// keeps no table, and sessions are read through the client-side cache,
	// as in a cluster.
	SessionTableBytes int
}

// Store is a retail.Store on Redis through rueidis. Create one with New; it
// is safe for concurrent use. Its Stats report the client-side cache's hits
// and misses (ClientCacheHits, ClientCacheMisses), the tables' of sessions
// and logout marks among them.
type Store struct {
	retail.Store
	d *store
}

// store is the driver under Store.
type store struct {
	c        rueidis.Client
	cleanups cleanups // work failed calls leave behind (see SetScheduledRow, RenewSession)
	k        keys
	clock    retail.Clock
	limit    int    // RecentLimit
	limitArg string // RecentLimit, formatted for scripts
	cacheTTL time.Duration
	ttlSlack time.Duration
	idle     int64 // IdleTimeout in ms
	touch    int64 // TouchEvery in ms
	life     int64 // Lifetime in ms
	cluster  bool
	batches  struct{ refresh, update, view, cart *batcher } // nil in a cluster (see batch.go)
	deferred deferred                                       // index entries waiting for their node (see deferred.go)
	tracker  *tracker                                       // nil but on a standalone client with caching (see tracker.go)

	// IdleTimeout, TouchEvery, Lifetime and TTLSlack in ms, formatted for
	// the session scripts (see sessionArgs).
	idleArg, touchArg, lifeArg, slackArg string

	stampMu   sync.Mutex
	lastStamp float64

	// settleKnown is whether the server has run cleanSettle for this store,
	// so that a read pipelined after it runs after it (see cleanOnServer).
	settleKnown atomic.Bool

	// renewHook, if set (by tests), runs between RenewSession's two steps;
	// an error it returns fails the second step.
	renewHook func() error
	// batchHook, if set (by tests), runs before a batch is sent (batch.go),
	// with its number of calls.
	batchHook func(calls int)
	// viewHook, if set (by tests), runs when view.lua wrote a visit.
	viewHook func()

	own    ownWrites
	hits   atomic.Uint64
	misses atomic.Uint64
}

var (
	_ retail.Store = (*Store)(nil)
	_ driver.Store = (*store)(nil)
)

// New returns a Store over c. The caller keeps ownership of c: Close does
// not close it, and c must outlive the Store. For client-side caching, c must
// be built with caching enabled (the rueidis default); with DisableCache the
// Store reads from the server every time. New returns an error matching
// retail.ErrInvalid (an *retail.InputError) if c is nil or an option is out
// of range.
func New(c rueidis.Client, opts Options) (*Store, error) {
	const op = "rueidisbackend.New"
	switch {
	case c == nil:
		return nil, &retail.InputError{Op: op, Arg: "client", Reason: "nil"}
	case strings.ContainsAny(opts.Prefix, "{}"):
		return nil, &retail.InputError{Op: op, Arg: "Prefix", Reason: `contains "{" or "}"`}
	case opts.RecentLimit < 0:
		return nil, &retail.InputError{Op: op, Arg: "RecentLimit", Reason: "negative"}
	case opts.TTLSlack < 0:
		return nil, &retail.InputError{Op: op, Arg: "TTLSlack", Reason: "negative"}
	case opts.MaxSessionsPerUser < 0:
		return nil, &retail.InputError{Op: op, Arg: "MaxSessionsPerUser", Reason: "negative"}
	}
	times, err := settings.ResolveSessions(op, opts.IdleTimeout, opts.Lifetime, opts.TouchEvery)
	if err != nil {
		return nil, err
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.Clock == nil {
		opts.Clock = retail.SystemClock{}
	}
	if opts.RecentLimit == 0 {
		opts.RecentLimit = retail.DefaultRecentLimit
	}
	if opts.CacheTTL == 0 {
		opts.CacheTTL = DefaultCacheTTL
	}
	if opts.TTLSlack == 0 {
		opts.TTLSlack = DefaultTTLSlack
	}
	d := &store{
		c:        c,
		k:        newKeys(opts.Prefix),
		clock:    opts.Clock,
		limit:    opts.RecentLimit,
		limitArg: strconv.Itoa(opts.RecentLimit),
		cacheTTL: opts.CacheTTL,
		ttlSlack: opts.TTLSlack,
		idle:     times.Idle,
		touch:    times.Touch,
		life:     times.Lifetime,
		slackArg: i64(opts.TTLSlack.Milliseconds()),
		cluster:  c.Mode() == rueidis.ClientModeCluster,
	}
	d.idleArg, d.touchArg, d.lifeArg = i64(d.idle), i64(d.touch), i64(d.life)
	if !d.cluster {
		d.batches.refresh = newBatcher(d, refreshSession)
		d.batches.update = newBatcher(d, updateToken)
		d.batches.view = newBatcher(d, viewSession)
		d.batches.cart = newBatcher(d, cartWrite)
		if d.cacheTTL > 0 && c.Mode() == rueidis.ClientModeStandalone {
			d.tracker = newTracker(c, opts.Prefix, d.cacheTTL, cmp.Or(opts.SessionTableBytes, DefaultSessionTableBytes))
		}
	}
	return &Store{Store: retail.NewStoreWith(d, retail.StoreOptions{
		ViewFlush: opts.ViewFlush, Lifetime: time.Duration(d.life) * time.Millisecond, MaxSessionsPerUser: opts.MaxSessionsPerUser,
	}), d: d}, nil
}

// Close implements driver.Store. It tells the tracker of the sessions and
// marks to stop, which closes its connection (see tracker.go), and closes
// nothing else: the caller owns the rueidis client.
func (s *store) Close() error {
	s.tracker.close()
	s.cleanups.wait() // at most a second
	return nil
}

// cleanups runs work that a call leaves behind, and lets Close wait for
// it: work that starts once Close has begun, by a call still running
// then, is not waited for.
type cleanups struct {
	mu      sync.Mutex
	closing bool
	wg      sync.WaitGroup
}

func (c *cleanups) run(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		go f()
		return
	}
	c.wg.Go(f)
}

func (c *cleanups) wait() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.wg.Wait()
}

// CacheCounts implements driver.Store, so that the Store's Stats report
// its reads of cacheable keys (logins, pages, rows): hits were served from
// process memory, misses went to the server.
func (s *store) CacheCounts() (hits, misses uint64) {
	return s.hits.Load(), s.misses.Load()
}

func (s *store) nowMs() int64 { return s.clock.Now().UnixMilli() }

// stampStep is the smallest step between two stamps of this process: a
// 1/1024 ms, exact in a float64 for Unix milliseconds until the year 2248.
const stampStep = 1.0 / 1024

// nextStamp returns a last-seen stamp and the clock's Unix milliseconds it
// was taken at. Stamps are those milliseconds made strictly increasing
// within this process: two refreshes of one session in the same millisecond
// thus have different stamps, which is what lets a cleaning pass tell that a
// session was refreshed after it read it. A Store that takes more than 1024
// stamps in one millisecond of its clock (only a stopped test clock lets it)
// runs its stamps ahead of the clock; seenValue then records the clock's
// milliseconds beside the stamp, so that expiry stays exact.
func (s *store) nextStamp() (stamp float64, now int64) {
	now = s.nowMs()
	s.stampMu.Lock()
	defer s.stampMu.Unlock()
	s.lastStamp = math.Max(float64(now), s.lastStamp+stampStep)
	return s.lastStamp, now
}

func formatStamp(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// seenValue is what a session's seen field holds: "STAMP", or "STAMP MS" if
// the stamp is not within the millisecond the clock read (see nextStamp).
// The stamp orders sessions and detects refreshes; the milliseconds, given
// or the stamp's whole part, are the session's last-seen time.
func seenValue(stamp float64, now int64) string {
	if int64(math.Floor(stamp)) == now {
		return formatStamp(stamp)
	}
	return formatStamp(stamp) + " " + i64(now)
}

func itoa(n int) string  { return strconv.Itoa(n) }
func i64(n int64) string { return strconv.FormatInt(n, 10) }

// msTime is the instant of Unix milliseconds ms, in the local time zone,
// as the memory backend returns it.
func msTime(ms int64) time.Time { return time.UnixMilli(ms) }

var errShortReply = errors.New("rueidisbackend: unexpected reply shape")

// cachedString reads key's value through the client-side cache (see
// cachedGet); ok is false if there is no key. The string shares memory
// with the cache, which never changes it: a caller that returns bytes
// copies them.
func (s *store) cachedString(ctx context.Context, key string) (v string, ok bool, err error) {
	msg, err := s.cachedGet(ctx, key)
	if rueidis.IsRedisNil(err) {
		return "", false, nil
	}
	if err == nil {
		v, err = msg.ToString()
	}
	return v, err == nil, err
}

// cachedGet reads key through the client-side cache, unless this process
// wrote key and the cache may not have heard yet (see ownWrites).
func (s *store) cachedGet(ctx context.Context, key string) (rueidis.RedisMessage, error) {
	return s.cachedRead(ctx, recordOf(key), s.c.B().Get().Key(key).Cache(), func() rueidis.Completed { return s.c.B().Get().Key(key).Build() })
}

// cachedRead sends cached, a read that rec names (see record), through
// the client-side cache; if the cached answer disagrees with what this
// process last wrote to its key (the cache has not heard yet, see
// ownWrites), it sends plain() to the server as well and returns that
// answer. With caching off it sends plain() alone.
func (s *store) cachedRead(ctx context.Context, rec record, cached rueidis.Cacheable, plain func() rueidis.Completed) (rueidis.RedisMessage, error) {
	if s.cacheTTL < 0 {
		return s.c.Do(ctx, plain()).ToMessage()
	}
	r := s.c.DoCache(ctx, cached, s.cacheTTL)
	if r.IsCacheHit() {
		s.hits.Add(1)
	} else {
		s.misses.Add(1)
	}
	msg, err := r.ToMessage()
	if err != nil && !rueidis.IsRedisNil(err) {
		return msg, err
	}
	ok, gen := s.own.fresh(rec, msg, err)
	if ok {
		return msg, err
	}
	msg, err = s.c.Do(ctx, plain()).ToMessage()
	s.own.seen(rec, gen, msg, err)
	return msg, err
}
