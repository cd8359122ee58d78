package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retailkit/retail"
)

// workerTests pin how the workers of several processes over one Store
// divide their work (retail.Coordinator): each worker set is a goroutine
// here, and on a backend shared by processes its claims go through the
// backend as another process's would.
var workerTests = []behaviour{
	{"Workers_ClaimGivesEachTurnToItsFirstOwner", func(h *harness) {
		claim := func(owner string, turn int64) bool {
			h.t.Helper()
			held, err := h.s.Claim(h.ctx, "work", owner, turn, time.Minute)
			if err != nil {
				h.t.Fatalf("Claim(work, %s, %d) = %v", owner, turn, err)
			}
			return held
		}
		for _, c := range []struct {
			owner string
			turn  int64
			want  bool
		}{
			{"a", 5, true}, {"b", 5, false}, {"a", 5, true}, // the first owner keeps its turn
			{"b", 6, true}, {"a", 6, false}, // the next turn is free again
			{"a", 5, false}, // an earlier turn is lost to everybody
		} {
			if got := claim(c.owner, c.turn); got != c.want {
				h.t.Errorf("Claim(work, %s, %d) = %v, want %v", c.owner, c.turn, got, c.want)
			}
		}
		if held, err := h.s.Claim(h.ctx, "other", "b", 5, time.Minute); err != nil || !held {
			h.t.Errorf("Claim(other, b, 5) = %v, %v; want true: works take turns apart", held, err)
		}
		if _, err := h.s.Claim(h.ctx, "", "a", 1, time.Minute); !errors.Is(err, retail.ErrInvalid) {
			h.t.Errorf("Claim with no name = %v, want ErrInvalid", err)
		}
	}},
	{"Workers_ThreeRescalersRescaleOncePerPeriod", func(h *harness) {
		const every = 2 * time.Millisecond // a real pause between wakes; periods follow the manual clock
		sets := startWorkers(h, 3, func(s retail.Store) worker {
			r, err := retail.NewViewRescaler(s, retail.ViewRescalerOptions{Every: every, Clock: h.clock})
			if err != nil {
				h.t.Fatal(err)
			}
			return r
		})
		for period := 1; period <= 3; period++ {
			sets.waitClaims(h, 3) // every rescaler woke in this period, and the one that rescaled is done
			if got := sets.total(func(w *workerSet) int64 { return w.rescales.Load() }); got != int64(period) {
				h.t.Fatalf("after %d periods, three rescalers rescaled %d times, want %d", period, got, period)
			}
			h.clock.Advance(every)
		}
	}},
	{"Workers_ThreeCleanersCleanOneAtATime", func(h *harness) {
		const idle = 2 * time.Millisecond
		for i := range 60 {
			if _, err := h.s.StartSession(h.ctx, fmt.Sprintf("w-%03d", i), ""); err != nil {
				h.t.Fatal(err)
			}
		}
		sets := startWorkers(h, 3, func(s retail.Store) worker {
			c, err := retail.NewSessionCleaner(s, retail.SessionCleanerOptions{Keep: 10, Batch: 5, Idle: idle, Clock: h.clock})
			if err != nil {
				h.t.Fatal(err)
			}
			return c
		})
		turns := map[int64]bool{}
		for range 3 {
			sets.waitClaims(h, 3)
			h.clock.Advance(idle)
		}
		sets.waitClaims(h, 3)
		// The cleaner whose turn it is cleans the backlog pass after pass,
		// asking for its turn before each: wait for it to finish.
		deadline := time.Now().Add(30 * time.Second) // a hang, not a slow machine
		for h.sessionCount() != 10 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		for i, w := range sets {
			for _, turn := range w.cleanTurns() {
				turns[turn] = true
				for j, other := range sets[:i] {
					if slices.Contains(other.cleanTurns(), turn) {
						h.t.Errorf("cleaners %d and %d both cleaned in turn %d", j, i, turn)
					}
				}
			}
		}
		if len(turns) < 4 {
			h.t.Errorf("cleaners cleaned in %d turns of 4, want each", len(turns))
		}
		h.wantCount(10)
	}},
	{"Workers_ThreeRowCachersLoadEachDueRowOnce", func(h *harness) {
		const rows, delay = 20, time.Minute
		for i := range rows {
			if err := h.s.ScheduleRowCache(h.ctx, fmt.Sprintf("row-%02d", i), delay); err != nil {
				h.t.Fatal(err)
			}
		}
		var mu sync.Mutex
		loads := map[string]int{}
		load := func(_ context.Context, row string) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			loads[row]++
			return map[string]int{"loads": loads[row]}, nil
		}
		sets := startWorkers(h, 3, func(s retail.Store) worker {
			c, err := retail.NewRowCacher(s, load, retail.RowCacherOptions{Poll: time.Millisecond, Batch: 3})
			if err != nil {
				h.t.Fatal(err)
			}
			return c
		})
		refreshed := func(w *workerSet) int64 { return w.setRows.Load() }
		for round := 1; round <= 2; round++ {
			// Every row is due once (scheduled rows are due at once, then
			// every delay); once each cacher has claimed again with every
			// row loaded, none may load a row twice.
			deadline := time.Now().Add(30 * time.Second)
			for sets.total(refreshed) < int64(round*rows) {
				if time.Now().After(deadline) {
					h.t.Fatalf("round %d: %d rows refreshed in 30 s, want %d", round, sets.total(refreshed), round*rows)
				}
				time.Sleep(time.Millisecond)
			}
			sets.waitClaimedRows(h, 3)
			mu.Lock()
			for i := range rows {
				if row := fmt.Sprintf("row-%02d", i); loads[row] != round {
					h.t.Errorf("round %d: %s loaded %d times by three cachers, want %d", round, row, loads[row], round)
				}
			}
			mu.Unlock()
			h.clock.Advance(delay)
		}
	}},
}

