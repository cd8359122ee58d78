package rueidisbackend_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// TestCleaning_DoesNotStallOnLaggingIndexEntries reproduces the state
// after a failover or a lost write in which the oldest index entries carry
// stamps older than their sessions' own: 300 sessions still being used
// whose entries were pushed back, ahead of 200 idle ones. Cleaning must
// keep the used sessions, move their entries up, and go on to remove the
// idle sessions beyond keep, however many passes that takes.
func TestCleaning_DoesNotStallOnLaggingIndexEntries(t *testing.T) {
	t.Parallel()
	forEachTarget(t, func(t *testing.T, tg target) {
		clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
		s, c, prefix := newStoreWith(t, tg, rueidisbackend.Options{Clock: clock})
		const used, idle = 300, 200
		for i := range idle {
			if _, err := s.StartSession(bg, fmt.Sprintf("idle-%03d", i), ""); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(time.Minute)
		for i := range used {
			if _, err := s.StartSession(bg, fmt.Sprintf("used-%03d", i), ""); err != nil {
				t.Fatal(err)
			}
		}
		// Push the used sessions' entries behind every idle one, as a lost
		// index write leaves them.
		for i := range used {
			token := fmt.Sprintf("used-%03d", i)
			if err := c.Do(bg, c.B().Zadd().Key(indexKey(prefix)).ScoreMember().ScoreMember(float64(i), retail.SessionID(token)).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(time.Minute)

		cleaner, err := retail.NewSessionCleaner(s, retail.SessionCleanerOptions{Keep: used, Batch: 50, Idle: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(bg)
		done := make(chan error, 1)
		go func() { done <- cleaner.Run(ctx) }()
		deadline := time.Now().Add(30 * time.Second) // a hang, not a slow machine
		for {
			n, err := s.SessionCount(bg)
			if err != nil {
				t.Fatal(err)
			}
			if n == used {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the cleaner stalled at %d sessions, want %d", n, used)
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run() = %v", err)
		}
		for i := range used {
			if _, ok, err := s.CheckToken(bg, fmt.Sprintf("used-%03d", i)); err != nil || !ok {
				t.Fatalf("used-%03d = %v, %v after cleaning; want kept", i, ok, err)
			}
		}
		for i := range idle {
			if _, ok, err := s.CheckToken(bg, fmt.Sprintf("idle-%03d", i)); err != nil || ok {
				t.Fatalf("idle-%03d = %v, %v after cleaning; want removed", i, ok, err)
			}
		}
	})
}

// TestViews_AStalledFlushHoldsNoReadPastItsDeadline: while the timer's
// flush of the views waits on a stalled server (DEBUG SLEEP), a call that
// must flush first (FlushViews, ItemRank, TopItems) returns by its own
// deadline, before the server wakes; and the flush it gave up on, which
// the server runs when it wakes, is not sent again: the view is counted
// once. It fails if a flush waits for the running one whatever its
// context, or if a flush cut short by its deadline puts its views back.
func TestViews_AStalledFlushHoldsNoReadPastItsDeadline(t *testing.T) {
	t.Parallel()
	addr, tg := stallable(t)
	const stallFor = 3 * time.Second
	for _, call := range []struct {
		name string
		run  func(ctx context.Context, s *rueidisbackend.Store) error
	}{
		{"FlushViews", func(ctx context.Context, s *rueidisbackend.Store) error { return s.FlushViews(ctx) }},
		{"ItemRank", func(ctx context.Context, s *rueidisbackend.Store) error {
			_, _, err := s.ItemRank(ctx, "item-x")
			return err
		}},
		{"TopItems", func(ctx context.Context, s *rueidisbackend.Store) error {
			_, err := s.TopItems(ctx, 10)
			return err
		}},
	} {
		t.Run(call.name, func(t *testing.T) {
			s, _, _ := newStoreWith(t, tg, rueidisbackend.Options{ViewFlush: 50 * time.Millisecond})
			if err := s.CountView(bg, "warm"); err != nil {
				t.Fatal(err)
			}
			if err := s.FlushViews(bg); err != nil { // the connection is up
				t.Fatal(err)
			}
			st := startStall(t, []string{addr}, stallFor)
			if err := s.CountView(bg, "item-x"); err != nil { // the timer's flush, in 50 ms
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)                // it waits on the server now
			if err := s.CountView(bg, "item-x"); err != nil { // for the call's own flush
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
			err := call.run(ctx, s)
			returned := time.Since(st.began)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s during the stall = %v, want an error matching context.DeadlineExceeded", call.name, err)
			}
			if woke := st.wait(t); returned >= woke {
				t.Errorf("%s returned %v into the stall, after the server woke (%v): it waited for the timer's flush", call.name, returned, woke)
			}
			top, err := s.TopItems(bg, 10)
			if err != nil {
				t.Fatal(err)
			}
			want := []retail.ItemViews{{Item: "item-x", Views: 2}, {Item: "warm", Views: 1}}
			if diff := cmp.Diff(want, top); diff != "" {
				t.Errorf("views after the stall mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestViews_AFlushCutShortByItsDeadlineCountsOnce: a FlushViews whose
// deadline passes while the server stalls (DEBUG SLEEP) may have sent its
// views, which the server then counts when it wakes, or not; the next
// flush sends them again, and they are counted once either way. Three
// stalls, as the command is not always on the wire when the deadline
// passes. It fails if a flush sent again counts twice, or if a flush cut
// short is dropped.
func TestViews_AFlushCutShortByItsDeadlineCountsOnce(t *testing.T) {
	t.Parallel()
	addr, tg := stallable(t)
	for round := range 3 {
		s, _, _ := newStoreWith(t, tg, rueidisbackend.Options{ViewFlush: time.Hour})
		if err := s.CountView(bg, "item-y"); err != nil {
			t.Fatal(err)
		}
		st := startStall(t, []string{addr}, time.Second)
		ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
		err := s.FlushViews(ctx)
		cancel()
		st.wait(t)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("round %d: FlushViews during the stall = %v, want an error matching context.DeadlineExceeded", round, err)
		}
		if err := s.CountView(bg, "item-y"); err != nil {
			t.Fatal(err)
		}
		top, err := s.TopItems(bg, 10) // flushes first
		if want := []retail.ItemViews{{Item: "item-y", Views: 2}}; err != nil || !cmp.Equal(want, top) {
			t.Errorf("round %d: TopItems = %v, %v; want %v", round, top, err, want)
		}
	}
}

// TestViews_AFlushTheServerRefusedIsSentAgain: a flush that the server
// refuses (the counts' key holds another type: WRONGTYPE) is sent again
// with the next flush, and counted once.
func TestViews_AFlushTheServerRefusedIsSentAgain(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target) {
		s, c, prefix := newStoreWith(t, tg, rueidisbackend.Options{ViewFlush: time.Hour})
		viewed := viewedKey(prefix)
		if err := c.Do(bg, c.B().Set().Key(viewed).Value("not a sorted set").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if err := s.CountView(bg, "item-z"); err != nil {
			t.Fatal(err)
		}
		if err := s.FlushViews(bg); err == nil {
			t.Fatal("FlushViews on a key of another type = nil, want the server's error")
		}
		if err := c.Do(bg, c.B().Del().Key(viewed).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		top, err := s.TopItems(bg, 10)
		if want := []retail.ItemViews{{Item: "item-z", Views: 1}}; err != nil || !cmp.Equal(want, top) {
			t.Errorf("TopItems after the refused flush = %v, %v; want %v", top, err, want)
		}
	})
}
