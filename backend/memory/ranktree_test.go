package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// BenchmarkRankTree_Rank100k is the cost of one ItemRank at 100,000 items,
// without the map lookup and lock.
func BenchmarkRankTree_Rank100k(b *testing.B) {
	t, keys := filledRankTree(100_000)
	r := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		t.rank(*keys[r.IntN(len(keys))])
	}
}

// BenchmarkRankTree_View100k is the cost of counting one view at 100,000
// items with Zipf-skewed popularity.
func BenchmarkRankTree_View100k(b *testing.B) {
	t, keys := filledRankTree(100_000)
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.1, 1, uint64(len(keys)-1))
	b.ReportAllocs()
	for b.Loop() {
		k := keys[z.Uint64()]
		t.change(*k, k.views+1)
		k.views++
	}
}

func filledRankTree(size int) (*rankTree, []*rankKey) {
	t := &rankTree{}
	keys := make([]*rankKey, size)
	for i := range keys {
		k := newRankKey(fmt.Sprintf("item%07d", i), float64(i%1000))
		keys[i] = &k
		t.insert(k)
	}
	return t, keys
}

type modelEntry struct {
	Item  string
	Views float64
}

// TestRankTree_MatchesSortedModel drives the tree and a plain sorted slice
// with the same random operations and compares order, ranks, counts and
// separator keys as it goes. Names share long prefixes so that ties are
// decided past the 16 bytes kept inline.
func TestRankTree_MatchesSortedModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	tree := &rankTree{}
	keys := map[string]*rankKey{}
	model := map[string]float64{}
	for step := 0; step < 60_000; step++ {
		switch op := r.IntN(1000); {
		case op < 700: // view an item, often a popular one
			item := fmt.Sprintf("%s%03d", prefixes[r.IntN(len(prefixes))], int(r.ExpFloat64()*300)%2000)
			if k := keys[item]; k != nil {
				tree.change(*k, k.views+1)
				k.views++
			} else {
				k := newRankKey(item, 1)
				keys[item] = &k
				tree.insert(k)
			}
			model[item]++
		case op < 900: // lose views, moving right (not done by the Store, but part of change's contract)
			for item, k := range keys {
				tree.change(*k, k.views-0.5)
				k.views -= 0.5
				model[item] -= 0.5
				break
			}
		case op < 905:
			keep := r.IntN(len(model) + 2)
			tree.truncate(keep, func(k *rankKey) { delete(keys, k.item) })
			for _, e := range sortedModel(model)[min(keep, len(model)):] {
				delete(model, e.Item)
			}
		case op < 910:
			factor := []float64{0.5, 1, 0.3, 0.1}[r.IntN(4)]
			tree.scale(factor)
			for k, v := range model {
				model[k] = v * factor
				keys[k].views *= factor
			}
		default:
			continue
		}
		if step%211 == 0 || step > 59_950 {
			checkRankTree(t, step, tree, keys, model)
		}
	}
}

var prefixes = []string{"", "a-very-long-shared-item-prefix-", "x"}

func sortedModel(model map[string]float64) []modelEntry {
	var out []modelEntry
	for k, v := range model {
		out = append(out, modelEntry{k, v})
	}
	slices.SortFunc(out, func(a, b modelEntry) int {
		ka, kb := newRankKey(a.Item, a.Views), newRankKey(b.Item, b.Views)
		if ka.before(&kb) {
			return -1
		}
		return 1
	})
	return out
}

func checkRankTree(t *testing.T, step int, tree *rankTree, keys map[string]*rankKey, model map[string]float64) {
	t.Helper()
	want := sortedModel(model)
	var got []modelEntry
	tree.ascend(func(k *rankKey) bool { got = append(got, modelEntry{k.item, k.views}); return true })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("step %d: order (-want +got):\n%s", step, diff)
	}
	if tree.len() != len(want) || len(keys) != len(want) {
		t.Fatalf("step %d: len = %d, keys %d, want %d", step, tree.len(), len(keys), len(want))
	}
	for i, e := range want {
		if r := tree.rank(*keys[e.Item]); r != i {
			t.Fatalf("step %d: rank(%q) = %d, want %d", step, e.Item, r, i)
		}
	}
	if tree.root != nil {
		checkNode(t, step, tree.root, true)
	}
}

// checkNode verifies sizes, counts and separator keys below x.
func checkNode(t *testing.T, step int, x *bnode, root bool) {
	t.Helper()
	if x.n == 0 || x.n >= bcap || (!root && !x.leaf && x.n < 1) {
		t.Fatalf("step %d: node with %d entries", step, x.n)
	}
	if x.leaf {
		if x.size != x.n {
			t.Fatalf("step %d: leaf size %d, n %d", step, x.size, x.n)
		}
		return
	}
	sum := 0
	for i := 0; i < x.n; i++ {
		c := x.kids[i]
		checkNode(t, step, c, false)
		if x.counts[i] != c.size {
			t.Fatalf("step %d: count %d, child size %d", step, x.counts[i], c.size)
		}
		if x.keys[i] != c.keys[0] {
			t.Fatalf("step %d: separator %v, child min %v", step, x.keys[i], c.keys[0])
		}
		sum += c.size
	}
	if sum != x.size {
		t.Fatalf("step %d: size %d, children %d", step, x.size, sum)
	}
}

func TestPushRecent_MovesToFrontAndTrims(t *testing.T) {
	var r []string
	for _, item := range []string{"a", "b", "c", "b", "d", "a"} {
		r = pushRecent(r, item, 3)
	}
	if diff := cmp.Diff([]string{"a", "d", "b"}, r); diff != "" {
		t.Fatalf("pushRecent (-want +got):\n%s", diff)
	}
}