// worker is what the tests run: a SessionCleaner, RowCacher or ViewRescaler.
type worker interface{ Run(context.Context) error }

// workerSet is one process's view of the Store: the Store, counting the
// calls its worker makes.
type workerSet struct {
	retail.Store
	claims, cleans, rescales atomic.Int64
	claimedRows, setRows     atomic.Int64

	mu     sync.Mutex
	held   int64   // the latest turn of cleaning this set's worker was given
	turnsC []int64 // the turns it cleaned in
}

func (w *workerSet) Claim(ctx context.Context, name, owner string, turn int64, hold time.Duration) (bool, error) {
	defer w.claims.Add(1)
	held, err := w.Store.Claim(ctx, name, owner, turn, hold)
	if held && name == "clean" { // not a cleaner's turn to repair (see SessionCleanerOptions.RepairEvery)
		w.mu.Lock()
		w.held = turn
		w.mu.Unlock()
	}
	return held, err
}

func (w *workerSet) CleanSessions(ctx context.Context, keep, max int) (int, error) {
	w.cleans.Add(1)
	w.mu.Lock()
	if len(w.turnsC) == 0 || w.turnsC[len(w.turnsC)-1] != w.held {
		w.turnsC = append(w.turnsC, w.held)
	}
	w.mu.Unlock()
	return w.Store.CleanSessions(ctx, keep, max)
}

func (w *workerSet) ClaimDueRows(ctx context.Context, limit int) ([]string, error) {
	defer w.claimedRows.Add(1)
	return w.Store.ClaimDueRows(ctx, limit)
}

func (w *workerSet) SetScheduledRow(ctx context.Context, row string, data []byte) (bool, error) {
	defer w.setRows.Add(1)
	return w.Store.SetScheduledRow(ctx, row, data)
}

// cleanTurns returns the turns the set's cleaner cleaned in.
func (w *workerSet) cleanTurns() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.turnsC)
}

func (w *workerSet) RescaleViews(ctx context.Context, keep int, factor float64) error {
	w.rescales.Add(1)
	return w.Store.RescaleViews(ctx, keep, factor)
}

type workerSets []*workerSet

// startWorkers runs n workers, each over its own workerSet of h's store,
// until the subtest ends.
func startWorkers(h *harness, n int, build func(retail.Store) worker) workerSets {
	ctx, cancel := context.WithCancel(h.ctx)
	var wg sync.WaitGroup
	h.t.Cleanup(func() { cancel(); wg.Wait() })
	sets := make(workerSets, n)
	for i := range sets {
		sets[i] = &workerSet{Store: h.s}
		w := build(sets[i])
		wg.Go(func() {
			if err := w.Run(ctx); err != nil {
				h.t.Errorf("worker %d: Run() = %v", i, err)
			}
		})
	}
	return sets
}

func (sets workerSets) counts(f func(*workerSet) int64) []int64 {
	out := make([]int64, len(sets))
	for i, w := range sets {
		out[i] = f(w)
	}
	return out
}

func (sets workerSets) total(f func(*workerSet) int64) (n int64) {
	for _, w := range sets {
		n += f(w)
	}
	return n
}

// waitClaims waits until every worker has asked for its turn more times
// from now: then each has seen the current period, and the one whose turn
// it is has done its work and asked again.
func (sets workerSets) waitClaims(h *harness, more int64) {
	h.t.Helper()
	sets.waitMore(h, "asked for its turn", func(w *workerSet) int64 { return w.claims.Load() }, more)
}

// waitClaimedRows waits until every row cacher has claimed rows more times
// from now.
func (sets workerSets) waitClaimedRows(h *harness, more int64) {
	h.t.Helper()
	sets.waitMore(h, "claimed rows", func(w *workerSet) int64 { return w.claimedRows.Load() }, more)
}

// waitMore waits until count has grown by more for every worker.
func (sets workerSets) waitMore(h *harness, what string, count func(*workerSet) int64, more int64) {
	h.t.Helper()
	before := sets.counts(count)
	deadline := time.Now().Add(30 * time.Second) // a hang, not a slow machine
	for i, w := range sets {
		for count(w) < before[i]+more {
			if time.Now().After(deadline) {
				h.t.Fatalf("worker %d %s %d times in 30 s, want %d", i, what, count(w)-before[i], more)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
