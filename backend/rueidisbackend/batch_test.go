package rueidisbackend_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/rueidis"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// TestBatch_EachCallGetsItsOwnAnswer holds the first batches of each
// group-committed script on their way until many calls have queued behind
// them, so that those go out as batches of many, and checks that every call
// got its own session's answer and wrote its own session.
func TestBatch_EachCallGetsItsOwnAnswer(t *testing.T) {
	if server == nil {
		unavailable(t, "Redis server", serverErr)
	}
	c := singleClient(t, server.Addr(), rueidis.ClientOption{})
	s, err := rueidisbackend.New(c, rueidisbackend.Options{Prefix: uniquePrefix()})
	if err != nil {
		t.Fatal(err)
	}
	const callers = 40
	var (
		held      atomic.Int32 // batches held until release is closed
		heldCalls atomic.Int32 // the calls in them
		mu        sync.Mutex
		largest   int
		release   chan struct{}
	)
	rueidisbackend.SetBatchHook(s, func(calls int) {
		mu.Lock()
		largest = max(largest, calls)
		r := release
		mu.Unlock()
		if held.Add(1) <= rueidisbackend.MaxInFlight {
			heldCalls.Add(int32(calls))
			<-r
		}
	})
	token := func(i int) string { return "batch-" + strconv.Itoa(i) }
	user := func(i int) string { return "user-" + strconv.Itoa(i) }

	// UpdateToken, RefreshSession, AddToCart and IncrementCart each fill
	// their batcher.
	phase := func(name string, call func(i int) error) {
		t.Helper()
		held.Store(0)
		heldCalls.Store(0)
		mu.Lock()
		largest = 0
		release = make(chan struct{})
		mu.Unlock()
		var wg sync.WaitGroup
		errs := make([]error, callers)
		for i := range callers {
			wg.Go(func() { errs[i] = call(i) })
		}
		// Nothing else can be sent while the first batches (those of the
		// callers that came first, one or more each) are held: give the
		// other callers time to queue, without assuming how long they take.
		waitFor(t, func() bool { return queued(s)+int(heldCalls.Load()) == callers })
		mu.Lock()
		close(release)
		mu.Unlock()
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("%s(%d) = %v", name, i, err)
			}
		}
		mu.Lock()
		if largest < 2 {
			t.Errorf("%s: largest batch = %d calls, want several", name, largest)
		}
		mu.Unlock()
	}
	phase("UpdateToken", func(i int) error { return s.UpdateToken(bg, token(i), user(i), "item-"+strconv.Itoa(i)) })
	phase("RefreshSession", func(i int) error {
		u, ok, err := s.RefreshSession(bg, token(i), "other-"+strconv.Itoa(i))
		if err == nil && (!ok || u != user(i)) {
			t.Errorf("RefreshSession(%d) = %q, %v; want %q, true", i, u, ok, user(i))
		}
		return err
	})
	phase("AddToCart", func(i int) error { return s.AddToCart(bg, token(i), "item-"+strconv.Itoa(i), i+1) })
	phase("IncrementCart", func(i int) error {
		n, err := s.IncrementCart(bg, token(i), "item-"+strconv.Itoa(i), 2)
		if err == nil && n != i+3 {
			t.Errorf("IncrementCart(%d) = %d; want %d", i, n, i+3)
		}
		return err
	})

	for i := range callers {
		recent, err := s.RecentItems(bg, token(i))
		if want := []string{"other-" + strconv.Itoa(i), "item-" + strconv.Itoa(i)}; err != nil || !cmp.Equal(recent, want) {
			t.Errorf("RecentItems(%d) = %q, %v; want %q", i, recent, err, want)
		}
		cart, err := s.Cart(bg, token(i))
		if want := map[string]int{"item-" + strconv.Itoa(i): i + 3}; err != nil || !cmp.Equal(cart, want) {
			t.Errorf("Cart(%d) = %v, %v; want %v", i, cart, err, want)
		}
	}
	// The batches wrote the index and the view counts too.
	if n, err := s.SessionCount(bg); err != nil || n != callers {
		t.Errorf("SessionCount() = %d, %v; want %d", n, err, callers)
	}
	top, err := s.TopItems(bg, 3*callers)
	if err != nil || len(top) != 2*callers {
		t.Fatalf("TopItems(%d) = %d items, %v; want %d", 3*callers, len(top), err, 2*callers)
	}
	for _, v := range top {
		if v.Views != 1 {
			t.Errorf("TopItems: %s has %v views, want 1", v.Item, v.Views)
		}
	}
}

