package retail

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// rankSnapshots holds the ranks of the most viewed items as one TopItems
// call read them, so that deciding whether an item's page may be cached
// costs the Store nothing (see PageCacheOptions.RankEvery). One refresh
// runs at a time, in the background, once the ranks are RankEvery old;
// until the first read the decision waits for it.
type rankSnapshots struct {
	cur        atomic.Pointer[rankSnapshot]
	first      chan struct{} // holds a token while the first snapshot is read (one slot)
	refreshing atomic.Bool
}

type rankSnapshot struct {
	ranks map[string]int // item -> rank, for the MaxRank most viewed
	taken time.Time      // by the system's clock
}

// rank answers ItemRank's question from the snapshot. An item outside a
// full snapshot (MaxRank items) ranks at MaxRank or below, which is all the
// book's rule asks; outside one that is not full, it may have been viewed
// since, and the Store is asked.
func (c *PageCache) rank(ctx context.Context, item string) (int, bool, error) {
	snap, err := c.ranks.get(ctx, c)
	if err != nil {
		return 0, false, err
	}
	if rank, ok := snap.ranks[item]; ok {
		return rank, true, nil
	}
	if len(snap.ranks) < c.opts.MaxRank {
		return c.store.ItemRank(ctx, item)
	}
	return c.opts.MaxRank, true, nil
}

// get returns the current snapshot, reading the first one, and starts a
// refresh in the background if it is RankEvery old. A call that waits for
// another's read of the first snapshot gives up when its ctx ends.
func (r *rankSnapshots) get(ctx context.Context, c *PageCache) (*rankSnapshot, error) {
	snap := r.cur.Load()
	if snap == nil {
		select {
		case r.first <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("retail: PageCache: %w", ctx.Err())
		}
		defer func() { <-r.first }()
		if snap = r.cur.Load(); snap == nil {
			var err error
			if snap, err = readRanks(ctx, c); err != nil {
				return nil, err
			}
			r.cur.Store(snap)
		}
		return snap, nil
	}
	if time.Since(snap.taken) >= c.opts.RankEvery && r.refreshing.CompareAndSwap(false, true) {
		go func() {
			defer r.refreshing.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
			defer cancel()
			if fresh, err := readRanks(ctx, c); err == nil {
				r.cur.Store(fresh)
			} else {
				// Decide by the old ranks until the next try, a window later.
				r.cur.Store(&rankSnapshot{ranks: snap.ranks, taken: time.Now()})
			}
		}()
	}
	return snap, nil
}

// readRanks reads the ranks of the MaxRank most viewed items.
func readRanks(ctx context.Context, c *PageCache) (*rankSnapshot, error) {
	taken := time.Now()
	top, err := c.store.TopItems(ctx, c.opts.MaxRank)
	if err != nil {
		return nil, err
	}
	ranks := make(map[string]int, len(top))
	for i, iv := range top {
		ranks[iv.Item] = i
	}
	return &rankSnapshot{ranks: ranks, taken: taken}, nil
}
