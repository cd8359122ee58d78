package rueidisbackend_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// TestCleanSessions_RoundTrips pins the cost of a pass on a single server.
// Each session is started and refreshed a millisecond later, so that its
// index entry lags behind its stamp, as the entry of every session
// refreshed since its login was last written does. A pass must delete such
// a session at first sight when the pass takes it anyway, not move its
// entry up and read it again, and must send each round's deletions
// together with the next round's read. Users' indexes are left to their
// lifetime pruning: a pass that also settled them would take a round trip
// more. Reading every session twice, or one round trip per step, fails the
// trip counts.
func TestCleanSessions_RoundTrips(t *testing.T) {
	const sessions = 2500 // three rounds of at most 1,000
	tests := []struct {
		name       string
		users      bool
		keep, max  int
		trips      int
		firstKept  int // sessions from this one on survive
		wantRemove int
	}{
		// Rounds of 1,000, 1,000 and 500: a read, then each round's
		// deletions with the next round's read.
		{"guests, keep none", false, 0, sessions, 4, sessions, sessions},
		// The same: sessions with users cost nothing more.
		{"users, keep none", true, 0, sessions, 4, sessions, sessions},
		// The pass takes sessions 0 to 1499; the newest it may take is
		// session 1499's entry, and session 1499's stamp, a millisecond
		// later, lies beyond it: its entry is moved up in the second
		// round, and a third round, read on its own, deletes it.
		{"guests, keep 1000", false, 1000, 1500, 5, 1500, 1500},
	}
	for _, tg := range targets[:2] { // a single server; a cluster cleans session by session
		t.Run(tg.name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
					inner, prefix := tg.client(t, rueidis.ClientOption{})
					c := &countingClient{Client: inner}
					s := mustNew(t, c, rueidisbackend.Options{Prefix: prefix, Clock: clock})
					token := func(i int) string { return fmt.Sprintf("%032x", i) }
					user := func(i int) string {
						if !tc.users {
							return ""
						}
						return fmt.Sprintf("user-%d", i%100)
					}
					// A first pass, so that the server knows the scripts:
					// sending one again as EVAL would be a round trip more.
					for i := range 3 {
						if _, err := s.StartSession(bg, "warm-up-"+token(i), user(i)); err != nil {
							t.Fatal(err)
						}
					}
					if n, err := s.CleanSessions(bg, 0, 10); n != 3 || err != nil {
						t.Fatalf("CleanSessions(0, 10) = %d, %v; want 3, nil", n, err)
					}
					for i := range sessions {
						if _, err := s.StartSession(bg, token(i), user(i)); err != nil {
							t.Fatal(err)
						}
						clock.Advance(time.Millisecond)
						if _, ok, err := s.RefreshSession(bg, token(i), ""); !ok || err != nil {
							t.Fatalf("RefreshSession(%d) = %v, %v; want true, nil", i, ok, err)
						}
						clock.Advance(time.Millisecond)
					}
					c.mu.Lock()
					c.trips = 0
					c.mu.Unlock()
					n, err := s.CleanSessions(bg, tc.keep, tc.max)
					if n != tc.wantRemove || err != nil {
						t.Fatalf("CleanSessions(%d, %d) = %d, %v; want %d, nil", tc.keep, tc.max, n, err, tc.wantRemove)
					}
					c.mu.Lock()
					trips := c.trips
					c.mu.Unlock()
					if trips != tc.trips {
						t.Errorf("CleanSessions(%d, %d) took %d round trips, want %d", tc.keep, tc.max, trips, tc.trips)
					}
					for i := range sessions {
						_, ok, err := s.CheckToken(bg, token(i))
						if err != nil || ok != (i >= tc.firstKept) {
							t.Fatalf("CheckToken(session %d) = %v, %v after cleaning; want %v, nil", i, ok, err, i >= tc.firstKept)
						}
					}
					if tc.users {
						for u := range 100 {
							if got, err := s.UserSessions(bg, user(u)); len(got) != 0 || err != nil {
								t.Fatalf("UserSessions(%s) = %v, %v after cleaning; want none", user(u), got, err)
							}
						}
						// Only the users' indexes are left, listing sessions
						// that are gone, until a lifetime passes.
						keys, err := c.Do(bg, c.B().Keys().Pattern(prefix+"*").Build()).AsStrSlice()
						if err != nil {
							t.Fatal(err)
						}
						for _, k := range keys {
							if !strings.HasPrefix(k, prefix+"user:{") {
								t.Errorf("key %q left after cleaning every session; want only users' indexes", k)
							}
						}
					}
				})
			}
		})
	}
}
