package memory

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
)

// Sessions, the index by user and view counts are each split into shards.
// These tests check what the shards must not change: cleaning takes the
// least recently seen sessions of all shards, in order, and view counts and
// ranks are exact whatever runs at the same time. Run them under -race.

// agedSession is what the model knows of a session for cleaning.
type agedSession struct {
	token    string
	lastSeen int64  // Unix ms
	seq      uint64 // how many sessions its shard had seen when it was
	shard    int
}

// cleaningOrder sorts sessions as a pass removes them: least recently seen
// first, and within a millisecond by seq, then shard.
func cleaningOrder(model map[string]*agedSession) []*agedSession {
	order := make([]*agedSession, 0, len(model))
	for _, m := range model {
		order = append(order, m)
	}
	slices.SortFunc(order, func(a, b *agedSession) int {
		return cmp.Or(cmp.Compare(a.lastSeen, b.lastSeen), cmp.Compare(a.seq, b.seq), cmp.Compare(a.shard, b.shard))
	})
	return order
}

// TestCleanSessions_TakesOldestAcrossShards creates, refreshes and renews
// sessions spread over the shards, many seen in the same millisecond, and
// checks that each cleaning pass removes exactly the sessions a model
// ordered by last-seen time says: first the idle ones, then the oldest
// while more than keep remain.
func TestCleanSessions_TakesOldestAcrossShards(t *testing.T) {
	const idle = time.Hour
	ctx := context.Background()
	for seed := range uint64(5) {
		t.Run(fmt.Sprint("Seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 17))
			clock := retail.NewManualClock(time.UnixMilli(1_700_000_000_000))
			s := newInternal(t, clock, Options{IdleTimeout: idle, Lifetime: 100 * idle})
			model := map[string]*agedSession{}
			var seen [shardCount]uint64 // sessions seen by each shard
			see := func(token string, lastSeen int64) {
				shard := shardOf(s.seed, token)
				seen[shard]++
				model[token] = &agedSession{token, lastSeen, seen[shard], shard}
			}
			anyToken := func() string {
				tokens := make([]string, 0, len(model))
				for token := range model {
					tokens = append(tokens, token)
				}
				slices.Sort(tokens)
				return tokens[r.IntN(len(tokens))]
			}
			shards := map[int]bool{}
			for i := range 3000 {
				now := clock.Now().UnixMilli()
				switch op := r.IntN(10); {
				case op < 4 || len(model) < 10:
					token := fmt.Sprintf("tok-%d", i)
					if err := s.UpdateToken(ctx, token, "user", "item"); err != nil {
						t.Fatalf("UpdateToken(%q) = %v", token, err)
					}
					see(token, now)
					shards[shardOf(s.seed, token)] = true
				case op < 8:
					token := anyToken()
					if _, ok, err := s.RefreshSession(ctx, token, ""); !ok || err != nil {
						t.Fatalf("RefreshSession(%q) = %v, %v, want true, nil", token, ok, err)
					}
					see(token, max(model[token].lastSeen, now))
				default:
					token, newToken := anyToken(), fmt.Sprintf("renewed-%d", i)
					if st, err := s.RenewSession(ctx, token, newToken, "", driver.SessionOptions{}); st != driver.OK || err != nil {
						t.Fatalf("RenewSession(%q, %q) = %v, %v, want OK", token, newToken, st, err)
					}
					lastSeen := max(model[token].lastSeen, now)
					delete(model, token)
					see(newToken, lastSeen)
				}
				// Mostly no time passes, so that many sessions tie.
				if r.IntN(4) == 0 {
					clock.Advance(time.Duration(1+r.IntN(3)) * time.Millisecond)
				}
			}
			if len(shards) < shardCount/2 {
				t.Fatalf("the sessions fell in %d of %d shards; the test needs them spread", len(shards), shardCount)
			}
			checkIndexes(t, s, "the calls")

			// Half the sessions become idle: passes that keep every session
			// remove just those, oldest first.
			order := cleaningOrder(model)
			mid := order[len(order)/2].lastSeen
			clock.Set(time.UnixMilli(mid).Add(idle))
			idleCount := 0
			for _, m := range order {
				if m.lastSeen <= mid {
					idleCount++
				}
			}
			cleanAndCheck := func(keep, max, want int) {
				t.Helper()
				order := cleaningOrder(model)
				n, err := s.CleanSessions(ctx, keep, max)
				if n != want || err != nil {
					t.Fatalf("CleanSessions(%d, %d) = %d, %v, want %d, nil", keep, max, n, err, want)
				}
				var gotGone, wantGone []string
				for i, m := range order {
					if !held(s, m.token) {
						gotGone = append(gotGone, m.token)
						delete(model, m.token)
					}
					if i < want {
						wantGone = append(wantGone, m.token)
					}
				}
				if diff := gocmp.Diff(wantGone, gotGone); diff != "" {
					t.Fatalf("CleanSessions(%d, %d) removed other sessions than the least recently seen (-want +got):\n%s", keep, max, diff)
				}
				checkIndexes(t, s, fmt.Sprintf("CleanSessions(%d, %d)", keep, max))
			}
			for idleCount > 0 {
				max := 1 + r.IntN(100)
				cleanAndCheck(len(model), max, min(max, idleCount))
				idleCount -= min(max, idleCount)
			}
			cleanAndCheck(len(model), 100, 0)
			for len(model) > 10 {
				max := 1 + r.IntN(100)
				cleanAndCheck(10, max, min(max, len(model)-10))
			}
		})
	}
}

