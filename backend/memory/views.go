package memory

import (
	"context"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/retailkit/retail/driver"
)

// viewCounts counts views without one lock for all of them. A view adds one
// to its item's pending count, in the shard the item's name hashes to; the
// next call that reads ranks (ItemRank, TopItems, RescaleViews) first moves
// every pending count into the rank tree, in one batch under the tree's
// lock. So a read sees every view counted before it began, as if each view
// had gone into the tree at once; counting a view costs a map lookup under
// a lock few others want; and the tree changes once per item a batch,
// however many views the item got.
type viewCounts struct {
	seed    maphash.Seed // picks the shard of an item
	pending atomic.Bool  // set when a shard gets pending views (see read)
	_       cacheLinePad
	shards  [shardCount]viewShard

	mu    sync.RWMutex // guards ranks, batch and every counter's key and ranked
	ranks rankTree
	batch []pendingViews // reused by each flush
}

// A viewShard holds the counters of the items that hash to it. Its lock
// guards the map, dirty and every counter's pending views; it is taken
// after viewCounts.mu by the calls that hold both.
type viewShard struct {
	mu       sync.Mutex
	counters map[string]*viewCounter
	dirty    []*viewCounter // the counters with pending views
	hasDirty atomic.Bool    // whether dirty is not empty; read without mu
	_        cacheLinePad
}

// A viewCounter is an item's views: those in the rank tree, and those
// counted since.
type viewCounter struct {
	item    string  // the Store's copy of the name
	pending int     // views not yet in the tree
	key     rankKey // the item's place in the tree, if ranked
	ranked  bool
}

// pendingViews is n views of a counter's item, on their way into the tree.
type pendingViews struct {
	counter *viewCounter
	n       int
}

func (v *viewCounts) init() {
	v.seed = maphash.MakeSeed()
	for i := range v.shards {
		v.shards[i].counters = make(map[string]*viewCounter)
	}
}

func (v *viewCounts) shard(item string) *viewShard {
	return &v.shards[shardOf(v.seed, item)]
}

// count counts n views of item and returns the Store's copy of the item's
// name.
func (v *viewCounts) count(item string, n int) string {
	sh := v.shard(item)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	c := sh.counters[item]
	if c == nil {
		c = &viewCounter{item: strings.Clone(item)}
		sh.counters[c.item] = c
	}
	if c.pending == 0 {
		sh.dirty = append(sh.dirty, c)
		if len(sh.dirty) == 1 {
			sh.hasDirty.Store(true)
			v.pending.Store(true)
		}
	}
	c.pending += n
	return c.item
}

// name returns the Store's copy of item's name if it has one, or a new
// copy: a name the Store may keep.
func (v *viewCounts) name(item string) string {
	if c := v.counter(item); c != nil {
		return c.item
	}
	return strings.Clone(item)
}

// counter returns item's counter, or nil if it has none.
func (v *viewCounts) counter(item string) *viewCounter {
	sh := v.shard(item)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.counters[item]
}

// read calls f with the tree holding every view counted before read was
// called, under the tree's lock: the write lock if there were views to move
// into it, the read lock otherwise.
//
// The pending flag makes the common case, nothing to move, cost one load.
// A view that makes a shard dirty sets it after the shard's flag; a flush
// clears it before it looks at the shards, under the write lock. So if read
// finds it clear, every view counted before is in the tree, or in the hands
// of the flush that cleared it, whose lock read then waits for.
func (v *viewCounts) read(f func()) {
	if !v.pending.Load() {
		v.mu.RLock()
		defer v.mu.RUnlock()
		f()
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.flush()
	f()
}

// flush moves the pending views of every shard into the tree. v.mu must be
// held for writing. Each shard is locked only while its views are taken,
// not while the tree changes.
func (v *viewCounts) flush() {
	v.pending.Store(false)
	for i := range v.shards {
		sh := &v.shards[i]
		if sh.hasDirty.Load() {
			sh.mu.Lock()
			v.take(sh)
			sh.mu.Unlock()
		}
	}
	v.apply()
}

// take moves sh's pending views to the batch. v.mu must be held for writing
// and sh.mu held.
func (v *viewCounts) take(sh *viewShard) {
	for _, c := range sh.dirty {
		v.batch = append(v.batch, pendingViews{c, c.pending})
		c.pending = 0
	}
	clear(sh.dirty)
	sh.dirty = sh.dirty[:0]
	sh.hasDirty.Store(false)
}

// apply adds the batch to the tree and empties it. v.mu must be held for
// writing.
func (v *viewCounts) apply() {
	for _, p := range v.batch {
		c := p.counter
		views := addViews(c.key.views, p.n)
		if c.ranked {
			v.ranks.change(c.key, views)
			c.key.views = views
		} else {
			c.key = newRankKey(c.item, views)
			c.ranked = true
			v.ranks.insert(c.key)
		}
	}
	clear(v.batch)
	v.batch = v.batch[:0]
}

// addViews returns views plus n, added one at a time, as n views counted
// one by one would add them: once a rescale has made views fractional,
// adding n at once may round differently.
func addViews(views float64, n int) float64 {
	for range n {
		views++
	}
	return views
}

// rank returns item's rank, or ok == false if it has none.
func (v *viewCounts) rank(item string) (rank int, ok bool) {
	v.read(func() {
		// A counter not ranked yet was made by a view counted after read
		// began.
		if c := v.counter(item); c != nil && c.ranked {
			rank, ok = v.ranks.rank(c.key), true
		}
	})
	return rank, ok
}

// top returns the n most viewed items.
func (v *viewCounts) top(n int) []driver.ItemViews {
	var top []driver.ItemViews
	v.read(func() {
		top = make([]driver.ItemViews, 0, min(n, v.ranks.len()))
		v.ranks.ascend(func(k *rankKey) bool {
			if len(top) == n {
				return false
			}
			top = append(top, driver.ItemViews{Item: k.item, Views: k.views})
			return true
		})
	})
	return top
}

// rescale keeps the keep most viewed items and multiplies their views by
// factor. It holds every shard as well as the tree, so no view is counted
// meanwhile: each is counted before the rescale, and scaled, or after it,
// on a counter that the rescale did not drop.
func (v *viewCounts) rescale(keep int, factor float64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.pending.Store(false)
	for i := range v.shards {
		v.shards[i].mu.Lock()
		v.take(&v.shards[i])
	}
	v.apply()
	v.ranks.truncate(keep, func(k *rankKey) { delete(v.shard(k.item).counters, k.item) })
	if factor != 1 {
		v.ranks.scale(factor)
		for i := range v.shards {
			for _, c := range v.shards[i].counters {
				c.key.views *= factor
			}
		}
	}
	for i := range v.shards {
		v.shards[i].mu.Unlock()
	}
}

// CountViews implements driver.Store. It never fails, so it counts every
// flush once without looking at its name.
func (s *store) CountViews(ctx context.Context, _ driver.ViewFlush, views []driver.ItemViews) error {
	for _, v := range views {
		s.views.count(v.Item, int(v.Views))
	}
	return nil
}

// ItemRank implements driver.Store.
func (s *store) ItemRank(ctx context.Context, item string) (int, bool, error) {
	rank, ok := s.views.rank(item)
	return rank, ok, nil
}

// TopItems implements driver.Store.
func (s *store) TopItems(ctx context.Context, n int) ([]driver.ItemViews, error) {
	return s.views.top(n), nil
}

// RescaleViews implements driver.Store.
func (s *store) RescaleViews(ctx context.Context, keep int, factor float64) error {
	s.views.rescale(keep, factor)
	return nil
}