func queued(s *rueidisbackend.Store) int { return rueidisbackend.Queued(s) }

// evalCalls returns how many EVAL commands the private server has run.
func evalCalls(t *testing.T) int {
	t.Helper()
	n, err := server.Calls("eval")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitFor polls cond until it holds, failing t if it does not within a
// watchdog's 30 seconds (a hang, not a slow machine).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30 s")
		}
		time.Sleep(time.Millisecond)
	}
}

var dummyViews atomic.Int64

// gatedStore is a Store on the private server whose batches, while on is
// set, each stop before they are sent: the batch's release channel comes
// out of entered, and closing it sends the batch.
type gatedStore struct {
	s       *rueidisbackend.Store
	on      atomic.Bool
	entered chan chan struct{}
	held    atomic.Int64 // the number of calls of the batch that entered last
}

func newGatedStore(t *testing.T) *gatedStore { return newGatedStoreWith(t, rueidisbackend.Options{}) }

// newGatedStoreWith is newGatedStore with opts (and a prefix of its own).
func newGatedStoreWith(t *testing.T, opts rueidisbackend.Options) *gatedStore {
	t.Helper()
	if server == nil {
		unavailable(t, "Redis server", serverErr)
	}
	c := singleClient(t, server.Addr(), rueidis.ClientOption{})
	opts.Prefix = uniquePrefix()
	s, err := rueidisbackend.New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedStore{s: s, entered: make(chan chan struct{})}
	rueidisbackend.SetBatchHook(s, func(calls int) {
		if !g.on.Load() {
			return
		}
		r := make(chan struct{})
		g.held.Store(int64(calls))
		g.entered <- r
		<-r
	})
	return g
}

// leftInFlight runs, with the gate on, a batch holding call (made with a
// context it cancels once the batch is on its way, so that call leaves)
// and another call, other, that waits for its answer; between call's
// leaving and the batch's sending it runs between. It returns call's error
// once other has its answer, i.e. once the batch has run.
func (g *gatedStore) leftInFlight(t *testing.T, dummy func(i int) error, call func(ctx context.Context) error, other func() error, between func()) error {
	t.Helper()
	s := g.s
	g.on.Store(true)
	// Two batches of one call each take the two places in flight.
	dummies := make(chan error, 2)
	var releases []chan struct{}
	for i := range 2 {
		go func() { dummies <- dummy(i) }()
		releases = append(releases, <-g.entered)
	}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	callDone, otherDone := make(chan error, 1), make(chan error, 1)
	go func() { callDone <- call(ctx) }()
	waitFor(t, func() bool { return queued(s) == 1 })
	go func() { otherDone <- other() }()
	waitFor(t, func() bool { return queued(s) == 2 })
	// The first dummy's batch goes; its sender then takes both calls.
	close(releases[0])
	both := <-g.entered
	cancel() // call leaves while its batch is on its way
	callErr := <-callDone
	if between != nil {
		between()
	}
	g.on.Store(false)
	close(both)
	close(releases[1])
	if err := <-otherDone; err != nil {
		t.Fatalf("the other call of the batch: %v", err)
	}
	for range 2 {
		if err := <-dummies; err != nil {
			t.Fatalf("dummy refresh: %v", err)
		}
	}
	return callErr
}

