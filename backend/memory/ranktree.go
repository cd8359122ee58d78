package memory

import (
	"encoding/binary"
	"slices"
)

// rankTree orders items by views, most viewed first, ties by item name
// ascending, and answers rank queries in O(log n). It is a B+tree whose inner
// nodes count the items under each child, so a rank is the sum of the counts
// left of the path to an item. Keys sit inline in the nodes: a search reads a
// few contiguous arrays instead of chasing a pointer per step, which is what
// makes a view cheap at 100,000 items.
type rankTree struct {
	root *bnode // nil when empty
}

// bcap is the most keys a leaf, or children an inner node, holds.
const bcap = 32

type bnode struct {
	leaf bool
	n    int // keys in a leaf, children in an inner node
	size int // items under this node
	// keys are the items of a leaf, or the smallest key under each child of
	// an inner node.
	keys   [bcap]rankKey
	counts [bcap]int // inner: items under each child
	kids   [bcap]*bnode
}

// rankKey is an item's place in the order. k0 and k1 hold the first 16 bytes
// of the name, big-endian and zero-padded, so most comparisons of tied
// items read no string memory.
type rankKey struct {
	views  float64
	k0, k1 uint64
	item   string
}

func newRankKey(item string, views float64) rankKey {
	var b [16]byte
	copy(b[:], item)
	return rankKey{views: views, k0: binary.BigEndian.Uint64(b[:8]), k1: binary.BigEndian.Uint64(b[8:]), item: item}
}

// before reports whether a ranks before b.
func (a *rankKey) before(b *rankKey) bool {
	if a.views != b.views {
		return a.views > b.views
	}
	if a.k0 != b.k0 {
		return a.k0 < b.k0
	}
	if a.k1 != b.k1 {
		return a.k1 < b.k1
	}
	return a.item < b.item
}

