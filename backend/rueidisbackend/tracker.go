package rueidisbackend

import (
	"context"
	"crypto/rand"
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
// for CacheTTL at most, as a cached value is. The same connection keeps
// the sessions' table fresh (see sessiontable.go): the tracker is the
// connection, its probe, and the two tables.
//
// The table must hear every change made on the server that the Store's
// client writes to. So every probeEvery the tracker writes and deletes a
// probe key of its own through the Store's client, and stops serving the
// table if its connection does not hear of a probe that the server took
// within probeWait: a connection left on a server the client no longer
// writes to, or whose messages a proxy drops, stops serving within
// probeEvery+probeWait. A probe the server did not take (it stalls, or
// the client's connection broke) stops nothing: as the client-side cache
// serves while its connection lives, the table serves while the tracking
// connection does. The probe also ends the tracker once the client is
// closed. A connection whose reads the server sends elsewhere (a Valkey
// replica that redirects them) is dialled again.
//
// While the connection is not tracking (before it has started, after it
// broke) the tables serve nothing, and the marks and sessions are read
// through the client-side cache. A broken connection is dialled again,
// after a pause that grows to maxRedialPause. There are no tables with a
// client without client-side caching (DisableCache, or CacheTTL < 0), on
// a server that refuses CLIENT TRACKING, where no probe is ever heard, in
// a cluster, whose marks live on every master, and with Sentinel, whose
// clients move to a new master without the connections they lent; there
// is no table of sessions with a negative Options.SessionTableBytes
// either.

// tracker holds the decoded logout marks and sessions of a Store on a
// single server, and the connection that keeps them fresh.
type tracker struct {
	prefix   string        // of the marks' keys
	sessions sessionTable  // see sessiontable.go
	probe    string        // the key the tracker writes to check that it hears, its own
	ttl      time.Duration // an entry's longest life (CacheTTL)

	entries [logoutBuckets]atomic.Pointer[markEntry] // nil: unknown
	live    atomic.Bool                              // whether conn is set, read without the lock

	mu      sync.Mutex
	conn    rueidis.DedicatedClient // tracking the marks and sessions; nil while not
	id      int64                   // conn's CLIENT ID
	refused chan<- struct{}         // tells the tracker a read on conn was sent elsewhere (see refuse)
	// gens counts, for each mark, the changes heard of or made by this
	// process, the flushes, and the times tracking started or stopped: a
	// mark read before its count moved is not stored (see putMark).
	gens [logoutBuckets]uint64

	cancel context.CancelFunc
	done   chan struct{} // closed when the tracker has stopped

	// redialHook, if set (by tests), runs before the connection is
	// dialled again.
	redialHook func()
	// deaf, if set (by tests), leaves the server's messages of session
	// changes unheard, so that only this process's own writes drop its
	// sessions.
	deaf atomic.Bool
}

// markEntry is a mark as the table holds it.
type markEntry struct {
	at    int64     // the mark, Unix ms; noMark if there is none
	until time.Time // when it stops being served
}

// noMark is the entry of a bucket without a mark.
const noMark = math.MinInt64

// markRead is what a read of a mark started under: it is stored only if
// the mark's count of changes has not moved since.
type markRead struct {
	conn rueidis.DedicatedClient
	gen  uint64
}

const (
	minRedialPause = 50 * time.Millisecond // before the connection is dialled again
	maxRedialPause = 5 * time.Second
	probeEvery     = time.Second
	probeWait      = time.Second
)

// newTracker returns the tracker of the marks and sessions under prefix,
// its table of sessions holding about tableBytes (none unless positive),
// and starts keeping them fresh over c; close stops it.
func newTracker(c rueidis.Client, prefix string, ttl time.Duration, tableBytes int) *tracker {
	ctx, cancel := context.WithCancel(context.Background())
	t := &tracker{
		prefix:   prefix + "logoutmark:{",
		probe:    prefix + "logoutprobe:{" + rand.Text() + "}",
		sessions: newSessionTable(prefix+"session:{", tableBytes),
		ttl:      ttl,
		cancel:   cancel,
		done:     make(chan struct{}),
	}
	go t.track(ctx, c)
	return t
}

// mark returns bucket b's mark if the table holds it: ok is false if it
// does not, and the mark must be read.
func (t *tracker) mark(b int) (at int64, ok bool) {
	if t == nil {
		return 0, false
	}
	e := t.entries[b].Load()
	if e == nil || !time.Now().Before(e.until) {
		return 0, false
	}
	return e.at, true
}

// readMark reads bucket b's mark from the server on the tracking connection
// and stores it: ok is false if the table is not tracking, or the read
// failed, and the mark must be read otherwise.
func (t *tracker) readMark(ctx context.Context, b int) (at int64, ok bool) {
	if t == nil || !t.live.Load() {
		return 0, false
	}
	t.mu.Lock()
	r, refused := markRead{conn: t.conn, gen: t.gens[b]}, t.refused
	t.mu.Unlock()
	if r.conn == nil {
		return 0, false
	}
	v, err := r.conn.Do(ctx, r.conn.B().Get().Key(t.key(b)).Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err):
		at = noMark
	case err != nil:
		refuse(refused, err)
		return 0, false
	default:
		at = parseMark(v)
	}
	t.putMark(b, r, at)
	return at, true
}