// TestBatch_WriteWhoseCallerLeftInFlightIsReadBack: a write whose caller
// gives up while its batch is on its way still runs on the server (the
// batch goes on for the other calls in it), so the process reads it back,
// not the session as the client-side cache still holds it. A read made
// before the batch runs (the visitor's next request, say) finds the
// session as it was on the server, and must not stand for what it holds
// after. Whether a read is stale depends on whether the invalidation has
// arrived, so each write counts stale reads over many rounds.
func TestBatch_WriteWhoseCallerLeftInFlightIsReadBack(t *testing.T) {
	t.Parallel()
	const rounds = 300
	// view.lua takes the visits the process can decide (see
	// RefreshSession); with TouchEvery negative every visit is left to
	// refresh.lua or update.lua.
	everyVisit := rueidisbackend.Options{TouchEvery: -1}
	refresh := func(ctx context.Context, s *rueidisbackend.Store, tok string, round int) error {
		_, _, err := s.RefreshSession(ctx, tok, fmt.Sprintf("item-%d", round))
		return err
	}
	refreshDummy := func(s *rueidisbackend.Store, i int) error {
		_, _, err := s.RefreshSession(bg, fmt.Sprintf("dummy-%d", i), fmt.Sprintf("view-%d", dummyViews.Add(1)))
		return err
	}
	firstRecent := func(s *rueidisbackend.Store) (any, error) {
		recent, err := s.RecentItems(bg, "tok-a")
		if len(recent) == 0 {
			return "", err
		}
		return recent[0], err
	}
	itemOf := func(round int) any { return fmt.Sprintf("item-%d", round) }
	for _, tc := range []struct {
		name    string
		opts    rueidisbackend.Options
		between bool // read while the batch is held
		dummy   func(s *rueidisbackend.Store, i int) error
		write   func(ctx context.Context, s *rueidisbackend.Store, tok string, round int) error
		read    func(s *rueidisbackend.Store) (any, error) // of tok-a
		want    func(round int) any
	}{
		// Ten minutes: the rounds must all run within TouchEvery of the
		// sessions' start, or a call would leave view.lua for refresh.lua,
		// whose batches the gate does not count on.
		{name: "RefreshSession", opts: rueidisbackend.Options{TouchEvery: 10 * time.Minute}, dummy: refreshDummy, write: refresh, read: firstRecent, want: itemOf},
		{name: "RefreshSessionTouchingEveryVisit", opts: everyVisit, dummy: refreshDummy, write: refresh, read: firstRecent, want: itemOf},
		{
			name:    "UpdateToken",
			opts:    everyVisit,
			between: true,
			dummy: func(s *rueidisbackend.Store, i int) error {
				return s.UpdateToken(bg, fmt.Sprintf("dummy-%d", i), "user-start", "")
			},
			write: func(ctx context.Context, s *rueidisbackend.Store, tok string, round int) error {
				user := "user-start"
				if tok == "tok-a" {
					user = fmt.Sprintf("user-%d", round)
				}
				return s.UpdateToken(ctx, tok, user, "")
			},
			read: func(s *rueidisbackend.Store) (any, error) {
				user, _, err := s.CheckToken(bg, "tok-a")
				return user, err
			},
			want: func(round int) any { return fmt.Sprintf("user-%d", round) },
		},
		{
			name:    "AddToCart",
			between: true,
			dummy: func(s *rueidisbackend.Store, i int) error {
				return s.AddToCart(bg, fmt.Sprintf("dummy-%d", i), "x", int(dummyViews.Add(1)%100)+1)
			},
			write: func(ctx context.Context, s *rueidisbackend.Store, tok string, round int) error {
				return s.AddToCart(ctx, tok, "item", round+1)
			},
			read: func(s *rueidisbackend.Store) (any, error) {
				cart, err := s.Cart(bg, "tok-a")
				return cart["item"], err
			},
			want: func(round int) any { return round + 1 },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGatedStoreWith(t, tc.opts)
			s := g.s
			for _, tok := range []string{"tok-a", "tok-b", "dummy-0", "dummy-1"} {
				if err := s.UpdateToken(bg, tok, "user-start", ""); err != nil {
					t.Fatal(err)
				}
			}
			read := func() any {
				got, err := tc.read(s)
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			stale := 0
			for i := range rounds {
				read() // cache the session as it is
				var between func()
				if tc.between {
					between = func() { read() }
				}
				err := g.leftInFlight(t, func(j int) error { return tc.dummy(s, j) },
					func(ctx context.Context) error { return tc.write(ctx, s, "tok-a", i) },
					func() error { return tc.write(bg, s, "tok-b", i) },
					between)
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("round %d: %s that left = %v, want context.Canceled", i, tc.name, err)
				}
				if got, want := read(), tc.want(i); got != want {
					stale++
					if stale == 1 {
						t.Errorf("round %d: read after the batch ran = %v, want %v (the %s ran on the server)", i, got, want, tc.name)
					}
				}
			}
			if stale > 0 {
				t.Errorf("%d of %d reads after a %s that left its batch were stale", stale, rounds, tc.name)
			}
		})
	}
}