// child returns the index of the child of inner node x whose range holds k.
func (x *bnode) child(k *rankKey) int {
	lo, hi := 1, x.n // find the first key after k among keys[1:n]
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if k.before(&x.keys[m]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo - 1
}

// find returns the index in leaf x of the first key not before k.
func (x *bnode) find(k *rankKey) int {
	lo, hi := 0, x.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if x.keys[m].before(k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (t *rankTree) len() int {
	if t.root == nil {
		return 0
	}
	return t.root.size
}

// insert adds k; its item must not be in the tree.
func (t *rankTree) insert(k rankKey) {
	if t.root == nil {
		t.root = &bnode{leaf: true}
	}
	if right := t.root.insert(&k); right != nil {
		left := t.root
		t.root = &bnode{n: 2, size: left.size + right.size}
		t.root.kids[0], t.root.kids[1] = left, right
		t.root.keys[0], t.root.keys[1] = left.keys[0], right.keys[0]
		t.root.counts[0], t.root.counts[1] = left.size, right.size
	}
}

// insert adds k under x and returns the new right sibling if x split.
func (x *bnode) insert(k *rankKey) *bnode {
	x.size++
	if x.leaf {
		i := x.find(k)
		copy(x.keys[i+1:x.n+1], x.keys[i:x.n])
		x.keys[i] = *k
		x.n++
	} else {
		i := x.child(k)
		right := x.kids[i].insert(k)
		x.keys[i] = x.kids[i].keys[0]
		x.counts[i] = x.kids[i].size
		if right != nil {
			copy(x.kids[i+2:x.n+1], x.kids[i+1:x.n])
			copy(x.keys[i+2:x.n+1], x.keys[i+1:x.n])
			copy(x.counts[i+2:x.n+1], x.counts[i+1:x.n])
			x.kids[i+1], x.keys[i+1], x.counts[i+1] = right, right.keys[0], right.size
			x.n++
		}
	}
	if x.n < bcap {
		return nil
	}
	return x.split()
}

// split moves the upper half of a full node to a new right sibling.
func (x *bnode) split() *bnode {
	half := x.n / 2
	r := &bnode{leaf: x.leaf, n: x.n - half}
	copy(r.keys[:], x.keys[half:x.n])
	clear(x.keys[half:x.n])
	if x.leaf {
		r.size = r.n
	} else {
		copy(r.kids[:], x.kids[half:x.n])
		copy(r.counts[:], x.counts[half:x.n])
		clear(x.kids[half:x.n])
		for _, c := range r.counts[:r.n] {
			r.size += c
		}
	}
	x.n = half
	x.size -= r.size
	return r
}

// remove deletes k, which must be in the tree.
func (t *rankTree) remove(k rankKey) {
	t.root.remove(&k)
	t.shrink()
}

// shrink drops roots left with a single child, or nothing.
func (t *rankTree) shrink() {
	for t.root != nil && !t.root.leaf && t.root.n == 1 {
		t.root = t.root.kids[0]
	}
	if t.root != nil && t.root.n == 0 {
		t.root = nil
	}
}

func (x *bnode) remove(k *rankKey) {
	x.size--
	if x.leaf {
		i := x.find(k)
		copy(x.keys[i:], x.keys[i+1:x.n])
		x.n--
		x.keys[x.n] = rankKey{}
		return
	}
	i := x.child(k)
	c := x.kids[i]
	c.remove(k)
	x.counts[i] = c.size
	if c.n == 0 {
		x.removeKid(i)
		return
	}
	x.keys[i] = c.keys[0]
	// Merge a thin child into a neighbour so that nodes stay at least
	// roughly a quarter full.
	if c.n >= bcap/4 {
		return
	}
	if i+1 < x.n && c.n+x.kids[i+1].n < bcap {
		x.merge(i)
	} else if i > 0 && c.n+x.kids[i-1].n < bcap {
		x.merge(i - 1)
	}
}

// merge moves child i+1 of x into child i.
func (x *bnode) merge(i int) {
	l, r := x.kids[i], x.kids[i+1]
	copy(l.keys[l.n:], r.keys[:r.n])
	if !l.leaf {
		copy(l.kids[l.n:], r.kids[:r.n])
		copy(l.counts[l.n:], r.counts[:r.n])
	}
	l.n += r.n
	l.size += r.size
	x.counts[i] = l.size
	x.removeKid(i + 1)
}

func (x *bnode) removeKid(i int) {
	copy(x.kids[i:], x.kids[i+1:x.n])
	copy(x.keys[i:], x.keys[i+1:x.n])
	copy(x.counts[i:], x.counts[i+1:x.n])
	x.n--
	x.kids[x.n], x.keys[x.n], x.counts[x.n] = nil, rankKey{}, 0
}

// change gives the item of old a new view count, in place when its
// neighbours in the leaf stay ordered (the usual case for a popular item).
func (t *rankTree) change(old rankKey, views float64) {
	nk := old
	nk.views = views
	x := t.root
	for !x.leaf {
		x = x.kids[x.child(&old)]
	}
	i := x.find(&old)
	if i > 0 && x.keys[i-1].before(&nk) && (nk.before(&old) || i+1 < x.n && nk.before(&x.keys[i+1])) {
		x.keys[i].views = views
		return
	}
	t.remove(old)
	t.insert(nk)
}

// rank returns the 0-based rank of k, which must be in the tree.
func (t *rankTree) rank(k rankKey) int {
	r := 0
	x := t.root
	for !x.leaf {
		i := x.child(&k)
		for _, c := range x.counts[:i] {
			r += c
		}
		x = x.kids[i]
	}
	return r + x.find(&k)
}

// ascend calls f for each key in rank order until f returns false.
func (t *rankTree) ascend(f func(*rankKey) bool) {
	if t.root != nil {
		t.root.ascend(f)
	}
}

func (x *bnode) ascend(f func(*rankKey) bool) bool {
	for i := 0; i < x.n; i++ {
		if x.leaf && !f(&x.keys[i]) || !x.leaf && !x.kids[i].ascend(f) {
			return false
		}
	}
	return true
}

// truncate removes every item ranked keep or later, calling drop for each.
func (t *rankTree) truncate(keep int, drop func(*rankKey)) {
	if keep >= t.len() {
		return
	}
	if keep == 0 {
		t.ascend(func(k *rankKey) bool { drop(k); return true })
		t.root = nil
		return
	}
	t.root.truncate(keep, drop)
	t.shrink()
}

// truncate keeps the first keep items under x; 0 < keep < x.size.
func (x *bnode) truncate(keep int, drop func(*rankKey)) {
	all := func(k *rankKey) bool { drop(k); return true }
	if x.leaf {
		for i := keep; i < x.n; i++ {
			drop(&x.keys[i])
		}
		clear(x.keys[keep:x.n])
		x.n, x.size = keep, keep
		return
	}
	i, acc := 0, 0
	for acc+x.counts[i] <= keep {
		acc += x.counts[i]
		i++
	}
	for j := i + 1; j < x.n; j++ {
		x.kids[j].ascend(all)
	}
	last := i + 1
	if keep == acc {
		x.kids[i].ascend(all)
		last = i
	} else {
		x.kids[i].truncate(keep-acc, drop)
		x.counts[i] = keep - acc
	}
	clear(x.kids[last:x.n])
	clear(x.keys[last:x.n])
	clear(x.counts[last:x.n])
	x.n, x.size = last, keep
}

// scale multiplies every count by factor, which must be positive. That keeps
// the order except where rounding makes two counts equal; then the names
// decide again and the tree is rebuilt.
func (t *rankTree) scale(factor float64) {
	if t.root == nil {
		return
	}
	ordered := true
	var prev *rankKey
	var walk func(x *bnode)
	walk = func(x *bnode) {
		for i := 0; i < x.n; i++ {
			x.keys[i].views *= factor
			if x.leaf {
				if prev != nil && !prev.before(&x.keys[i]) {
					ordered = false
				}
				prev = &x.keys[i]
			} else {
				walk(x.kids[i])
			}
		}
	}
	walk(t.root)
	if ordered {
		return
	}
	keys := make([]rankKey, 0, t.len())
	t.ascend(func(k *rankKey) bool { keys = append(keys, *k); return true })
	slices.SortFunc(keys, func(a, b rankKey) int {
		if a.before(&b) {
			return -1
		}
		return 1
	})
	t.root = nil
	for _, k := range keys {
		t.insert(k)
	}
}