// refuse tells the tracker on refused that the server sent a read on its
// connection elsewhere (a Valkey replica's REDIRECT, say): the connection
// is on a server that does not serve the Store's reads, and is dialled
// again. Other errors (BUSY, a key of the wrong type) fail only the read.
func refuse(refused chan<- struct{}, err error) {
	e, ok := rueidis.IsRedisErr(err)
	if !ok {
		return
	}
	_, redirect := e.IsRedirect()
	_, moved := e.IsMoved()
	if redirect || moved {
		select {
		case refused <- struct{}{}:
		default:
		}
	}
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

// putMark stores bucket b's mark at, read under r, unless the mark changed
// or tracking started or stopped since r.
func (t *tracker) putMark(b int, r markRead, at int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gens[b] == r.gen {
		t.entries[b].Store(&markEntry{at: at, until: time.Now().Add(t.ttl)})
	}
}

// forgetMark drops bucket b's mark, and keeps a read begun before from
// storing it: this process changed the mark, or the server said it changed.
func (t *tracker) forgetMark(b int) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gens[b]++
	t.entries[b].Store(nil)
}

// setConn makes conn, whose CLIENT ID is id, the tracking connection (nil
// when tracking stops), and drops every mark and session; a read that the
// server sends elsewhere is told on refused (see refuse).
func (t *tracker) setConn(conn rueidis.DedicatedClient, id int64, refused chan<- struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.conn, t.id, t.refused = conn, id, refused
	t.live.Store(conn != nil)
	t.forgetAllLocked()
}

func (t *tracker) forgetAllLocked() {
	t.sessions.forgetAll()
	for b := range t.entries {
		t.gens[b]++
		t.entries[b].Store(nil)
	}
}

// invalidated takes the server's invalidation messages: the keys that
// changed, or nil when every key may have (a FLUSHALL, or the connection
// closing). It reports whether the probe was among them.
func (t *tracker) invalidated(keys []rueidis.RedisMessage) (probed bool) {
	if keys == nil {
		t.mu.Lock()
		t.forgetAllLocked()
		t.mu.Unlock()
		return false
	}
	for _, k := range keys {
		if key, err := k.ToString(); err == nil {
			probed = t.forgetKey(key) || probed
		}
	}
	return probed
}

// forgetKey drops the mark or the session whose key is key, if it is a
// mark's or a session's, and reports whether it is the probe's.
func (t *tracker) forgetKey(key string) (probe bool) {
	if key == t.probe {
		return true
	}
	n, ok := strings.CutPrefix(key, t.prefix)
	if !ok {
		if t.sessions.share > 0 && strings.HasPrefix(key, t.sessions.prefix) && !t.deaf.Load() {
			t.forgetSession(recordOf(key))
		}
		return false
	}
	if b, err := strconv.Atoi(strings.TrimSuffix(n, "}")); err == nil && b >= 0 && b < logoutBuckets {
		t.forgetMark(b)
	}
	return false
}

// key is the key of bucket b's mark.
func (t *tracker) key(b int) string { return t.prefix + itoa(b) + "}" }

// track keeps a connection tracking the marks and sessions until ctx ends,
// dialling it again when it breaks. It gives up, leaving the tables empty,
// with a client without client-side caching, when the server refuses to
// track, when no connection has heard a probe yet and one goes unheard,
// and when the client is closed.
func (t *tracker) track(ctx context.Context, c rueidis.Client) {
	defer close(t.done)
	heardOnce := false
	pause := minRedialPause
	for first := true; ; first = false {
		t.mu.Lock()
		hook := t.redialHook
		t.mu.Unlock()
		if !first && hook != nil {
			hook()
		}
		began := time.Now()
		err := t.caching(ctx, c)
		if err == nil {
			err = t.serve(ctx, c, &heardOnce)
		}
		if ctx.Err() != nil || errors.Is(err, rueidis.ErrClosing) || errors.Is(err, errCannotTrack) {
			return
		}
		if time.Since(began) > maxRedialPause {
			pause = minRedialPause // it had been up a while: not a connection refused at once
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return
		}
		pause = min(2*pause, maxRedialPause)
	}
}

