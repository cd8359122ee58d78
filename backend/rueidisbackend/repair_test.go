package rueidisbackend_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// TestRepair_MendsWhatACrashLeaves plants on a cluster what a process that
// crashed between the steps of its calls, or a master that lost its last
// writes, leaves: a session without its index entry, a session missing
// from its user's index, and an index entry without a session. One repair
// mends all three, and a second finds nothing left.
func TestRepair_MendsWhatACrashLeaves(t *testing.T) {
	tg := clusterTarget(t)
	clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
	c, prefix := tg.client(t, rueidis.ClientOption{})
	prefix += "glob*?[x]\\:" // SCAN's pattern characters must match themselves
	s := mustNew(t, c, rueidisbackend.Options{Prefix: prefix, Clock: clock})
	for _, tok := range []string{"a", "b", "c"} {
		if created, err := s.StartSession(bg, tok, "user-"+tok); !created || err != nil {
			t.Fatalf("StartSession(%q) = %v, %v", tok, created, err)
		}
		clock.Advance(time.Millisecond)
	}
	id := retail.SessionID
	index := indexKey(prefix)
	for _, cmd := range [][]string{
		{"ZREM", index, id("a")},                                                     // a: not indexed
		{"ZREM", userKey(prefix, "user-b"), id("b")},                                 // b: not in its user's index
		{"ZADD", index, "1", id("ghost")},                                            // an old entry without a session
		{"ZADD", index, strconv.FormatInt(clock.Now().UnixMilli(), 10), id("young")}, // a young one: an update in flight
	} {
		if err := c.Do(bg, c.B().Arbitrary(cmd[0]).Keys(cmd[1]).Args(cmd[2:]...).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.SessionCount(bg); n != 4 || err != nil {
		t.Fatalf("SessionCount before repair = %d, %v; want 4 (2 indexed sessions and 2 strays)", n, err)
	}

	if n, err := s.RepairSessions(bg); n != 3 || err != nil {
		t.Errorf("RepairSessions() = %d, %v; want 3, nil", n, err)
	}
	indexed, err := c.Do(bg, c.B().Zrange().Key(index).Min("0").Max("-1").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(indexed)
	want := []string{id("a"), id("b"), id("c"), id("young")}
	slices.Sort(want)
	if !slices.Equal(indexed, want) {
		t.Errorf("index after repair = %q, want [a b c young]: the old stray removed, the young one left to meet its session", indexed)
	}
	if err := c.Do(bg, c.B().Zrem().Key(index).Member(id("young")).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if got, err := s.UserSessions(bg, "user-b"); err != nil || len(got) != 1 || got[0].ID != retail.SessionID("b") {
		t.Errorf("UserSessions(user-b) after repair = %+v, %v; want b's session", got, err)
	}
	if n, err := s.LogoutUser(bg, "user-b"); n != 1 || err != nil {
		t.Errorf("LogoutUser(user-b) after repair = %d, %v; want 1, nil", n, err)
	}
	if n, err := s.RepairSessions(bg); n != 0 || err != nil {
		t.Errorf("second RepairSessions() = %d, %v; want 0, nil", n, err)
	}
	wantWholeKeyspace(t, s, c, prefix)
}

// TestRepair_SingleServerHasNothingToRepair: on one server every call
// writes a session and its entries in one script, so RepairSessions sends
// nothing and reports nothing.
func TestRepair_SingleServerHasNothingToRepair(t *testing.T) {
	for _, tg := range targets[:len(targets)-1] {
		t.Run(tg.name, func(t *testing.T) {
			s, c, prefix := newStore(t, tg, retail.SystemClock{})
			if err := s.UpdateToken(bg, "a", "alice", "item"); err != nil {
				t.Fatal(err)
			}
			// A planted stray stays: only a cluster's calls can leave one.
			if err := c.Do(bg, c.B().Zadd().Key(prefix+"{sessions}:seen").ScoreMember().ScoreMember(1, "ghost").Build()).Error(); err != nil {
				t.Fatal(err)
			}
			if n, err := s.RepairSessions(bg); n != 0 || err != nil {
				t.Errorf("RepairSessions() = %d, %v; want 0, nil", n, err)
			}
			if err := c.Do(bg, c.B().Zscore().Key(prefix+"{sessions}:seen").Member("ghost").Build()).Error(); err != nil {
				t.Errorf("ZSCORE of the planted stray after RepairSessions: %v, want it left for cleaning", err)
			}
		})
	}
}

// TestRepair_RaisesALostLogoutMark: in a cluster a user's logout instant
// and its bucket's mark live on different masters, so a failover can lose
// the mark and keep the instant. Then a session that alice's index missed
// (here: removed from it) outlives her LogoutUser, for a process that has
// not cached the mark; RepairSessions raises the mark again from her
// instant, and the session is over again.
func TestRepair_RaisesALostLogoutMark(t *testing.T) {
	c, prefix := clusterTarget(t).client(t, rueidis.ClientOption{})
	clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
	opts := rueidisbackend.Options{Prefix: prefix, Clock: clock}
	s := mustNew(t, c, opts)
	if err := s.UpdateToken(bg, "missed", "alice", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(bg, c.B().Zrem().Key(userKey(prefix, "alice")).Member(retail.SessionID("missed")).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Millisecond)
	if n, err := s.LogoutUser(bg, "alice"); n != 0 || err != nil {
		t.Fatalf("LogoutUser(alice) = %d, %v; want 0 (the index missed her session), nil", n, err)
	}
	mark := rueidisbackend.LogoutMark(prefix, "alice")
	if err := c.Do(bg, c.B().Del().Key(mark).Build()).Error(); err != nil { // lost with its master
		t.Fatal(err)
	}
	// A process of its own: no cache or record of the mark.
	other := func() *rueidisbackend.Store {
		c, _ := clusterTarget(t).client(t, rueidis.ClientOption{})
		return mustNew(t, c, opts)
	}
	if _, ok, err := other().CheckToken(bg, "missed"); !ok || err != nil {
		t.Fatalf("CheckToken with the mark lost = %v, %v; want the session found (what the repair mends)", ok, err)
	}

	// Two: the session's entry in alice's index (it only says which
	// sessions a later LogoutUser ends) and the mark.
	if n, err := s.RepairSessions(bg); n != 2 || err != nil {
		t.Errorf("RepairSessions() = %d, %v; want 2, nil", n, err)
	}
	if ttl, err := c.Do(bg, c.B().Pttl().Key(mark).Build()).AsInt64(); err != nil || ttl <= 0 {
		t.Errorf("the mark's TTL after repair = %d ms, %v; want one", ttl, err)
	}
	if user, ok, err := other().CheckToken(bg, "missed"); ok || err != nil {
		t.Errorf("CheckToken after the repair = %q, %v, %v; want no session: alice logged out everywhere", user, ok, err)
	}
	if n, err := s.RepairSessions(bg); n != 0 || err != nil {
		t.Errorf("second RepairSessions() = %d, %v; want 0, nil", n, err)
	}
}
