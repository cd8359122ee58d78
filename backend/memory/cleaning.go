package memory

import (
	"cmp"
	"container/heap"
	"context"
)

// cleanChunk bounds the work (sessions removed or settled) of one chunk of
// a pass: what it does while it holds every session shard.
const cleanChunk = 1024

// CleanSessions implements driver.Store. A pass removes the least recently
// seen sessions of all shards, merging the shards' byAge lists (see
// byOldest): first the sessions that expired by the idle timeout (they are
// the oldest), then the oldest while more than keep remain.
//
// The order spans the shards, so the pass locks them all, in chunks so that
// requests are not held up behind a long pass. Before each chunk it settles
// the lists one shard at a time, so that little is left to settle while it
// holds them all. The shards' seqs when the first chunk locks them mark the
// pass's start: a session seen later has a higher seq than its shard had
// then, and the pass stops when it reaches one. Between chunks sessions may
// be refreshed, and so leave the pass's reach, or dropped, but those the
// pass may remove keep their order.
//
// Sessions that expired by their lifetime but not by the idle timeout are
// not removed early: no call can refresh them, so they become idle-expired
// within the idle timeout.
func (s *store) CleanSessions(ctx context.Context, keep, max int) (int, error) {
	now := s.now()
	s.pruneLoggedOut(now)
	removed := 0
	var began [shardCount]uint64 // each shard's seq when the pass began
	for first := true; removed < max; first = false {
		if !first {
			if err := ctx.Err(); err != nil {
				return removed, err
			}
		}
		s.settleShards()
		s.lockShards()
		if first {
			for i := range s.shards {
				began[i] = s.shards[i].seq
			}
		}
		oldest := s.byOldest()
		more := false // whether the chunk ended at cleanChunk, the pass unfinished
		for work := 0; removed < max && len(oldest) > 0; {
			if work >= cleanChunk {
				more = true
				break
			}
			sh := oldest[0]
			x := sh.byAge.oldest
			if x.seq > began[sh.index] || (now < x.lastSeen+s.idle && s.count.Load() <= int64(keep)) {
				break
			}
			s.dropSession(sh, x)
			removed++
			work += 1 + sh.byAge.settle()
			if sh.byAge.oldest == nil {
				heap.Pop(&oldest)
			} else {
				heap.Fix(&oldest, 0)
			}
		}
		s.unlockShards()
		if !more {
			break
		}
	}
	return removed, nil
}

// settleShards settles each shard's byAge list, locking one shard at a
// time.
func (s *store) settleShards() {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.byAge.settle()
		sh.mu.Unlock()
	}
}

// byOldest is a heap of session shards by their oldest session, so that its
// first shard holds the least recently seen session of all, once every
// list is settled. Sessions last seen in the same millisecond are equally
// old by the Store's clock: a shard's list keeps them in the order they
// were seen, and the heap takes them by seq, then shard. Each shard counts
// its own seqs, but shards see sessions at much the same rate, so that
// interleaves the shards' sessions much as they were seen.
type byOldest []*sessionShard

// byOldest settles the lists of the shards that hold sessions and returns
// their heap. Every session shard must be locked.
func (s *store) byOldest() byOldest {
	h := make(byOldest, 0, shardCount)
	for i := range s.shards {
		sh := &s.shards[i]
		if sh.byAge.oldest != nil {
			sh.byAge.settle()
			h = append(h, sh)
		}
	}
	heap.Init(&h)
	return h
}

func (h byOldest) Len() int { return len(h) }

func (h byOldest) Less(i, j int) bool {
	a, b := h[i].byAge.oldest, h[j].byAge.oldest
	return cmp.Or(cmp.Compare(a.lastSeen, b.lastSeen), cmp.Compare(a.seq, b.seq), cmp.Compare(h[i].index, h[j].index)) < 0
}

func (h byOldest) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *byOldest) Push(sh any) { *h = append(*h, sh.(*sessionShard)) }

func (h *byOldest) Pop() any {
	old := *h
	sh := old[len(old)-1]
	*h = old[:len(old)-1]
	return sh
}

// pruneLoggedOut forgets the LogoutUser instants that end nothing more: a
// session logged in at or before one lifetime ago has expired whatever it
// records.
func (s *store) pruneLoggedOut(now int64) {
	if !s.anyLoggedOut.Load() {
		return
	}
	s.loggedOut.Range(func(user, at any) bool {
		if at.(int64)+s.lifetime <= now {
			s.loggedOut.CompareAndDelete(user, at)
		}
		return true
	})
}
