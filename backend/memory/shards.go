package memory

import (
	"hash/maphash"
	"sync"
)

// shardCount is how many shards the sessions, the index by user and the view
// counters are each split into: enough that callers running on different
// CPUs seldom want the same lock, few enough that the rare call that locks
// every session shard (a cleaning pass, UserSessions, LogoutUser) stays
// cheap. A power of two, so that a hash picks a shard with a mask.
const shardCount = 64

// shardOf picks the shard of key (a token, user or item name).
func shardOf(seed maphash.Seed, key string) int {
	return int(maphash.String(seed, key) & (shardCount - 1))
}

// cacheLinePad keeps the locks of neighbouring shards on separate cache
// lines, so that CPUs working on different shards do not slow each other.
type cacheLinePad [64]byte

// A sessionShard holds the sessions whose tokens hash to it, and orders them
// by last-seen time. Its lock guards the map, the list and everything in
// the sessions it holds except their links among a user's sessions (see
// users.go).
type sessionShard struct {
	mu       sync.Mutex
	sessions map[string]*session
	byAge    sessionList // oldest first
	seq      uint64      // bumped by every change of a last-seen time in the shard
	index    int         // in store.shards
	_        cacheLinePad
}

// see sets x's last-seen time to now and gives it the shard's next seq,
// which orders it after every session seen in the shard before, and out of
// reach of the cleaning passes that began before. If x is in byAge, it is
// marked moved there.
func (sh *sessionShard) see(x *session, now int64) {
	x.lastSeen = max(x.lastSeen, now) // a call that read the clock earlier may come second
	sh.seq++
	x.seq = sh.seq
	x.moved = true
}

func (sh *sessionShard) add(x *session) {
	sh.sessions[x.token] = x
	sh.byAge.insert(x)
}

func (sh *sessionShard) remove(x *session) {
	delete(sh.sessions, x.token)
	sh.byAge.remove(x)
}

// shard returns the shard that holds token's session, if there is one.
func (s *store) shard(token string) *sessionShard {
	return &s.shards[shardOf(s.seed, token)]
}

// lockShards locks every session shard, in index order, so no session
// changes until unlockShards. Every call on sessions waits meanwhile, so it
// is kept for those that need all sessions at one moment: cleaning, whose
// order spans the shards, and the calls on all of a user's sessions, which
// may be in any shard.
func (s *store) lockShards() {
	for i := range s.shards {
		s.shards[i].mu.Lock()
	}
}

func (s *store) unlockShards() {
	for i := range s.shards {
		s.shards[i].mu.Unlock()
	}
}
