package retail_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retailkit/retail"
)

// rankCountingStore counts the calls a PageCache makes to decide.
type rankCountingStore struct {
	retail.Store
	itemRanks, topItems atomic.Int64
}

func (s *rankCountingStore) ItemRank(ctx context.Context, item string) (int, bool, error) {
	s.itemRanks.Add(1)
	return s.Store.ItemRank(ctx, item)
}

func (s *rankCountingStore) TopItems(ctx context.Context, n int) ([]retail.ItemViews, error) {
	s.topItems.Add(1)
	return s.Store.TopItems(ctx, n)
}

func viewTimes(t *testing.T, s retail.Store, item string, n int) {
	t.Helper()
	for range n {
		if err := s.CountView(t.Context(), item); err != nil {
			t.Fatal(err)
		}
	}
}

func wantCanCache(t *testing.T, c *retail.PageCache, item string, want bool) {
	t.Helper()
	ok, err := c.CanCache(t.Context(), mustParse(t, "http://test.com/item?item="+item))
	if ok != want || err != nil {
		t.Errorf("CanCache(%s) = %v, %v, want %v, nil", item, ok, err, want)
	}
}

// A page cache decides by a snapshot of the top items: after the first
// read, deciding costs the Store no call, for items in it and, once it is
// full, for items outside it.
func TestPageCache_DecidesByASnapshotOfTheRanks(t *testing.T) {
	ms, _ := newStore(t)
	s := &rankCountingStore{Store: ms}
	viewTimes(t, s, "a", 3)
	viewTimes(t, s, "b", 2)
	viewTimes(t, s, "c", 1)
	c := newPageCache(t, s, retail.PageCacheOptions{MaxRank: 2, RankEvery: time.Hour})
	for range 100 {
		wantCanCache(t, c, "a", true)
		wantCanCache(t, c, "b", true)
		wantCanCache(t, c, "c", false) // rank 2
		wantCanCache(t, c, "never-viewed", false)
	}
	if n, m := s.topItems.Load(), s.itemRanks.Load(); n != 1 || m != 0 {
		t.Errorf("400 decisions made %d TopItems and %d ItemRank calls, want 1 and 0", n, m)
	}
}

// Outside a snapshot that is not full, an item may have been viewed since
// it was read: the Store is asked.
func TestPageCache_AsksTheStoreForAnItemOutsideASnapshotNotFull(t *testing.T) {
	ms, _ := newStore(t)
	s := &rankCountingStore{Store: ms}
	viewTimes(t, s, "a", 1)
	c := newPageCache(t, s, retail.PageCacheOptions{RankEvery: time.Hour})
	wantCanCache(t, c, "a", true)
	wantCanCache(t, c, "new", false)
	viewTimes(t, s, "new", 1)
	wantCanCache(t, c, "new", true)
	if n, m := s.topItems.Load(), s.itemRanks.Load(); n != 1 || m != 2 {
		t.Errorf("%d TopItems and %d ItemRank calls, want 1 and 2", n, m)
	}
}

// The snapshot is read again once it is RankEvery old: the decision that
// finds it so still uses it, and starts the read in the background. The
// test runs in a bubble, whose fake clock the snapshots read, so that
// synctest.Wait tells when the background read is done.
func TestPageCache_ReadsTheRanksAgainEveryRankEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms, _ := newStore(t)
		s := &rankCountingStore{Store: ms}
		viewTimes(t, s, "a", 3)
		viewTimes(t, s, "b", 2)
		c := newPageCache(t, s, retail.PageCacheOptions{MaxRank: 1, RankEvery: time.Minute})
		wantCanCache(t, c, "b", false)
		viewTimes(t, s, "b", 5)

		time.Sleep(time.Minute - time.Nanosecond)
		wantCanCache(t, c, "b", false)
		synctest.Wait()
		if n := s.topItems.Load(); n != 1 {
			t.Errorf("%d TopItems calls before the snapshot is RankEvery old, want 1", n)
		}

		time.Sleep(time.Nanosecond)
		wantCanCache(t, c, "b", false) // the old snapshot, which starts a read
		synctest.Wait()
		wantCanCache(t, c, "b", true)
		wantCanCache(t, c, "a", false)
		if n := s.topItems.Load(); n != 2 {
			t.Errorf("%d TopItems calls once the snapshot was RankEvery old, want 2", n)
		}
	})
}

// The package's CacheRequest makes a PageCache for one call: it asks the
// Store for the item's rank, as the book does, rather than read a snapshot
// of the top items for one decision.
func TestCacheRequest_AsksItemRankNotTopItems(t *testing.T) {
	ms, _ := newStore(t)
	s := &rankCountingStore{Store: ms}
	viewTimes(t, s, "a", 1)
	render := func(context.Context) ([]byte, error) { return []byte("page"), nil }
	for range 3 {
		if _, _, err := retail.CacheRequest(t.Context(), s, mustParse(t, "http://test.com/item?item=a"), render); err != nil {
			t.Fatal(err)
		}
	}
	if n, m := s.topItems.Load(), s.itemRanks.Load(); n != 0 || m != 3 {
		t.Errorf("3 calls made %d TopItems and %d ItemRank calls, want 0 and 3", n, m)
	}
}
