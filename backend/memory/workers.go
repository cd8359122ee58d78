package memory

import (
	"context"
	"sync"
	"time"
)

// This file holds what the retail package's workers and Stats ask of every
// driver: turns (Claim), repairs (RepairSessions) and the client cache's
// counts (CacheCounts). The memory Store's data lives in its process, so
// its workers do too, and each call writes at once.

// claims are the turns claimed over the Store: the latest turn of each work.
// A claim is kept until a later turn replaces it, which is longer than any
// hold, and costs one entry a work.
type claims struct {
	mu   sync.Mutex
	last map[string]claim // by the work's name
}

type claim struct {
	turn  int64
	owner string
}

// Claim implements driver.Store in process memory: the workers that share
// the Store are the goroutines of its process.
func (s *store) Claim(_ context.Context, name, owner string, turn int64, _ time.Duration) (bool, error) {
	c := &s.claims
	c.mu.Lock()
	defer c.mu.Unlock()
	if last, ok := c.last[name]; ok && last.turn >= turn {
		return last == claim{turn, owner}, nil
	}
	if c.last == nil {
		c.last = map[string]claim{}
	}
	c.last[name] = claim{turn, owner}
	return true, nil
}

// RepairSessions implements driver.Store: every call writes a session and
// its index entries in one step, under their locks, so nothing can part
// them and there is never anything to repair.
func (s *store) RepairSessions(context.Context) (int, error) { return 0, nil }

// CacheCounts implements driver.Store: every read is served from the data
// itself, with no cache in front of it to hit or miss.
func (s *store) CacheCounts() (hits, misses uint64) { return 0, 0 }
