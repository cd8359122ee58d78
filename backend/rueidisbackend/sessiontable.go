package rueidisbackend

import (
	"context"
	"sync"
	"time"
)

// On a single server the tracker (see tracker.go) keeps the sessions' logins
// and recent items decoded too, the part of a session that CheckToken and
// RefreshSession read on every page view. Read through the client-side
// cache, a session costs a lookup in rueidis's cache and a parse, about
// two thirds of a cached CheckToken's CPU over 200,000 sessions; from the
// table, a map lookup (see docs/performance.md).
//
// The tracker's connection hears of every change of a session key, as of
// a mark, and the table forgets the session it names. A session the table
// does not hold is read from the server on that connection and stored,
// unless its shard heard of a change meanwhile (gen). This process's own
// writes forget the session when they return, before the server's message
// comes, so that its reads read its writes. While the tracker does not
// serve, the table holds nothing and sessions are read through the
// client-side cache. Sessions that are absent are not stored: a flood of
// made-up tokens costs a round trip each and fills nothing.
//
// The table holds about Options.SessionTableBytes; past that, storing a
// session drops others of its shard at random.

// sessionTable holds the decoded sessions of a Store on a single server.
type sessionTable struct {
	prefix string // of the sessions' keys
	share  int    // the bytes a shard may hold; 0: the table holds nothing
	shards [sessionShards]sessionShard
}

// newSessionTable returns a table of the sessions whose keys start with
// prefix that holds about bytes (one session a shard at least), or nothing
// if bytes is not positive.
func newSessionTable(prefix string, bytes int) sessionTable {
	return sessionTable{prefix: prefix, share: (max(bytes, 0) + sessionShards - 1) / sessionShards}
}

const (
	sessionShards = 256
	// sessionEntryBytes is about what an entry costs besides its strings'
	// bytes (the login's, which user and cstamp keep whole, and the recent
	// items'): the map's slot and its share of a map that deletes have
	// grown (measured: up to 410 B a session with a short login and no
	// recent items).
	sessionEntryBytes = 360
)

type sessionShard struct {
	mu sync.RWMutex
	// gen counts the changes of the shard's sessions heard of or made by
	// this process, and the flushes: a session read before it moved is not
	// stored.
	gen   uint64
	bytes int
	m     map[record]sessionEntry
}

// sessionEntry is a session as the table holds it.
type sessionEntry struct {
	l      login
	recent string
	until  time.Time // when it stops being served
	bytes  int       // about what it costs in memory
}

func (t *sessionTable) shard(r record) *sessionShard {
	return &t.shards[r.b%sessionShards]
}

// session returns the session whose key r names if the table holds it.
func (t *tracker) session(r record) (sessionEntry, bool) {
	if t == nil || t.sessions.share == 0 || !t.live.Load() {
		return sessionEntry{}, false
	}
	sh := t.sessions.shard(r)
	sh.mu.RLock()
	e, ok := sh.m[r]
	sh.mu.RUnlock()
	if !ok || !time.Now().Before(e.until) {
		return sessionEntry{}, false
	}
	return e, true
}

// readSession reads the session in key, which r names, from the server on
// the tracking connection, and stores it if its shard heard of no change
// meanwhile: found is false if there is no session, ok is false if the
// table is off or not tracking, or the read failed, and the session must be
// read otherwise.
func (t *tracker) readSession(ctx context.Context, key string, r record) (e sessionEntry, found, ok bool, err error) {
	if t == nil || t.sessions.share == 0 || !t.live.Load() {
		return sessionEntry{}, false, false, nil
	}
	sh := t.sessions.shard(r)
	t.mu.Lock()
	conn, refused := t.conn, t.refused
	sh.mu.RLock()
	gen := sh.gen
	sh.mu.RUnlock()
	t.mu.Unlock()
	if conn == nil {
		return sessionEntry{}, false, false, nil
	}
	f, err := conn.Do(ctx, conn.B().Hmget().Key(key).Field("login", "recent").Build()).ToArray()
	if err == nil && len(f) != 2 {
		err = errShortReply
	}
	if err != nil {
		if ctx.Err() != nil {
			return sessionEntry{}, false, true, ctx.Err()
		}
		refuse(refused, err)
		return sessionEntry{}, false, false, nil
	}
	if e, found, err = sessionEntryOf(f); !found || err != nil {
		return sessionEntry{}, false, true, err
	}
	e.until = time.Now().Add(t.ttl)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.gen == gen {
		sh.put(r, e, t.sessions.share)
	}
	return e, true, true, nil
}

// put stores e under r, dropping other entries at random while the shard
// holds more than share bytes.
func (sh *sessionShard) put(r record, e sessionEntry, share int) {
	if sh.m == nil {
		sh.m = make(map[record]sessionEntry)
	}
	if old, ok := sh.m[r]; ok {
		sh.bytes -= old.bytes
	}
	sh.m[r] = e
	sh.bytes += e.bytes
	for k, old := range sh.m { // a map's order is random
		if sh.bytes <= share {
			break
		}
		if k != r {
			delete(sh.m, k)
			sh.bytes -= old.bytes
		}
	}
}

// forgetSession drops the session r names, and keeps a read begun before
// from storing it: this process changed the session, or the server said
// it changed.
func (t *tracker) forgetSession(r record) {
	if t == nil || t.sessions.share == 0 {
		return
	}
	sh := t.sessions.shard(r)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.gen++
	if old, ok := sh.m[r]; ok {
		delete(sh.m, r)
		sh.bytes -= old.bytes
	}
}

// forgetAll drops every session, and keeps every read begun before from
// storing one.
func (t *sessionTable) forgetAll() {
	if t.share == 0 {
		return
	}
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		sh.gen++
		clear(sh.m)
		sh.bytes = 0
		sh.mu.Unlock()
	}
}