// errCannotTrack is a server, or a client, with which the table cannot be
// kept fresh.
var errCannotTrack = errors.New("rueidisbackend: the logout marks and sessions cannot be tracked")

// setupErr is err from a command that sets up the tracking connection: a
// refusal other than a busy or loading server is errCannotTrack.
func setupErr(err error) error {
	if e, ok := rueidis.IsRedisErr(err); ok && !e.IsLoading() && !strings.HasPrefix(e.Error(), "BUSY") {
		return errCannotTrack
	}
	return err
}

// caching checks that c caches: with DisableCache its connections track
// nothing, and the Store reads from the server.
func (t *tracker) caching(ctx context.Context, c rueidis.Client) error {
	info, err := c.Do(ctx, c.B().ClientTrackinginfo().Build()).AsMap()
	if err != nil {
		return setupErr(err)
	}
	flags := info["flags"]
	if f, err := flags.AsStrSlice(); err != nil || len(f) == 0 || f[0] == "off" {
		return errCannotTrack
	}
	return nil
}

// serve dials a connection, makes it track the marks, the sessions and
// its probe, and serves the tables from it until it breaks, a probe goes
// unheard, a read is refused or ctx ends.
func (t *tracker) serve(ctx context.Context, c rueidis.Client, heardOnce *bool) error {
	conn, _ := c.Dedicate()
	defer conn.Close()           // its tracking must not go back to the pool
	defer t.setConn(nil, 0, nil) // first: closing waits for the connection
	heard := make(chan struct{}, 1)
	broken := conn.SetOnInvalidations(func(keys []rueidis.RedisMessage) {
		if t.invalidated(keys) {
			select {
			case heard <- struct{}{}:
			default:
			}
		}
	})
	prefixes := conn.B().ClientTracking().On().Prefix().Prefix(t.prefix).Prefix(t.probe)
	if t.sessions.share > 0 {
		prefixes = prefixes.Prefix(t.sessions.prefix)
	}
	for _, cmd := range []rueidis.Completed{
		conn.B().ClientSetname().ConnectionName("retail-tracker").Build(),
		conn.B().ClientTracking().Off().Build(), // rueidis turns it on for caching, in another mode
		prefixes.Bcast().Build(),
	} {
		if err := conn.Do(ctx, cmd).Error(); err != nil {
			return setupErr(err)
		}
	}
	id, err := conn.Do(ctx, conn.B().ClientId().Build()).AsInt64()
	if err != nil {
		return setupErr(err)
	}
	refused := make(chan struct{}, 1)
	for serving := false; ; {
		switch err := t.probeHeard(ctx, c, heard); {
		case errors.Is(err, errUnheard) && !*heardOnce:
			return errCannotTrack // a proxy that drops the messages
		case errors.Is(err, errUnheard), err != nil && !serving, errors.Is(err, rueidis.ErrClosing), ctx.Err() != nil:
			return err
		case err != nil:
			// The server took no write from the client, whose connection
			// stalled or broke: as the client-side cache goes on serving
			// while its connection lives, the table goes on while the
			// tracking connection does (rueidis closes a silent one).
		case !serving:
			*heardOnce, serving = true, true
			t.setConn(conn, id, refused)
		}
		select {
		case <-broken:
			return nil
		case <-refused: // a replica that redirects reads, say
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(probeEvery):
		}
	}
}

// errUnheard is a probe the connection did not hear of.
var errUnheard = errors.New("rueidisbackend: the tracking connection did not hear its probe")

// probeHeard writes the probe key through c, and deletes it, within
// probeWait, and waits for the tracking connection to hear of it (on
// heard) for probeWait more at most.
func (t *tracker) probeHeard(ctx context.Context, c rueidis.Client, heard <-chan struct{}) error {
	select {
	case <-heard: // of an earlier probe that the server took late
	default:
	}
	wctx, cancel := context.WithTimeout(ctx, probeWait)
	defer cancel()
	if err := probe.Exec(wctx, c, []string{t.probe}, nil).Error(); err != nil {
		return err
	}
	wait := time.NewTimer(probeWait)
	defer wait.Stop()
	select {
	case <-heard:
		return nil
	case <-wait.C:
		return errUnheard
	case <-ctx.Done():
		return ctx.Err()
	}
}

// probe writes its key and deletes it in one step, so that it is never
// seen.
var probe = rueidis.NewLuaScript(`redis.call('SET', KEYS[1], '1') return redis.call('DEL', KEYS[1])`)

// close stops the tracker, which closes its connection once it can (at
// once, unless it waits for a connection from a full pool).
func (t *tracker) close() {
	if t != nil {
		t.cancel()
	}
}
