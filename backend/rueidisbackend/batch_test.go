package rueidisbackend_test

import (
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
	c := newClient(t, rueidis.ClientOption{InitAddress: []string{server.Addr()}, ForceSingleClient: true})
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
