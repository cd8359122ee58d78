package rueidisbackend

import (
	"context"
	"testing"
	"time"
)

const tableLogin = "1767366000000 1767367800000 alice"

// TestSessionTable_AReadBegunBeforeAChangeIsNotStored: a session read
// while its shard heard of a change (the server's message, this process's
// write, a flush, tracking stopping) may be the old one, and is not
// stored; one read undisturbed is, and any of the changes drops it.
func TestSessionTable_AReadBegunBeforeAChangeIsNotStored(t *testing.T) {
	mr, c := miniredisServer(t)
	tb := &tracker{prefix: "p:logoutmark:{", sessions: newSessionTable("p:session:{", DefaultSessionTableBytes), ttl: time.Minute}
	key := "p:session:{t1}"
	r := recordOf(key)
	mr.HSet(key, "login", tableLogin, "recent", "a b")
	s := &store{tracker: tb}
	for _, change := range []struct {
		name string
		do   func()
	}{
		{"its invalidation", func() { tb.forgetKey(key) }},
		{"this process's write", func() { s.sessionWritten(key, false) }},
		{"this process's delete", func() { s.sessionWritten(key, true) }},
		{"a script's reply", func() { s.sessionHolds(key, nil, true) }},
		{"a flush", func() { tb.invalidated(nil) }},
		{"tracking stopping", func() { tb.setConn(nil, 0, nil); tb.setConn(fakeConn{c: c}, 1, nil) }},
	} {
		tb.setConn(fakeConn{c: c, midway: change.do}, 1, nil)
		e, found, ok, err := tb.readSession(context.Background(), key, r)
		if !ok || !found || err != nil || e.l.user != "alice" || e.recent != "a b" {
			t.Fatalf("%s: read = %+v, %v, %v, %v; want alice's session", change.name, e, found, ok, err)
		}
		if _, held := tb.session(r); held {
			t.Errorf("%s: a session read while it changed was stored", change.name)
		}
		tb.setConn(fakeConn{c: c}, 1, nil)
		if _, _, ok, _ := tb.readSession(context.Background(), key, r); !ok {
			t.Fatalf("%s: an undisturbed read failed", change.name)
		}
		if e, held := tb.session(r); !held || e.l.user != "alice" {
			t.Fatalf("%s: after an undisturbed read the table holds %+v, %v; want alice's session", change.name, e, held)
		}
		change.do()
		if _, held := tb.session(r); held {
			t.Errorf("%s: the session is still served after it", change.name)
		}
	}
}

// TestSessionTable_AbsentSessionsAreNotStored: a token without a session
// (or with a login this version cannot read) is answered, and not stored,
// so that made-up tokens fill nothing.
func TestSessionTable_AbsentSessionsAreNotStored(t *testing.T) {
	mr, c := miniredisServer(t)
	tb := &tracker{prefix: "p:logoutmark:{", sessions: newSessionTable("p:session:{", DefaultSessionTableBytes), ttl: time.Minute}
	tb.setConn(fakeConn{c: c}, 1, nil)
	mr.HSet("p:session:{old}", "login", "not a login")
	for _, key := range []string{"p:session:{none}", "p:session:{old}"} {
		e, found, ok, err := tb.readSession(context.Background(), key, recordOf(key))
		if found || !ok || err != nil || e != (sessionEntry{}) {
			t.Fatalf("%s: read = %+v, %v, %v, %v; want no session", key, e, found, ok, err)
		}
	}
	for i := range tb.sessions.shards {
		if n := len(tb.sessions.shards[i].m); n != 0 {
			t.Fatalf("shard %d holds %d sessions", i, n)
		}
	}
}

// TestSessionTable_NotTrackingReadsNothing: without a tracking connection
// the table neither serves nor reads, and the caller reads otherwise.
func TestSessionTable_NotTrackingReadsNothing(t *testing.T) {
	var nilTable *tracker
	if _, _, ok, _ := nilTable.readSession(context.Background(), "k", recordOf("k")); ok {
		t.Fatal("a Store without a tracker read a session from it")
	}
	nilTable.forgetSession(recordOf("k")) // must not panic
	tb := &tracker{prefix: "p:logoutmark:{", sessions: newSessionTable("p:session:{", DefaultSessionTableBytes), ttl: time.Minute}
	if _, _, ok, _ := tb.readSession(context.Background(), "k", recordOf("k")); ok {
		t.Fatal("a table without a connection read a session")
	}
}

// TestSessionTable_InvalidationsNameSessions: an invalidation drops the
// session its key names, and only that one.
func TestSessionTable_InvalidationsNameSessions(t *testing.T) {
	tb := &tracker{prefix: "p:logoutmark:{", sessions: newSessionTable("p:session:{", DefaultSessionTableBytes), probe: "p:logoutprobe:{x}", ttl: time.Minute}
	tb.live.Store(true)
	keys := []string{"p:session:{a}", "p:session:{b}", "p:session:{c}"}
	for _, k := range keys {
		tb.sessions.shard(recordOf(k)).put(recordOf(k), sessionEntry{until: time.Now().Add(time.Minute)}, tb.sessions.share)
	}
	for _, k := range []string{"p:session:{b}", "q:session:{a}", "p:sessions:{c}", "p:session:{z}"} {
		if tb.forgetKey(k) {
			t.Errorf("%s taken for the probe", k)
		}
	}
	for _, k := range keys {
		if _, held := tb.session(recordOf(k)); held == (k == "p:session:{b}") {
			t.Errorf("%s held: %v after the invalidation", k, held)
		}
	}
}

