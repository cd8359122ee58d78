package rueidisbackend_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// markProcesses starts two Stores, A and B, on one real server and
// prefix, and a session of alice's that A serves, with her bucket's mark,
// from its table of marks (see tracker.go); her user index misses the
// session, so that only the marks end it.
func markProcesses(t *testing.T) (a, b *rueidisbackend.Store, c rueidis.Client, clock *retail.ManualClock) {
	tg := targets[1]
	clock = retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
	a, c, prefix := newStoreWith(t, tg, rueidisbackend.Options{Clock: clock})
	cb, _ := tg.client(t, rueidis.ClientOption{})
	b = mustNew(t, cb, rueidisbackend.Options{Prefix: prefix, Clock: clock})
	missedSession(t, a, c, prefix, "missed")
	return a, b, c, clock
}

// missedSession logs alice in through s with token, removes the session
// from her user index, and waits until s serves it, and her mark from its
// table.
func missedSession(t *testing.T, s *rueidisbackend.Store, c rueidis.Client, prefix, token string) {
	t.Helper()
	if _, err := s.StartSession(bg, token, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(bg, c.B().Zrem().Key(userKey(prefix, "alice")).Member(retail.SessionID(token)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	servesFromTable(t, s, token)
}

// servesFromTable waits until s serves token's session, and its user's
// mark, from its tables.
func servesFromTable(t *testing.T, s *rueidisbackend.Store, token string) {
	t.Helper()
	waitFor(t, func() bool {
		if _, ok, err := s.CheckToken(bg, token); err != nil || !ok {
			t.Fatalf("CheckToken(%q) = %v, %v; want a live session", token, ok, err)
		}
		return rueidisbackend.MarkHeld(s, "alice") && rueidisbackend.SessionHeld(s, token)
	})
}

// logoutAlice logs alice out everywhere through s, whose clock has moved
// past her sessions' logins; the index misses the sessions it ends.
func logoutAlice(t *testing.T, s *rueidisbackend.Store, clock *retail.ManualClock) {
	t.Helper()
	clock.Advance(time.Millisecond)
	if n, err := s.LogoutUser(bg, "alice"); n != 0 || err != nil {
		t.Fatalf("LogoutUser(alice) = %d, %v; want 0 (the index missed the session), nil", n, err)
	}
}

// ends waits until s stops serving token's session.
func ends(t *testing.T, s *rueidisbackend.Store, token string) {
	t.Helper()
	waitFor(t, func() bool {
		_, ok, err := s.CheckToken(bg, token)
		if err != nil {
			t.Fatal(err)
		}
		return !ok
	})
}

// TestMarks_ATableHearsAnotherProcessRaiseAMark: process A serves alice's
// session and her mark from its table; B logs her out everywhere, and A
// stops serving the session. It fails, after 30 s, if the table misses the
// invalidation (it would serve the old mark for CacheTTL, a minute).
func TestMarks_ATableHearsAnotherProcessRaiseAMark(t *testing.T) {
	a, b, _, clock := markProcesses(t)
	logoutAlice(t, b, clock)
	start := time.Now()
	ends(t, a, "missed")
	t.Logf("A stopped serving the session %v after B's LogoutUser returned", time.Since(start))
}

// TestMarks_ATableReadsItsOwnRaise: a Store that logs a user out serves
// none of the user's sessions the index missed, from the next call on,
// though its table held the user's mark and the server's invalidation may
// not have arrived.
func TestMarks_ATableReadsItsOwnRaise(t *testing.T) {
	for range 20 {
		a, _, _, clock := markProcesses(t)
		logoutAlice(t, a, clock)
		if _, ok, err := a.CheckToken(bg, "missed"); ok || err != nil {
			t.Fatalf("CheckToken right after this process's LogoutUser = %v, %v; want no session", ok, err)
		}
	}
}

// TestMarks_ABrokenConnectionLeavesNoMarkServed: when the connection that
// keeps A's table fresh is killed, A serves no mark from its table, so
// that a LogoutUser made while no connection tracks the marks still ends
// the session A served (through the client-side cache); once A has dialled
// again, its table serves and hears again. It fails, after 30 s, if the
// table keeps serving what it held when its connection broke.
func TestMarks_ABrokenConnectionLeavesNoMarkServed(t *testing.T) {
	tg := targets[1]
	clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
	a, c, prefix := newStoreWith(t, tg, rueidisbackend.Options{Clock: clock})
	cb, _ := tg.client(t, rueidis.ClientOption{})
	b := mustNew(t, cb, rueidisbackend.Options{Prefix: prefix, Clock: clock})
	missedSession(t, a, c, prefix, "missed")
	redial := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(redial) }) }
	t.Cleanup(release)
	rueidisbackend.SetMarkRedialHook(a, func() { <-redial })
	var id int64
	waitFor(t, func() bool { n, tracking := rueidisbackend.MarkTracking(a); id = n; return tracking })
	if err := c.Do(bg, c.B().ClientKill().Id(id).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, tracking := rueidisbackend.MarkTracking(a); return !tracking })
	if rueidisbackend.MarkHeld(a, "alice") {
		t.Fatal("A's table holds alice's mark after its connection broke")
	}
	logoutAlice(t, b, clock) // while no connection tracks the marks
	ends(t, a, "missed")
	if rueidisbackend.MarkHeld(a, "alice") {
		t.Fatal("A's table stored a mark while no connection tracked them")
	}

	release()
	waitFor(t, func() bool { _, tracking := rueidisbackend.MarkTracking(a); return tracking })
	clock.Advance(time.Millisecond)
	missedSession(t, a, c, prefix, "later")
	logoutAlice(t, b, clock)
	ends(t, a, "later")
}

