package rueidisbackend_test

import (
	"fmt"
	"slices"
	"strconv"
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
	t.Parallel()
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
					// The views are kept in the process for the whole test
					// (sent at Close), so that a view window ending during
					// it adds no round trip and no key.
					s := mustNew(t, c, rueidisbackend.Options{Prefix: prefix, Clock: clock, ViewFlush: time.Hour})
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
						// A new item: the stamp is written, the index entry
						// left behind (within TouchEvery).
						if _, ok, err := s.RefreshSession(bg, token(i), "item"); !ok || err != nil {
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

// TestCleanSettle_DeletesBelowTheBoundKeepsTheRest runs a round's script on
// a single server directly (the round reads no stamps from the index):
// with nothing to take but expired sessions it keeps live ones, moving up
// the entry that lags and leaving the others (which is no progress); with
// a reach it deletes every session at or below it, removes old strays and
// leaves young ones.
func TestCleanSettle_DeletesBelowTheBoundKeepsTheRest(t *testing.T) {
	for _, tg := range targets[:2] { // the single-server targets
		t.Run(tg.name, func(t *testing.T) {
			clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
			s, c, prefix := newStore(t, tg, clock)
			index := indexKey(prefix)
			for _, tok := range []string{"a", "b", "c"} {
				if ok, err := s.StartSession(bg, tok, ""); !ok || err != nil {
					t.Fatalf("StartSession(%s) = %v, %v", tok, ok, err)
				}
			}
			clock.Advance(time.Second)
			if _, ok, err := s.RefreshSession(bg, "b", "item"); !ok || err != nil { // a new item: written
				t.Fatalf("RefreshSession(b) = %v, %v", ok, err)
			}
			stamp := func(tok string) string {
				t.Helper()
				v, err := c.Do(bg, c.B().Hget().Key(sessionKey(prefix, retail.SessionID(tok))).Field("seen").Build()).ToString()
				if err != nil {
					t.Fatal(err)
				}
				return strings.Fields(v)[0]
			}
			entry := func(tok string) string {
				t.Helper()
				v, err := c.Do(bg, c.B().Zscore().Key(index).Member(retail.SessionID(tok)).Build()).ToString()
				if err != nil && !rueidis.IsRedisNil(err) {
					t.Fatal(err)
				}
				return v
			}
			score := func(v string) float64 {
				t.Helper()
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
			if score(entry("b")) >= score(stamp("b")) {
				t.Fatalf("b's entry %s does not lag behind its stamp %s: the test needs it to", entry("b"), stamp("b"))
			}

			// Only expired sessions may go: all three are live.
			got, err := rueidisbackend.Settle(s, []string{"a", "b", "c"}, "")
			if err != nil {
				t.Fatal(err)
			}
			want := []any{int64(rueidisbackend.CleanLeft), stamp("b"), int64(rueidisbackend.CleanLeft)}
			if !slices.Equal(got, want) {
				t.Errorf("Settle(a, b, c; no reach) = %v, want %v", got, want)
			}
			if score(entry("b")) != score(stamp("b")) {
				t.Errorf("b's entry = %s, want its stamp %s", entry("b"), stamp("b"))
			}

			// A reach at a's stamp takes a, not c, whose stamp lies above.
			if got, err := rueidisbackend.Settle(s, []string{"a", "c"}, stamp("a")); err != nil ||
				!slices.Equal(got, []any{int64(rueidisbackend.CleanDeleted), int64(rueidisbackend.CleanLeft)}) {
				t.Errorf("Settle(a, c; reach a's stamp) = %v, %v; want [deleted, left]", got, err)
			}

			// Strays: one a minute and more old, one young; "gone" has
			// neither keys nor an entry.
			now := float64(clock.Now().UnixMilli())
			for tok, at := range map[string]float64{"old": now - 2*60*1000, "young": now} {
				if err := c.Do(bg, c.B().Zadd().Key(index).ScoreMember().ScoreMember(at, retail.SessionID(tok)).Build()).Error(); err != nil {
					t.Fatal(err)
				}
			}
			got, err = rueidisbackend.Settle(s, []string{"b", "c", "old", "young", "gone"}, "+inf")
			if err != nil {
				t.Fatal(err)
			}
			want = []any{int64(rueidisbackend.CleanDeleted), int64(rueidisbackend.CleanDeleted),
				int64(rueidisbackend.CleanNoSession), int64(rueidisbackend.CleanYoung), int64(rueidisbackend.CleanNoSession)}
			if !slices.Equal(got, want) {
				t.Errorf("Settle(b, c, strays; reach +inf) = %v, want %v", got, want)
			}
			left, err := c.Do(bg, c.B().Zrange().Key(index).Min("0").Max("-1").Build()).AsStrSlice()
			if err != nil || !slices.Equal(left, []string{retail.SessionID("young")}) {
				t.Errorf("index after the rounds = %q, %v; want only the young stray", left, err)
			}
			if n, err := s.SessionCount(bg); err != nil || n != 1 {
				t.Errorf("SessionCount = %d, %v; want 1 (the young stray's entry)", n, err)
			}
		})
	}
}

// TestCleanSessions_KeepsLiveSessionsWhoseEntriesLookExpired: with keep > 0
// and every index entry below the idle bound, a pass may remove only the
// sessions that are truly expired. An entry lags behind its session's
// stamp (a refresh moves it only when it rewrites the login), so a session
// refreshed since can look expired in the index while it is live.
func TestCleanSessions_KeepsLiveSessionsWhoseEntriesLookExpired(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target) {
		clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
		s, _, _ := newStoreWith(t, tg, rueidisbackend.Options{Clock: clock, IdleTimeout: 30 * time.Minute})
		for _, tok := range []string{"live", "idle"} {
			if ok, err := s.StartSession(bg, tok, ""); !ok || err != nil {
				t.Fatalf("StartSession(%s) = %v, %v", tok, ok, err)
			}
		}
		clock.Advance(14 * time.Minute) // the login's deadline is still more than half an idle timeout away
		if _, ok, err := s.RefreshSession(bg, "live", ""); !ok || err != nil {
			t.Fatalf("RefreshSession(live) = %v, %v", ok, err)
		}
		clock.Advance(17 * time.Minute) // both entries look expired; "live" was seen 17 minutes ago
		if n, err := s.CleanSessions(bg, 10, 100); n != 1 || err != nil {
			t.Errorf("CleanSessions(10, 100) = %d, %v; want 1, nil (the idle session only)", n, err)
		}
		if _, ok, err := s.CheckToken(bg, "live"); !ok || err != nil {
			t.Errorf("CheckToken(live) after cleaning = %v, %v; want a live session", ok, err)
		}
		if _, ok, err := s.CheckToken(bg, "idle"); ok || err != nil {
			t.Errorf("CheckToken(idle) after cleaning = %v, %v; want no session", ok, err)
		}
	})
}

// TestCleanSettle_KeepsASessionRefreshedAsThePassBegins: another process
// whose clock agrees with the cleaner's refreshes a session in the very
// millisecond the pass starts, so its stamp equals the pass's start; a
// pass that may take every entry (below its start) must keep it.
func TestCleanSettle_KeepsASessionRefreshedAsThePassBegins(t *testing.T) {
	for _, tg := range targets[:2] { // the single-server targets
		t.Run(tg.name, func(t *testing.T) {
			clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
			cleaner, c, prefix := newStore(t, tg, clock)
			other := mustNew(t, c, rueidisbackend.Options{Prefix: prefix, Clock: clock})
			if ok, err := other.StartSession(bg, "x", ""); !ok || err != nil {
				t.Fatalf("StartSession(x) = %v, %v", ok, err)
			}
			clock.Advance(time.Second)
			if _, ok, err := other.RefreshSession(bg, "x", "item"); !ok || err != nil { // a new item: written
				t.Fatalf("RefreshSession(x) = %v, %v", ok, err)
			}
			got, err := rueidisbackend.Settle(cleaner, []string{"x"}, "+inf")
			if err != nil {
				t.Fatal(err)
			}
			want := strconv.FormatInt(clock.Now().UnixMilli(), 10) // its entry, a second behind, moved up
			if !slices.Equal(got, []any{want}) {
				t.Errorf("Settle(x; reach +inf) = %v, want [%s]", got, want)
			}
			if _, ok, err := cleaner.CheckToken(bg, "x"); !ok || err != nil {
				t.Errorf("CheckToken(x) = %v, %v; want a live session", ok, err)
			}
		})
	}
}