// TestSessionTable_ASessionLastsTheTTL: a session no invalidation dropped
// is served for the TTL at most, as a value in the client-side cache is.
func TestSessionTable_ASessionLastsTheTTL(t *testing.T) {
	mr, c := miniredisServer(t)
	tb := &tracker{prefix: "p:logoutmark:{", sessions: newSessionTable("p:session:{", DefaultSessionTableBytes), ttl: 20 * time.Millisecond}
	tb.setConn(fakeConn{c: c}, 1, nil)
	mr.HSet("p:session:{t}", "login", tableLogin)
	r := recordOf("p:session:{t}")
	if _, found, _, _ := tb.readSession(context.Background(), "p:session:{t}", r); !found {
		t.Fatal("no session read")
	}
	if _, held := tb.session(r); !held {
		t.Fatal("the session read was not stored")
	}
	time.Sleep(30 * time.Millisecond)
	if _, held := tb.session(r); held {
		t.Fatal("a session served past its TTL")
	}
}

// TestSessionTable_AShardHoldsItsShare: a shard that would hold more than
// its share drops sessions at random, never the one stored last, and
// counts its bytes right.
func TestSessionTable_AShardHoldsItsShare(t *testing.T) {
	var sh sessionShard
	const share = 1 << 16
	held := func() (sum int) {
		for _, e := range sh.m {
			sum += e.bytes
		}
		return sum
	}
	for i := range 100 {
		r := record{uint64(i), 7}
		sh.put(r, sessionEntry{l: login{user: "u"}, bytes: share / 5}, share)
		if _, ok := sh.m[r]; !ok {
			t.Fatalf("put %d: the session stored last was dropped", i)
		}
		if sum := held(); sum != sh.bytes || sh.bytes > share {
			t.Fatalf("put %d: the shard counts %d bytes, holds %d, share %d", i, sh.bytes, sum, share)
		}
	}
	if n := len(sh.m); n < 3 {
		t.Fatalf("the shard holds %d sessions of a fifth of its share each; want at least 3", n)
	}
	sh.put(record{0, 7}, sessionEntry{bytes: 10}, share)
	sh.put(record{0, 7}, sessionEntry{bytes: 10}, share) // replacing counts once
	if sum := held(); sum != sh.bytes {
		t.Fatalf("after replacing: the shard counts %d bytes, holds %d", sh.bytes, sum)
	}
}

// TestSessionTable_AnEntryCountsItsStrings: a session read counts its
// login's and recent items' bytes besides sessionEntryBytes.
func TestSessionTable_AnEntryCountsItsStrings(t *testing.T) {
	mr, c := miniredisServer(t)
	tb := &tracker{prefix: "p:logoutmark:{", sessions: newSessionTable("p:session:{", DefaultSessionTableBytes), ttl: time.Minute}
	tb.setConn(fakeConn{c: c}, 1, nil)
	mr.HSet("p:session:{t}", "login", tableLogin, "recent", "kettle teapot")
	e, found, _, err := tb.readSession(context.Background(), "p:session:{t}", recordOf("p:session:{t}"))
	if !found || err != nil {
		t.Fatalf("read = %v, %v; want a session", found, err)
	}
	if want := sessionEntryBytes + len(tableLogin) + len("kettle teapot"); e.bytes != want {
		t.Fatalf("the entry counts %d bytes, want %d", e.bytes, want)
	}
}

// TestSessionTable_Off: with a negative SessionTableBytes the table holds
// nothing and reads nothing.
func TestSessionTable_Off(t *testing.T) {
	mr, c := miniredisServer(t)
	tb := &tracker{prefix: "p:logoutmark:{", sessions: newSessionTable("p:session:{", -1), ttl: time.Minute}
	tb.setConn(fakeConn{c: c}, 1, nil)
	mr.HSet("p:session:{t}", "login", tableLogin)
	if _, _, ok, _ := tb.readSession(context.Background(), "p:session:{t}", recordOf("p:session:{t}")); ok {
		t.Fatal("a table that is off read a session")
	}
}

// TestSessionTable_SmallTables: a table of a few bytes holds a session a
// shard, not none; one of no bytes holds none.
func TestSessionTable_SmallTables(t *testing.T) {
	for _, tc := range []struct{ bytes, share int }{{-1, 0}, {0, 0}, {1, 1}, {255, 1}, {256, 1}, {257, 2}, {DefaultSessionTableBytes, DefaultSessionTableBytes / sessionShards}} {
		if got := newSessionTable("p:", tc.bytes).share; got != tc.share {
			t.Errorf("newSessionTable(%d).share = %d, want %d", tc.bytes, got, tc.share)
		}
	}
}
