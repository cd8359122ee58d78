package memory

import (
	"context"
	"strings"

	"github.com/retailkit/retail/driver"
)

// countView counts one view of item and returns the Store's copy of the
// item's name.
func (s *store) countView(item string) string {
	s.viewMu.Lock()
	defer s.viewMu.Unlock()
	if k := s.views[item]; k != nil {
		s.ranks.change(*k, k.views+1)
		k.views++
		return k.item
	}
	k := newRankKey(strings.Clone(item), 1)
	s.views[k.item] = &k
	s.ranks.insert(k)
	return k.item
}

// viewName returns the Store's copy of item's name if it has one, or a new
// copy: a name the Store may keep.
func (s *store) viewName(item string) string {
	s.viewMu.RLock()
	defer s.viewMu.RUnlock()
	if k := s.views[item]; k != nil {
		return k.item
	}
	return strings.Clone(item)
}

// CountView implements driver.Store.
func (s *store) CountView(ctx context.Context, item string) error {
	s.countView(item)
	return nil
}

// ItemRank implements driver.Store.
func (s *store) ItemRank(ctx context.Context, item string) (int, bool, error) {
	s.viewMu.RLock()
	defer s.viewMu.RUnlock()
	k := s.views[item]
	if k == nil {
		return 0, false, nil
	}
	return s.ranks.rank(*k), true, nil
}

// TopItems implements driver.Store.
func (s *store) TopItems(ctx context.Context, n int) ([]driver.ItemViews, error) {
	s.viewMu.RLock()
	defer s.viewMu.RUnlock()
	top := make([]driver.ItemViews, 0, min(n, s.ranks.len()))
	s.ranks.ascend(func(k *rankKey) bool {
		if len(top) == n {
			return false
		}
		top = append(top, driver.ItemViews{Item: k.item, Views: k.views})
		return true
	})
	return top, nil
}

// RescaleViews implements driver.Store.
func (s *store) RescaleViews(ctx context.Context, keep int, factor float64) error {
	s.viewMu.Lock()
	defer s.viewMu.Unlock()
	s.ranks.truncate(keep, func(k *rankKey) { delete(s.views, k.item) })
	if factor != 1 {
		s.ranks.scale(factor)
		for _, k := range s.views {
			k.views *= factor
		}
	}
	return nil
}
