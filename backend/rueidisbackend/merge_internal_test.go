package rueidisbackend

import (
	"cmp"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestMergeFirst_EqualsSortingEverything merges random sorted lists, with
// many equal keys, and checks that the first n are what sorting all of
// them gives.
func TestMergeFirst_EqualsSortingEverything(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	type kv struct{ k, v int }
	byKey := func(a, b kv) int { return cmp.Or(cmp.Compare(a.k, b.k), cmp.Compare(a.v, b.v)) }
	for trial := range 200 {
		lists := make([][]kv, r.IntN(9))
		var all []kv
		for i := range lists {
			for range r.IntN(20) {
				lists[i] = append(lists[i], kv{r.IntN(5), r.IntN(1000)})
			}
			slices.SortFunc(lists[i], byKey)
			all = append(all, lists[i]...)
		}
		slices.SortFunc(all, byKey)
		n := r.IntN(len(all) + 3)
		got := mergeFirst(lists, n, byKey)
		if want := all[:min(n, len(all))]; !slices.Equal(got, want) {
			t.Fatalf("trial %d: mergeFirst(%v, %d) = %v, want %v", trial, lists, n, got, want)
		}
	}
}

// TestPartOf_IsFNV1a32 pins the hash that places tokens and items in the
// parts of the shared sets: it is part of the stored data's layout.
func TestPartOf_IsFNV1a32(t *testing.T) {
	k := newKeys("p:", 7)
	for _, s := range []string{"", "a", "token-1", "é}{", string([]byte{0xff, 0, 0x80})} {
		h := fnv.New32a()
		h.Write([]byte(s))
		if got, want := fnv1a32(s), h.Sum32(); got != want {
			t.Errorf("fnv1a32(%q) = %#x, want %#x", s, got, want)
		}
		if got, want := k.partOf(s), int(h.Sum32()%7); got != want {
			t.Errorf("partOf(%q) = %d, want %d", s, got, want)
		}
	}
	if got := fnv1a32("a"); got != 0xe40c292c {
		t.Errorf("fnv1a32(%q) = %#x, want 0xe40c292c", "a", got)
	}
	if got := newKeys("p:", 1).index("x"); got != "p:{sessions}:seen" {
		t.Errorf("index with a spread of 1 = %q, want p:{sessions}:seen", got)
	}
	if got := k.viewedPart(3); got != "p:{views:3.8}:viewed" {
		t.Errorf("viewedPart(3) = %q, want p:{views:3.8}:viewed", got)
	}
}

// TestPartTag_SpreadsPartsOverSlotRanges checks that part p of n lands in
// the p-th of n equal slot ranges, so that the parts fall evenly on masters
// that hold equal ranges, and that no two parts share a key.
func TestPartTag_SpreadsPartsOverSlotRanges(t *testing.T) {
	for _, n := range []int{2, 3, 6, 7, 12, 48, MaxSpread} {
		k := newKeys("p:", n)
		seen := map[string]bool{}
		for p := range n {
			for _, key := range []string{k.indexPart(p), k.viewedPart(p)} {
				tag := key[strings.IndexByte(key, '{')+1 : strings.IndexByte(key, '}')]
				if slot := int(crc16(tag) % clusterSlots); slot < p*clusterSlots/n || slot >= (p+1)*clusterSlots/n {
					t.Errorf("spread %d: part %d's key %q is on slot %d, outside [%d, %d)", n, p, key, slot, p*clusterSlots/n, (p+1)*clusterSlots/n)
				}
				if seen[key] {
					t.Errorf("spread %d: key %q used twice", n, key)
				}
				seen[key] = true
			}
		}
	}
	if got := crc16("123456789"); got != 0x31c3 { // the XMODEM check value
		t.Errorf("crc16(123456789) = %#x, want 0x31c3", got)
	}
}