// TestMarks_CloseEndsTheConnection: a Store's Close closes the connection
// that tracks its marks, and its table serves nothing after.
func TestMarks_CloseEndsTheConnection(t *testing.T) {
	a, _, c, _ := markProcesses(t)
	id, tracking := rueidisbackend.MarkTracking(a)
	if !tracking {
		t.Fatal("the table serves while it tracks nothing")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return rueidisbackend.MarkTrackingStopped(a) })
	if rueidisbackend.MarkHeld(a, "alice") {
		t.Fatal("the table holds a mark after Close")
	}
	waitFor(t, func() bool {
		list, err := c.Do(bg, c.B().ClientList().Id().ClientId(id).Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		return !strings.Contains(list, fmt.Sprintf("id=%d ", id))
	})
}

// TestMarks_NoTableWhereItCannotBeKeptFresh: the table gives up for good,
// and the marks are read as before (the conformance suite runs on
// miniredis), on miniredis, which has no client tracking, with a client
// built with DisableCache, and with a client whose writes the tracking
// connection does not hear; in a cluster there is none.
func TestMarks_NoTableWhereItCannotBeKeptFresh(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		client func() (rueidis.Client, string)
	}{
		{"miniredis", func() (rueidis.Client, string) { return targets[0].client(t, rueidis.ClientOption{}) }},
		{"DisableCache", func() (rueidis.Client, string) {
			return targets[1].client(t, rueidis.ClientOption{DisableCache: true})
		}},
		{"unheard", func() (rueidis.Client, string) {
			c, prefix := targets[1].client(t, rueidis.ClientOption{})
			u := &unheardClient{Client: c}
			u.drop.Store(true)
			return u, prefix
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, prefix := tc.client()
			s := mustNew(t, c, rueidisbackend.Options{Prefix: prefix})
			waitFor(t, func() bool { return rueidisbackend.MarkTrackingStopped(s) })
			if _, tracking := rueidisbackend.MarkTracking(s); tracking {
				t.Fatal("the table tracks")
			}
			if _, err := s.StartSession(bg, "tok", "alice"); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := s.CheckToken(bg, "tok"); !ok || err != nil || rueidisbackend.MarkHeld(s, "alice") {
				t.Fatalf("CheckToken = %v, %v, held %v; want a live session and no mark held", ok, err, rueidisbackend.MarkHeld(s, "alice"))
			}
		})
	}
	s, _, _ := newStoreWith(t, targets[2], rueidisbackend.Options{})
	if _, tracking := rueidisbackend.MarkTracking(s); tracking || !rueidisbackend.MarkTrackingStopped(s) {
		t.Fatal("cluster: a table of marks")
	}
}

