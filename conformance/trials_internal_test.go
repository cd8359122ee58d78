package conformance

import (
	"slices"
	"sync/atomic"
	"testing"
)

// TestInBatches_RunsTheTrialsAskedFor: a race runs the number of trials it
// is given (Options.RaceTrials), logoutBatch at a time, each once.
func TestInBatches_RunsTheTrialsAskedFor(t *testing.T) {
	for _, n := range []int{1, logoutBatch, 40, raceTrials} {
		ran := make([]atomic.Int32, n)
		var batches [][2]int
		got := inBatches(t, n, func(i int) { ran[i].Add(1) }, func(first, last int) {
			batches = append(batches, [2]int{first, last})
		})
		if got != n {
			t.Errorf("inBatches(%d) = %d trials, want %d", n, got, n)
		}
		for i := range ran {
			if c := ran[i].Load(); c != 1 {
				t.Fatalf("inBatches(%d): trial %d ran %d times, want once", n, i, c)
			}
		}
		var want [][2]int
		for b := 0; b < n; b += logoutBatch {
			want = append(want, [2]int{b, min(b+logoutBatch, n) - 1})
		}
		if !slices.Equal(batches, want) {
			t.Errorf("inBatches(%d) ran batches %v, want %v", n, batches, want)
		}
	}
}
