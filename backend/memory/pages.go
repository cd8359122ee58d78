package memory

import (
	"container/heap"
	"context"
	"strings"
	"time"

	"github.com/retailkit/retail/internal/settings"
)

type page struct {
	key     string
	item    string // the item whose page it is (SetItemPage); "" for none
	body    []byte
	expires int64 // Unix ms; the page is gone from this instant on
	index   int   // in pageHeap
}

// pageHeap orders pages by expiry so SetPage can drop expired pages that are
// never read again, keeping memory bounded by the pages alive.
type pageHeap []*page

func (h pageHeap) Len() int           { return len(h) }
func (h pageHeap) Less(i, j int) bool { return h[i].expires < h[j].expires }
func (h pageHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *pageHeap) Push(x any) { p := x.(*page); p.index = len(*h); *h = append(*h, p) }
func (h *pageHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return p
}

// Page implements driver.Store.
func (s *store) Page(ctx context.Context, key string) ([]byte, bool, error) {
	now := s.now()
	s.pageMu.Lock()
	defer s.pageMu.Unlock()
	p := s.pages[key]
	if p == nil || now >= p.expires {
		return nil, false, nil
	}
	return cloneBytes(p.body), true, nil
}

// SetPage implements driver.Store.
func (s *store) SetPage(ctx context.Context, key string, body []byte, ttl time.Duration) error {
	s.setPage("", key, body, ttl)
	return nil
}

// SetItemPage implements driver.Store.
func (s *store) SetItemPage(ctx context.Context, item, key string, body []byte, ttl time.Duration) error {
	s.setPage(item, key, body, ttl)
	return nil
}

// setPage stores body under key as one of item's pages ("": no item's).
func (s *store) setPage(item, key string, body []byte, ttl time.Duration) {
	now := s.now()
	body = cloneBytes(body)
	s.pageMu.Lock()
	defer s.pageMu.Unlock()
	for len(s.expiry) > 0 && s.expiry[0].expires <= now {
		p := heap.Pop(&s.expiry).(*page)
		delete(s.pages, p.key)
		s.unindexPage(p)
	}
	expires := now + settings.Millis(ttl) // whole ms, rounded up: never sooner than ttl
	p := s.pages[key]
	if p != nil {
		p.body, p.expires = body, expires
		heap.Fix(&s.expiry, p.index)
		if p.item == item {
			return
		}
		s.unindexPage(p)
	} else {
		p = &page{key: strings.Clone(key), body: body, expires: expires}
		s.pages[p.key] = p
		heap.Push(&s.expiry, p)
	}
	if item == "" {
		return
	}
	p.item = strings.Clone(item)
	set := s.itemPages[p.item]
	if set == nil {
		set = make(map[string]*page)
		s.itemPages[p.item] = set
	}
	set[p.key] = p
}

// unindexPage removes p from its item's pages, if it has an item. The
// caller holds pageMu.
func (s *store) unindexPage(p *page) {
	if p.item == "" {
		return
	}
	if set := s.itemPages[p.item]; set != nil {
		delete(set, p.key)
		if len(set) == 0 {
			delete(s.itemPages, p.item)
		}
	}
	p.item = ""
}

// removePage deletes p from every index. The caller holds pageMu.
func (s *store) removePage(p *page) {
	delete(s.pages, p.key)
	heap.Remove(&s.expiry, p.index)
	s.unindexPage(p)
}

// DeletePage implements driver.Store.
func (s *store) DeletePage(ctx context.Context, key string) error {
	s.pageMu.Lock()
	defer s.pageMu.Unlock()
	if p := s.pages[key]; p != nil {
		s.removePage(p)
	}
	return nil
}

// PurgeItemPages implements driver.Store. Expired pages of item are
// dropped too but not counted.
func (s *store) PurgeItemPages(ctx context.Context, item string) (int, error) {
	now := s.now()
	s.pageMu.Lock()
	defer s.pageMu.Unlock()
	n := 0
	for _, p := range s.itemPages[item] {
		if now < p.expires {
			n++
		}
		s.removePage(p)
	}
	return n, nil
}
