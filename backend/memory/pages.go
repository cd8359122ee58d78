package memory

import (
	"container/heap"
	"context"
	"strings"
	"time"
)

type page struct {
	key     string
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
	now := s.now()
	body = cloneBytes(body)
	s.pageMu.Lock()
	defer s.pageMu.Unlock()
	for len(s.expiry) > 0 && s.expiry[0].expires <= now {
		delete(s.pages, heap.Pop(&s.expiry).(*page).key)
	}
	expires := now + ttl.Milliseconds()
	if p := s.pages[key]; p != nil {
		p.body, p.expires = body, expires
		heap.Fix(&s.expiry, p.index)
		return nil
	}
	p := &page{key: strings.Clone(key), body: body, expires: expires}
	s.pages[p.key] = p
	heap.Push(&s.expiry, p)
	return nil
}
