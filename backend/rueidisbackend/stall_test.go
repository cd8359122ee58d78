package rueidisbackend_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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
