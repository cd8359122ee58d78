package rueidisbackend

// mergeFirst returns the first n elements, in the order of cmp, of lists
// that are each sorted by cmp: what reading the first n of one sorted set
// gives, from the parts the set is split into (see keys.go). Ties between
// lists, which cmp reports only for equal elements, go to the earlier list.
// The result may share memory with lists.
func mergeFirst[T any](lists [][]T, n int, cmp func(a, b T) int) []T {
	if len(lists) == 1 {
		return lists[0][:min(n, len(lists[0]))]
	}
	total := 0
	for _, l := range lists {
		total += len(l)
	}
	out := make([]T, 0, min(n, total))
	// h is a binary min-heap of the lists not yet used up, by their next
	// element; pos[i] is list i's next element.
	pos := make([]int, len(lists))
	h := make([]int, 0, len(lists))
	less := func(a, b int) bool {
		c := cmp(lists[a][pos[a]], lists[b][pos[b]])
		return c < 0 || c == 0 && a < b
	}
	down := func(i int) {
		for {
			m, l, r := i, 2*i+1, 2*i+2
			if l < len(h) && less(h[l], h[m]) {
				m = l
			}
			if r < len(h) && less(h[r], h[m]) {
				m = r
			}
			if m == i {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i, l := range lists {
		if len(l) > 0 {
			h = append(h, i)
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for len(out) < n && len(h) > 0 {
		i := h[0]
		out = append(out, lists[i][pos[i]])
		if pos[i]++; pos[i] == len(lists[i]) {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		down(0)
	}
	return out
}