// TestCleanSessions_OldestFirstWhileOthersAreSeen runs cleaning passes while
// other goroutines create and refresh young sessions in every shard, and
// checks that the passes removed exactly the oldest sessions.
func TestCleanSessions_OldestFirstWhileOthersAreSeen(t *testing.T) {
	const total, clean, workers = 2000, 1500, 4
	ctx := context.Background()
	clock := retail.NewManualClock(time.UnixMilli(1_700_000_000_000))
	s := newInternal(t, clock, Options{})
	old := make([]string, total)
	for i := range old {
		old[i] = fmt.Sprintf("old-%d", i)
		if err := s.UpdateToken(ctx, old[i], "user-"+old[i], "item"); err != nil {
			t.Fatalf("UpdateToken(%q) = %v", old[i], err)
		}
		clock.Advance(time.Millisecond)
	}
	clock.Advance(time.Second)

	stop := make(chan struct{})
	var started, wg sync.WaitGroup // started: each worker has made its 100 sessions
	started.Add(workers)
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				token := fmt.Sprintf("young-%d-%d", w, i%100)
				if err := s.UpdateToken(ctx, token, "", "item"); err != nil {
					t.Errorf("UpdateToken(%q) = %v", token, err)
					return
				}
				if i == 99 {
					started.Done()
				}
			}
		})
	}
	started.Wait()
	for removed := 0; removed < clean; {
		max := min(37, clean-removed)
		n, err := s.CleanSessions(ctx, 0, max)
		if n != max || err != nil {
			t.Errorf("CleanSessions(0, %d) = %d, %v, want %d, nil", max, n, err, max)
			break
		}
		removed += n
	}
	close(stop)
	wg.Wait()

	for i, token := range old {
		if got, want := held(s, token), i >= clean; got != want {
			t.Errorf("after removing %d sessions, %q (the %dth oldest) is held = %v, want %v", clean, token, i, got, want)
		}
	}
	checkIndexes(t, s, "the passes")
}

// pausingContext pauses a cleaning pass between two chunks: the first time
// the pass asks for Err, Err closes paused and waits until resume is closed.
type pausingContext struct {
	context.Context
	once           sync.Once
	paused, resume chan struct{}
}

func (c *pausingContext) Err() error {
	c.once.Do(func() {
		close(c.paused)
		<-c.resume
	})
	return c.Context.Err()
}

// TestCleanSessions_PassSparesSessionsSeenAfterItBegan pauses a pass that
// may remove every session after its first chunk, refreshes and creates
// sessions in every shard, and checks that the pass removed exactly the
// sessions seen before it began: it settles the refreshed ones to their
// new places and stops when it reaches them.
func TestCleanSessions_PassSparesSessionsSeenAfterItBegan(t *testing.T) {
	const total = 3 * cleanChunk
	ctx := context.Background()
	clock := retail.NewManualClock(time.UnixMilli(1_700_000_000_000))
	s := newInternal(t, clock, Options{})
	tokens := make([]string, total)
	for i := range tokens {
		tokens[i] = fmt.Sprintf("tok-%d", i)
		if err := s.UpdateToken(ctx, tokens[i], "", "item"); err != nil {
			t.Fatalf("UpdateToken(%q) = %v", tokens[i], err)
		}
		clock.Advance(time.Millisecond)
	}

	pc := &pausingContext{Context: ctx, paused: make(chan struct{}), resume: make(chan struct{})}
	var removed int
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		removed, err = s.CleanSessions(pc, 0, total+100)
	}()
	<-pc.paused
	spared := map[string]bool{}
	for i := cleanChunk + 10; i < total; i += 7 { // still held: the first chunk removed cleanChunk
		if _, ok, err := s.RefreshSession(ctx, tokens[i], ""); !ok || err != nil {
			t.Fatalf("RefreshSession(%q) during the pass = %v, %v, want true, nil", tokens[i], ok, err)
		}
		spared[tokens[i]] = true
	}
	for i := range 100 {
		token := fmt.Sprintf("new-%d", i)
		if err := s.UpdateToken(ctx, token, "", ""); err != nil {
			t.Fatalf("UpdateToken(%q) during the pass = %v", token, err)
		}
		spared[token] = true
	}
	close(pc.resume)
	<-done

	if want := total - (len(spared) - 100); removed != want || err != nil {
		t.Errorf("CleanSessions(0, %d) = %d, %v, want %d, nil", total+100, removed, err, want)
	}
	for _, token := range tokens {
		if got := held(s, token); got != spared[token] {
			t.Errorf("after the pass, %q is held = %v, want %v", token, got, spared[token])
		}
	}
	if n, _ := s.SessionCount(ctx); n != len(spared) {
		t.Errorf("SessionCount() after the pass = %d, want the %d sessions seen during it", n, len(spared))
	}
	checkIndexes(t, s, "the pass")
}

