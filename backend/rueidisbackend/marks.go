package rueidisbackend

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// Every call on a logged-in session reads its user's logout mark (see
// loggedout.go). Through the client-side cache that read is a lookup, a
// copy and a parse that cost about as much client CPU as the session's own
// read. So on a single server a Store keeps the marks decoded in a table
// of its own, which a connection of its own keeps fresh: it asks the server
// (CLIENT TRACKING ON BCAST PREFIX) for an invalidation message on every
// change of any mark, the messages that keep the client-side cache fresh,
// and forgets the marks they name. A mark is read from the server on that
// connection, after which it is served from the table until it changes, or
// for CacheTTL at most, as a cached value is.
//
// While the connection is not tracking (before it has started, after it
// broke, on a server that refuses CLIENT TRACKING) the table serves
// nothing, and the marks are read through the client-side cache. A broken
// connection is dialled again, after a pause that grows to maxMarkPause. In
// a cluster the marks live on every master, whose slots move, and are
// read through the client-side cache.

// markTable holds the decoded logout marks of a Store on a single server.
type markTable struct {
	prefix string        // of the marks' keys
	ttl    time.Duration // an entry's longest life (CacheTTL)

	entries [logoutBuckets]atomic.Pointer[markEntry] // nil: unknown

	mu   sync.Mutex
	conn rueidis.DedicatedClient // tracking the marks; nil while not
	id   int64                   // conn's CLIENT ID
	// gens counts the changes heard of each mark, and epoch the times
	// tracking started or stopped: a mark read before either moved is not
	// stored (see put).
	gens  [logoutBuckets]uint64
	epoch uint64

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	// redialHook, if set (by tests), runs before the connection is
	// dialled again.
	redialHook func()
}

// markEntry is a mark as the table holds it.
type markEntry struct {
	at    int64     // the mark, Unix ms; noMark if there is none
	until time.Time // when it stops being served
}

// noMark is the entry of a bucket without a mark.
const noMark = math.MinInt64

// markRead is what a read of a mark started under: it is stored only if
// neither moved since.
type markRead struct {
	conn       rueidis.DedicatedClient
	gen, epoch uint64
}

// maxMarkPause bounds the pause before the table's connection is dialled
// again.
const maxMarkPause = 5 * time.Second

// newMarkTable returns the table of the marks under prefix, and starts the
// connection that keeps it fresh; close stops it.
func newMarkTable(c rueidis.Client, prefix string, ttl time.Duration) *markTable {
	t := &markTable{prefix: prefix + "logoutmark:{", ttl: ttl, stop: make(chan struct{}), done: make(chan struct{})}
	go t.track(c)
	return t
}

// get returns bucket b's mark if the table holds it: ok is false if it
// does not, and the mark must be read.
func (t *markTable) get(b int) (at int64, ok bool) {
	if t == nil {
		return 0, false
	}
	e := t.entries[b].Load()
	if e == nil || !time.Now().Before(e.until) {
		return 0, false
	}
	return e.at, true
}

// read reads bucket b's mark from the server on the tracking connection
// and stores it: ok is false if the table is not tracking, or the read
// failed, and the mark must be read otherwise.
func (t *markTable) read(ctx context.Context, b int) (at int64, ok bool) {
	if t == nil {
		return 0, false
	}
	t.mu.Lock()
	r := markRead{conn: t.conn, gen: t.gens[b], epoch: t.epoch}
	t.mu.Unlock()
	if r.conn == nil {
		return 0, false
	}
	v, err := r.conn.Do(ctx, r.conn.B().Get().Key(t.key(b)).Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err):
		at = noMark
	case err != nil:
		return 0, false
	default:
		at = parseMark(v)
	}
	t.put(b, r, at)
	return at, true
}

// parseMark decodes a mark's value. One it cannot read counts as the
// latest instant, which sends every session of its bucket to its user's
// key.
func parseMark(v string) int64 {
	at, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return math.MaxInt64
	}
	return at
}

// put stores bucket b's mark at, read under r, unless the mark changed or
// tracking stopped since r.
func (t *markTable) put(b int, r markRead, at int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gens[b] == r.gen && t.epoch == r.epoch {
		t.entries[b].Store(&markEntry{at: at, until: time.Now().Add(t.ttl)})
	}
}