// unheardClient drops the scripts of the tables' probes while drop is set,
// sending a PING instead: the tracking connection hears nothing of them,
// as one left on a server the client no longer writes to would not.
type unheardClient struct {
	rueidis.Client
	drop atomic.Bool
}

func (u *unheardClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if args := cmd.Commands(); u.drop.Load() && markTracker(args) && args[0] != "CLIENT" {
		return u.Client.Do(ctx, u.Client.B().Ping().Build())
	}
	return u.Client.Do(ctx, cmd)
}

// TestMarks_AConnectionThatHearsNoProbeServesNothing: once the tracking
// connection stops hearing the writes the Store's client makes, within
// about two seconds the table serves nothing, and it serves again once
// they are heard.
func TestMarks_AConnectionThatHearsNoProbeServesNothing(t *testing.T) {
	t.Parallel()
	c, prefix := targets[1].client(t, rueidis.ClientOption{})
	u := &unheardClient{Client: c}
	s := mustNew(t, u, rueidisbackend.Options{Prefix: prefix})
	missedSession(t, s, c, prefix, "tok")
	u.drop.Store(true)
	start := time.Now()
	waitFor(t, func() bool { _, tracking := rueidisbackend.MarkTracking(s); return !tracking })
	took := time.Since(start)
	t.Logf("the table stopped serving %v after its probes went unheard", took)
	if took > 10*time.Second { // probeEvery+probeWait is 2 s: a bound 5 times that keeps this test steady under -race
		t.Errorf("the table stopped serving %v after its probes went unheard, want about 2 s", took)
	}
	if rueidisbackend.MarkHeld(s, "alice") || rueidisbackend.MarkTrackingStopped(s) {
		t.Fatal("the table holds a mark, or gave up for good, after a probe went unheard")
	}
	u.drop.Store(false)
	servesFromTable(t, s, "tok")
}

// TestMarks_AStalledServerLeavesTheTableServing: while the server stalls
// (DEBUG SLEEP) for longer than a probe waits, a logged-in session whose
// session and mark this process holds is still served from memory, as the
// client-side cache serves it: a probe that the server did not take stops
// nothing. It fails if the table stops serving when a probe times out.
func TestMarks_AStalledServerLeavesTheTableServing(t *testing.T) {
	t.Parallel()
	addr, tg := stallable(t)
	const stallFor = 4 * time.Second
	s, _, _ := newStoreWith(t, tg, rueidisbackend.Options{})
	// Tracking before the first call: the mark is then never read through
	// the client-side cache, which would serve it too.
	waitFor(t, func() bool { _, tracking := rueidisbackend.MarkTracking(s); return tracking })
	if _, err := s.StartSession(bg, "tok", "alice"); err != nil {
		t.Fatal(err)
	}
	servesFromTable(t, s, "tok")
	st := startStall(t, []string{addr}, stallFor)
	for time.Since(st.began) < stallFor*3/4 {
		ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
		_, ok, err := s.CheckToken(ctx, "tok")
		cancel()
		if !ok || err != nil {
			t.Fatalf("CheckToken %v into the stall = %v, %v; want the session from memory", time.Since(st.began).Round(time.Millisecond), ok, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if stalled := st.wait(t); stalled < stallFor*9/10 {
		t.Fatalf("DEBUG SLEEP took %v, want about %v: the server did not stall", stalled, stallFor)
	}
}

// TestMarks_ClosingTheClientEndsTheTracker: a Store whose client is closed
// without the Store being closed stops its tracker.
func TestMarks_ClosingTheClientEndsTheTracker(t *testing.T) {
	t.Parallel()
	c, prefix := targets[1].client(t, rueidis.ClientOption{})
	s := mustNew(t, c, rueidisbackend.Options{Prefix: prefix})
	waitFor(t, func() bool { _, tracking := rueidisbackend.MarkTracking(s); return tracking })
	c.Close()
	waitFor(t, func() bool { return rueidisbackend.MarkTrackingStopped(s) })
}