// TestViews_ExactUnderConcurrency counts views from many goroutines, with
// and without sessions, while others read ranks and clean sessions, and
// checks that every read sees the views counted before it (each writer
// checks its own item, which only it views) and that the final counts and
// ranks are exactly those of the views counted.
func TestViews_ExactUnderConcurrency(t *testing.T) {
	const workers, views = 8, 400
	ctx := context.Background()
	s := newInternal(t, retail.NewManualClock(time.UnixMilli(1_700_000_000_000)), Options{})
	// Views are counted by the Store over the driver, as New makes it.
	st := retail.NewStoreWith(s, retail.StoreOptions{ViewFlush: -1})
	items := make([]string, 30)
	for i := range items {
		// Shared prefixes, so that ties go past the bytes kept inline.
		items[i] = fmt.Sprintf("a-very-long-shared-item-prefix-%02d", i)
	}
	all := len(items) + workers

	// viewsOf returns the counts TopItems reports, by item.
	viewsOf := func() map[string]float64 {
		top, err := s.TopItems(ctx, all)
		if err != nil {
			t.Errorf("TopItems(%d) = %v", all, err)
		}
		if !slices.IsSortedFunc(top, byRank) {
			t.Errorf("TopItems(%d) = %v, not in rank order", all, top)
		}
		counts := make(map[string]float64, len(top))
		for _, iv := range top {
			counts[iv.Item] = iv.Views
		}
		return counts
	}

	counted := make([]map[string]float64, workers)
	stop := make(chan struct{})
	var readers, writers sync.WaitGroup
	readers.Go(func() { // reads ranks; counts only grow
		last := map[string]float64{}
		for {
			select {
			case <-stop:
				return
			default:
			}
			for item, n := range viewsOf() {
				if n < last[item] {
					t.Errorf("views of %q went from %v to %v", item, last[item], n)
				}
				last[item] = n
			}
			if _, _, err := s.ItemRank(ctx, items[0]); err != nil {
				t.Errorf("ItemRank(%q) = %v", items[0], err)
			}
		}
	})
	readers.Go(func() { // cleans sessions, which must not touch views
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.CleanSessions(ctx, 5, 3); err != nil {
				t.Errorf("CleanSessions(5, 3) = %v", err)
			}
		}
	})
	for w := range workers {
		counted[w] = map[string]float64{}
		own := fmt.Sprintf("own-item-%d", w)
		token := fmt.Sprintf("tok-%d", w)
		r := rand.New(rand.NewPCG(uint64(w), 3))
		writers.Go(func() {
			for i := range views {
				item := items[min(int(r.ExpFloat64()*5), len(items)-1)]
				switch i % 3 {
				case 0:
					if err := st.CountView(ctx, item); err != nil {
						t.Errorf("CountView(%q) = %v", item, err)
						return
					}
					counted[w][item]++
				case 1:
					if err := st.UpdateToken(ctx, token, "user", item); err != nil {
						t.Errorf("UpdateToken(%q, %q) = %v", token, item, err)
						return
					}
					counted[w][item]++
				case 2: // counts a view only if cleaning left the session
					if _, ok, err := st.RefreshSession(ctx, token, item); err != nil {
						t.Errorf("RefreshSession(%q, %q) = %v", token, item, err)
						return
					} else if ok {
						counted[w][item]++
					}
				}
				if i%10 == 0 {
					if err := st.CountView(ctx, own); err != nil {
						t.Errorf("CountView(%q) = %v", own, err)
						return
					}
					counted[w][own]++
					if got := viewsOf()[own]; got != counted[w][own] {
						t.Errorf("TopItems right after counting view %v of %q says %v", counted[w][own], own, got)
						return
					}
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	readers.Wait()

	want := map[string]float64{}
	for _, c := range counted {
		for item, n := range c {
			want[item] += n
		}
	}
	if diff := gocmp.Diff(want, viewsOf()); diff != "" {
		t.Fatalf("views after the writers ended (-counted +TopItems):\n%s", diff)
	}
	ranked := make([]driver.ItemViews, 0, len(want))
	for item, n := range want {
		ranked = append(ranked, driver.ItemViews{Item: item, Views: n})
	}
	slices.SortFunc(ranked, byRank)
	for i, iv := range ranked {
		if rank, ok, err := s.ItemRank(ctx, iv.Item); rank != i || !ok || err != nil {
			t.Errorf("ItemRank(%q) = %d, %v, %v, want %d, true, nil", iv.Item, rank, ok, err, i)
		}
	}
}

// byRank orders items as ranks do: most viewed first, ties by name.
func byRank(a, b driver.ItemViews) int {
	return cmp.Or(cmp.Compare(b.Views, a.Views), cmp.Compare(a.Item, b.Item))
}
