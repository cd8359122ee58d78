package memory

import (
	"container/heap"
	"context"
	"strings"
	"time"

	"github.com/retailkit/retail/internal/settings"
)

type rowEntry struct {
	row   string
	delay int64 // ms; zero: unschedule when next due
	due   int64 // Unix ms
	index int   // in rowHeap
}

// rowHeap orders scheduled rows by due time, then row id, as a Redis sorted
// set of due times would.
type rowHeap []*rowEntry

func (h rowHeap) Len() int { return len(h) }
func (h rowHeap) Less(i, j int) bool {
	return h[i].due < h[j].due || (h[i].due == h[j].due && h[i].row < h[j].row)
}
func (h rowHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *rowHeap) Push(x any) { e := x.(*rowEntry); e.index = len(*h); *h = append(*h, e) }
func (h *rowHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// ScheduleRowCache implements driver.Store.
func (s *store) ScheduleRowCache(ctx context.Context, row string, delay time.Duration) error {
	now := s.now()
	s.rowMu.Lock()
	defer s.rowMu.Unlock()
	e := s.rows[row]
	if e == nil {
		e = &rowEntry{row: strings.Clone(row), due: now}
		s.rows[e.row] = e
		heap.Push(&s.schedule, e)
	} else {
		e.due = now
		heap.Fix(&s.schedule, e.index)
	}
	e.delay = max(settings.Millis(delay), 0) // whole ms, rounded up: never sooner than delay
	return nil
}

// ClaimDueRows implements driver.Store.
func (s *store) ClaimDueRows(ctx context.Context, limit int) ([]string, error) {
	now := s.now()
	s.rowMu.Lock()
	defer s.rowMu.Unlock()
	var claimed []string
	for len(claimed) < limit && len(s.schedule) > 0 && s.schedule[0].due <= now {
		e := s.schedule[0]
		if e.delay <= 0 {
			heap.Pop(&s.schedule)
			delete(s.rows, e.row)
			delete(s.rowData, e.row)
			continue
		}
		e.due = now + e.delay
		heap.Fix(&s.schedule, 0)
		claimed = append(claimed, e.row)
	}
	return claimed, nil
}

// Row implements driver.Store.
func (s *store) Row(ctx context.Context, row string) ([]byte, bool, error) {
	s.rowMu.Lock()
	defer s.rowMu.Unlock()
	data, ok := s.rowData[row]
	if !ok {
		return nil, false, nil
	}
	return cloneBytes(data), true, nil
}

// SetScheduledRow implements driver.Store: the row's entry and its copy
// are under one lock, which ClaimDueRows holds while it unschedules.
func (s *store) SetScheduledRow(ctx context.Context, row string, data []byte) (bool, error) {
	data = cloneBytes(data)
	s.rowMu.Lock()
	defer s.rowMu.Unlock()
	e := s.rows[row]
	if e == nil {
		delete(s.rowData, row)
		return false, nil
	}
	s.rowData[e.row] = data
	return true, nil
}

// SetRow implements driver.Store.
func (s *store) SetRow(ctx context.Context, row string, data []byte) error {
	data = cloneBytes(data)
	s.rowMu.Lock()
	defer s.rowMu.Unlock()
	if _, ok := s.rowData[row]; !ok {
		row = strings.Clone(row)
	}
	s.rowData[row] = data
	return nil
}
