package rueidisbackend

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
)

// Defaults for Options.
const (
	DefaultPrefix   = "retail:"
	DefaultCacheTTL = time.Minute
)

// Options configures a Store. The zero value is the book's configuration.
type Options struct {
	// Prefix starts every key; DefaultPrefix if empty. It must not contain
	// "{" or "}", which would change the keys' hash slots. Stores with
	// different prefixes share a server without seeing each other.
	Prefix string

	// Clock tells the Store the time; retail.SystemClock if nil. Last-seen
	// stamps, page expiry and row schedules use it, not the server's clock.
	Clock retail.Clock

	// RecentLimit is how many recently viewed items a session keeps;
	// retail.DefaultRecentLimit if zero or less.
	RecentLimit int

	// CacheTTL bounds how long a value stays in the client-side cache;
	// DefaultCacheTTL if zero. Invalidation messages from the server end it
	// sooner when the key changes; the TTL only limits memory and the damage
	// of a lost invalidation. Negative disables client-side caching.
	CacheTTL time.Duration
}

// Store is a retail.Store on Redis through rueidis. Create one with New; it is
// safe for concurrent use.
type Store struct {
	c        rueidis.Client
	k        keys
	clock    retail.Clock
	limit    string // RecentLimit, formatted for scripts
	cacheTTL time.Duration
	cluster  bool
	closed   atomic.Bool

	stampMu   sync.Mutex
	lastStamp float64

	own    ownWrites
	hits   atomic.Uint64
	misses atomic.Uint64
}

var _ retail.Store = (*Store)(nil)

// ErrOptions is matched by the error New returns for invalid Options.
var ErrOptions = errors.New("rueidisbackend: invalid options")

// New returns a Store over c. The caller keeps ownership of c: Close does
// not close it, and c must outlive the Store. For client-side caching, c must
// be built with caching enabled (the rueidis default); with DisableCache the
// Store reads from the server every time.
func New(c rueidis.Client, opts Options) (*Store, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil client", ErrOptions)
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(opts.Prefix, "{}") {
		return nil, fmt.Errorf("%w: prefix %q contains a brace", ErrOptions, opts.Prefix)
	}
	if opts.Clock == nil {
		opts.Clock = retail.SystemClock{}
	}
	if opts.RecentLimit <= 0 {
		opts.RecentLimit = retail.DefaultRecentLimit
	}
	if opts.CacheTTL == 0 {
		opts.CacheTTL = DefaultCacheTTL
	}
	return &Store{
		c:        c,
		k:        keys{prefix: opts.Prefix},
		clock:    opts.Clock,
		limit:    strconv.Itoa(opts.RecentLimit),
		cacheTTL: opts.CacheTTL,
		cluster:  c.Mode() == rueidis.ClientModeCluster,
	}, nil
}

// Close makes every later call return retail.ErrClosed. It does not close
// the rueidis client, which the caller owns. Close always returns nil.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

// CacheStats counts the Store's reads of cacheable keys (logins, pages,
// rows): Hits were served from process memory, Misses went to the server.
type CacheStats struct {
	Hits, Misses uint64
}

// CacheStats returns the counts since the Store was created.
func (s *Store) CacheStats() CacheStats {
	return CacheStats{Hits: s.hits.Load(), Misses: s.misses.Load()}
}

// begin gates every call: invalid input, then a done context, then a
// closed store.
func (s *Store) begin(ctx context.Context, inputErr error) error {
	if inputErr != nil {
		return inputErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return retail.ErrClosed
	}
	return nil
}

// wrap adds the operation to an error from Redis, keeping it reachable
// through errors.As (a *rueidis.RedisError for errors the server sent).
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("rueidisbackend: %s: %w", op, err)
}

func (s *Store) nowMs() int64 { return s.clock.Now().UnixMilli() }

// stampStep is the smallest step between two stamps of this process: a
// 1/1024 ms, exact in a float64 for Unix milliseconds until the year 2248.
const stampStep = 1.0 / 1024

// nextStamp returns a last-seen stamp: the clock's Unix milliseconds, made
// strictly increasing within this process. Two updates of one session in
// the same millisecond thus have different stamps, which is what lets a
// cleaning pass tell that a session was refreshed after it read it.
func (s *Store) nextStamp() float64 {
	now := float64(s.nowMs())
	s.stampMu.Lock()
	defer s.stampMu.Unlock()
	s.lastStamp = math.Max(now, s.lastStamp+stampStep)
	return s.lastStamp
}

func formatStamp(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func itoa(n int) string { return strconv.Itoa(n) }

var errShortReply = errors.New("unexpected reply shape")

// cachedGet reads key through the client-side cache, unless this process
// wrote key and the cache may not have heard yet (see ownWrites).
func (s *Store) cachedGet(ctx context.Context, key string) (rueidis.RedisMessage, error) {
	if s.cacheTTL < 0 {
		return s.c.Do(ctx, s.c.B().Get().Key(key).Build()).ToMessage()
	}
	r := s.c.DoCache(ctx, s.c.B().Get().Key(key).Cache(), s.cacheTTL)
	if r.IsCacheHit() {
		s.hits.Add(1)
	} else {
		s.misses.Add(1)
	}
	msg, err := r.ToMessage()
	if err != nil && !rueidis.IsRedisNil(err) {
		return msg, err
	}
	ok, gen := s.own.fresh(key, msg, err)
	if ok {
		return msg, err
	}
	msg, err = s.c.Do(ctx, s.c.B().Get().Key(key).Build()).ToMessage()
	s.own.seen(key, gen, msg, err)
	return msg, err
}