// TestBatch_ScriptFlushRunsEachCallOnce: after SCRIPT FLUSH, batches of
// IncrementCart calls, one of them holding many calls, are answered
// NOSCRIPT and sent again as EVAL: every call runs exactly once. The gate
// holds the first two batches (one call each) so that the rest queue up,
// lets the first go so that the rest leave as one batch, and holds that
// batch and the second while the scripts are flushed; then it lets the
// large batch go alone, which must be answered NOSCRIPT and sent once as
// EVAL (counted with INFO commandstats).
func TestBatch_ScriptFlushRunsEachCallOnce(t *testing.T) {
	// Without a client-side cache, so that no logout marks' tracker sends
	// scripts of its own (see tracker.go) while the EVALs are counted.
	g := newGatedStoreWith(t, rueidisbackend.Options{CacheTTL: -1})
	s := g.s
	admin := newClient(t, rueidis.ClientOption{InitAddress: []string{server.Addr()}, ForceSingleClient: true, DisableCache: true})
	const tokens, calls = 4, 50
	for i := range tokens {
		if err := s.UpdateToken(bg, fmt.Sprintf("flush-%d", i), "u", ""); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 5 {
		errs := make(chan error, tokens*calls)
		call := func(i int) {
			_, err := s.IncrementCart(bg, fmt.Sprintf("flush-%d", i%tokens), "item", 1)
			errs <- err
		}
		g.on.Store(true)
		go call(0)
		first := <-g.entered
		go call(1)
		second := <-g.entered
		for i := 2; i < tokens*calls; i++ {
			go call(i)
		}
		waitFor(t, func() bool { return queued(s) == tokens*calls-2 })
		close(first)
		third := <-g.entered
		if n := g.held.Load(); n != tokens*calls-2 {
			t.Fatalf("round %d: the batch after the first two holds %d calls, want %d", round, n, tokens*calls-2)
		}
		if err := admin.Do(bg, admin.B().ScriptFlush().Build()).Error(); err != nil {
			t.Fatal(err)
		}
		g.on.Store(false)
		evals := evalCalls(t)
		close(third)
		for range tokens*calls - 1 { // the first call's and the large batch's
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if n := evalCalls(t) - evals; n != 1 {
			t.Fatalf("round %d: the large batch was sent as EVAL %d times after the flush, want once", round, n)
		}
		close(second)
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		for i := range tokens {
			cart, err := s.Cart(bg, fmt.Sprintf("flush-%d", i))
			if err != nil || cart["item"] != (round+1)*calls {
				t.Fatalf("round %d: Cart(flush-%d) = %v, %v; want item: %d", round, i, cart, err, (round+1)*calls)
			}
		}
	}
}