// forget drops bucket b's mark, and keeps a read begun before from
// storing it: this process changed the mark, or the server said it changed.
func (t *markTable) forget(b int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.gens[b]++
	t.entries[b].Store(nil)
	t.mu.Unlock()
}

// forgetAll drops every mark, and keeps every read begun before from
// storing one.
func (t *markTable) forgetAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forgetAllLocked()
}

func (t *markTable) forgetAllLocked() {
	t.epoch++
	for b := range t.entries {
		t.entries[b].Store(nil)
	}
}

// setConn makes conn, whose CLIENT ID is id, the tracking connection (nil
// when tracking stops), and drops every mark.
func (t *markTable) setConn(conn rueidis.DedicatedClient, id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.conn, t.id = conn, id
	t.forgetAllLocked()
}

// invalidated takes the server's invalidation messages: the keys of the
// marks that changed, or nil when every key may have (a FLUSHALL, or the
// connection closing).
func (t *markTable) invalidated(keys []rueidis.RedisMessage) {
	if keys == nil {
		t.forgetAll()
		return
	}
	for _, k := range keys {
		if key, err := k.ToString(); err == nil {
			t.forgetKey(key)
		}
	}
}

// forgetKey drops the mark whose key is key, if it is a mark's.
func (t *markTable) forgetKey(key string) {
	n, ok := strings.CutPrefix(key, t.prefix)
	if !ok {
		return
	}
	if b, err := strconv.Atoi(strings.TrimSuffix(n, "}")); err == nil && b >= 0 && b < logoutBuckets {
		t.forget(b)
	}
}

// key is the key of bucket b's mark.
func (t *markTable) key(b int) string { return t.prefix + itoa(b) + "}" }

// track keeps a connection tracking the marks until close, dialling it
// again when it breaks. It gives up, leaving the table empty, when the
// server refuses to track, and when the client is closed.
func (t *markTable) track(c rueidis.Client) {
	defer close(t.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-t.stop:
			cancel()
		case <-t.done:
		}
	}()
	pause := 50 * time.Millisecond
	for first := true; ; first = false {
		t.mu.Lock()
		hook := t.redialHook
		t.mu.Unlock()
		if !first && hook != nil {
			hook()
		}
		conn, release := c.Dedicate()
		broken := conn.SetOnInvalidations(t.invalidated)
		err := t.start(ctx, conn)
		if err == nil {
			pause = 50 * time.Millisecond
			select {
			case <-broken:
			case <-t.stop:
			}
		}
		t.setConn(nil, 0)
		conn.Close() // its tracking must not go back to the pool
		release()
		if redisErr, ok := rueidis.IsRedisErr(err); ctx.Err() != nil || errors.Is(err, rueidis.ErrClosing) || err == errNoPush || ok && !redisErr.IsLoading() {
			return
		}
		select {
		case <-time.After(pause):
		case <-t.stop:
			return
		}
		pause = min(2*pause, maxMarkPause)
	}
}

// start turns tracking of the marks on on conn, and makes the table serve
// what conn reads.
func (t *markTable) start(ctx context.Context, conn rueidis.DedicatedClient) error {
	for _, cmd := range []rueidis.Completed{
		conn.B().ClientSetname().ConnectionName("retail-logout-marks").Build(),
		conn.B().ClientTracking().Off().Build(), // rueidis turns it on for caching, in another mode
		conn.B().ClientTracking().On().Prefix().Prefix(t.prefix).Bcast().Build(),
	} {
		if err := conn.Do(ctx, cmd).Error(); err != nil {
			return err
		}
	}
	info, err := conn.Do(ctx, conn.B().ClientInfo().Build()).ToString()
	if err != nil {
		return err
	}
	// Over RESP2 the server would not send conn its invalidations.
	if !strings.Contains(info, " resp=3") {
		return errNoPush
	}
	id, err := conn.Do(ctx, conn.B().ClientId().Build()).AsInt64()
	if err != nil {
		return err
	}
	t.setConn(conn, id)
	return nil
}

var errNoPush = errors.New("rueidisbackend: the connection cannot receive invalidation messages")

// close stops the tracking connection.
func (t *markTable) close() {
	if t == nil {
		return
	}
	t.closeOnce.Do(func() { close(t.stop) })
	<-t.done
}
