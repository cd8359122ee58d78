package rueidisbackend_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// tableProcesses starts two Stores, A and B, on one real server and
// prefix, A's client-side cache and table holding values for an hour, and
// a session of alice's under token that A serves from its table.
func tableProcesses(t *testing.T, token string) (a, b *rueidisbackend.Store) {
	tg := targets[1]
	a, _, prefix := newStoreWith(t, tg, rueidisbackend.Options{CacheTTL: time.Hour})
	cb, _ := tg.client(t, rueidis.ClientOption{})
	b = mustNew(t, cb, rueidisbackend.Options{Prefix: prefix})
	if _, err := b.StartSession(bg, token, "alice"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		if user, ok, err := a.CheckToken(bg, token); user != "alice" || !ok || err != nil {
			t.Fatalf("CheckToken(%q) = %q, %v, %v; want alice's session", token, user, ok, err)
		}
		return rueidisbackend.SessionHeld(a, token)
	})
	return a, b
}

// TestSessionTable_HearsAnotherProcess: A serves alice's session from its
// table; B changes its user, then logs it out, and A follows each. It
// fails, after 30 s, if the table misses the server's message (it would
// serve the old session for CacheTTL, an hour).
func TestSessionTable_HearsAnotherProcess(t *testing.T) {
	a, b := tableProcesses(t, "tok")
	if err := b.UpdateToken(bg, "tok", "bob", ""); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(t, func() bool {
		user, ok, err := a.CheckToken(bg, "tok")
		if !ok || err != nil {
			t.Fatalf("CheckToken = %v, %v; want a live session", ok, err)
		}
		return user == "bob"
	})
	t.Logf("A served the new user %v after B's UpdateToken returned", time.Since(start))
	waitFor(t, func() bool { return rueidisbackend.SessionHeld(a, "tok") })
	if err := b.Logout(bg, "tok"); err != nil {
		t.Fatal(err)
	}
	ends(t, a, "tok")
}

// TestSessionTable_ReadsItsOwnWrites: a Store that changes or ends a
// session its table holds serves the change from the next call on, though
// the server's message has not arrived (the Store is deaf to them here).
func TestSessionTable_ReadsItsOwnWrites(t *testing.T) {
	for i := range 8 {
		a, _ := tableProcesses(t, "tok")
		rueidisbackend.DeafToSessions(a)
		switch i % 4 {
		case 0:
			if err := a.UpdateToken(bg, "tok", "bob", ""); err != nil {
				t.Fatal(err)
			}
			if user, ok, err := a.CheckToken(bg, "tok"); user != "bob" || !ok || err != nil {
				t.Fatalf("CheckToken right after UpdateToken = %q, %v, %v; want bob", user, ok, err)
			}
		case 1:
			if user, ok, err := a.RefreshSession(bg, "tok", "kettle"); user != "alice" || !ok || err != nil {
				t.Fatalf("RefreshSession = %q, %v, %v; want alice", user, ok, err)
			}
			if items, err := a.RecentItems(bg, "tok"); err != nil || len(items) != 1 || items[0] != "kettle" {
				t.Fatalf("RecentItems right after a view = %v, %v; want [kettle]", items, err)
			}
		case 2:
			if err := a.Logout(bg, "tok"); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := a.CheckToken(bg, "tok"); ok || err != nil {
				t.Fatalf("CheckToken right after Logout = %v, %v; want no session", ok, err)
			}
		case 3:
			if _, err := a.LogoutUser(bg, "alice"); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := a.CheckToken(bg, "tok"); ok || err != nil {
				t.Fatalf("CheckToken right after LogoutUser = %v, %v; want no session", ok, err)
			}
		}
	}
}

// TestSessionTable_ABrokenConnectionServesNoSession: once the connection
// that keeps A's table fresh is killed, A's table serves nothing, a change
// B makes meanwhile reaches A through the client-side cache, and once A
// has dialled again its table serves again.
func TestSessionTable_ABrokenConnectionServesNoSession(t *testing.T) {
	a, b := tableProcesses(t, "tok")
	var id int64
	waitFor(t, func() bool { n, tracking := rueidisbackend.MarkTracking(a); id = n; return tracking })
	c := newClient(t, rueidis.ClientOption{InitAddress: []string{server.Addr()}, DisableCache: true})
	if err := c.Do(bg, c.B().ClientKill().Id(id).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { n, tracking := rueidisbackend.MarkTracking(a); return !tracking || n != id })
	if rueidisbackend.SessionStored(a, "tok") { // no read since: a new connection starts empty too
		t.Fatal("A's table kept a session when its connection broke")
	}
	if err := b.UpdateToken(bg, "tok", "bob", ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		user, ok, err := a.CheckToken(bg, "tok")
		if !ok || err != nil {
			t.Fatalf("CheckToken = %v, %v; want a live session", ok, err)
		}
		return user == "bob" && rueidisbackend.SessionHeld(a, "tok")
	})
}

// TestSessionTable_ARestartedServerEndsWhatItHeld: A serves alice's
// session from its table; the server is killed and comes back empty, as a
// Redis without persistence does after a crash. A stops serving the
// session, and serves from its table again the session B then starts under
// the same token. It fails, after 30 s, if A kept what it held across the
// broken connection (it would serve alice's session for CacheTTL, an hour).
func TestSessionTable_ARestartedServerEndsWhatItHeld(t *testing.T) {
	srv := ownServer(t, "this test restarts it")
	opt := rueidis.ClientOption{InitAddress: []string{srv.Addr()}}
	prefix := uniquePrefix()
	a := mustNew(t, newClient(t, opt), rueidisbackend.Options{Prefix: prefix, CacheTTL: time.Hour})
	b := mustNew(t, newClient(t, opt), rueidisbackend.Options{Prefix: prefix})
	if _, err := b.StartSession(bg, "tok", "alice"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		user, ok, err := a.CheckToken(bg, "tok")
		if user != "alice" || !ok || err != nil {
			t.Fatalf("CheckToken = %q, %v, %v; want alice's session", user, ok, err)
		}
		return rueidisbackend.SessionHeld(a, "tok")
	})
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// Calls may fail while the clients dial again.
	waitFor(t, func() bool { _, ok, err := a.CheckToken(bg, "tok"); return !ok && err == nil })
	t.Logf("A stopped serving the session %v after the server came back", time.Since(start))
	waitFor(t, func() bool { _, err := b.StartSession(bg, "tok", "bob"); return err == nil })
	waitFor(t, func() bool {
		user, ok, err := a.CheckToken(bg, "tok")
		return user == "bob" && ok && err == nil && rueidisbackend.SessionHeld(a, "tok")
	})
}

// lostReplyClient loses, once, the replies of the round trip whose
// commands name key, after passing skip such round trips: they run, and
// the caller gets an error, as when a connection breaks after the server
// took them.
type lostReplyClient struct {
	rueidis.Client
	key  atomic.Pointer[string]
	skip atomic.Int32
}

func (l *lostReplyClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	key := l.key.Load()
	if key == nil || !slices.ContainsFunc(multi, func(c rueidis.Completed) bool { return slices.Contains(c.Commands(), *key) }) ||
		l.skip.Add(-1) >= 0 || !l.key.CompareAndSwap(key, nil) {
		return l.Client.DoMulti(ctx, multi...)
	}
	res := l.Client.DoMulti(ctx, multi...)
	gone, cancel := context.WithCancel(ctx)
	cancel()
	for i := range res {
		res[i] = l.Client.Do(gone, l.Client.B().Ping().Build())
	}
	return res
}

// TestSessionTable_ALostReplyDropsTheSession: a login on a token whose
// session ended, whose reply is lost though the server took it, drops the
// old session from the table: the next CheckToken reads the new one, not
// the old user (whose login, past its deadline, would be checked against
// the new session's last-seen time, and pass). The Store is deaf to the
// server's messages, which would drop it a little later.
func TestSessionTable_ALostReplyDropsTheSession(t *testing.T) {
	c, prefix := targets[1].client(t, rueidis.ClientOption{})
	l := &lostReplyClient{Client: c}
	clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
	a := mustNew(t, l, rueidisbackend.Options{Prefix: prefix, Clock: clock, CacheTTL: time.Hour})
	if _, err := a.StartSession(bg, "tok", "alice"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		if _, ok, err := a.CheckToken(bg, "tok"); !ok || err != nil {
			t.Fatalf("CheckToken = %v, %v; want alice's session", ok, err)
		}
		return rueidisbackend.SessionHeld(a, "tok")
	})
	rueidisbackend.DeafToSessions(a)
	clock.Advance(retail.DefaultIdleTimeout)
	key := sessionKey(prefix, retail.SessionID("tok"))
	l.key.Store(&key)
	if _, err := a.StartSession(bg, "tok", "bob"); err == nil {
		t.Fatal("StartSession whose reply was lost returned no error")
	}
	if user, ok, err := a.CheckToken(bg, "tok"); user != "bob" || !ok || err != nil {
		t.Fatalf("CheckToken after the lost login = %q, %v, %v; want bob's session", user, ok, err)
	}
}

// TestSessionTable_ALostCleaningReplyDropsTheSessions: a cleaning pass
// whose reply is lost, though the server deleted the sessions, drops them
// from the table: the next CheckToken of one of them finds none. The Store
// is deaf to the server's messages, which would drop them a little later.
func TestSessionTable_ALostCleaningReplyDropsTheSessions(t *testing.T) {
	c, prefix := targets[1].client(t, rueidis.ClientOption{})
	l := &lostReplyClient{Client: c}
	clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
	a := mustNew(t, l, rueidisbackend.Options{Prefix: prefix, Clock: clock, CacheTTL: time.Hour})
	for _, token := range []string{"first", "old", "new"} {
		if _, err := a.StartSession(bg, token, "alice"); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Millisecond)
	}
	// A first pass loads the cleaning scripts: a reply lost later must
	// not hide a NOSCRIPT, after which nothing would run.
	if n, err := a.CleanSessions(bg, 2, 10); n != 1 || err != nil {
		t.Fatalf("CleanSessions(keep 2) = %d, %v; want 1 (first)", n, err)
	}
	waitFor(t, func() bool {
		if _, ok, err := a.CheckToken(bg, "old"); !ok || err != nil {
			t.Fatalf("CheckToken(old) = %v, %v; want a live session", ok, err)
		}
		return rueidisbackend.SessionHeld(a, "old")
	})
	rueidisbackend.DeafToSessions(a)
	key := sessionKey(prefix, retail.SessionID("old"))
	l.key.Store(&key)
	if _, err := a.CleanSessions(bg, 1, 10); err == nil {
		t.Fatal("CleanSessions whose reply was lost returned no error")
	}
	if l.key.Load() != nil {
		t.Fatal("no round trip named the old session: nothing was lost")
	}
	if _, ok, err := a.CheckToken(bg, "old"); ok || err != nil {
		t.Fatalf("CheckToken(old) after the lost cleaning = %v, %v; want no session", ok, err)
	}
}

// TestSessionTable_UpdateTokenOfAHeldSessionIsDecidedByTheProcess: the
// book's request reads the session (CheckToken) and then writes the visit
// (UpdateToken); with the session in the table, the process decides the
// visit and sends view.lua. A session the table does not hold, or one of
// another user, is left to update.lua, which reads nothing first.
func TestSessionTable_UpdateTokenOfAHeldSessionIsDecidedByTheProcess(t *testing.T) {
	a, b := tableProcesses(t, "tok")
	var views atomic.Int64
	rueidisbackend.SetViewHook(a, func() { views.Add(1) })
	if err := a.UpdateToken(bg, "tok", "alice", "kettle"); err != nil {
		t.Fatal(err)
	}
	if n := views.Load(); n != 1 {
		t.Fatalf("UpdateToken of a held session: view.lua wrote %d visits, want 1", n)
	}
	if items, err := b.RecentItems(bg, "tok"); err != nil || len(items) != 1 || items[0] != "kettle" {
		t.Fatalf("B's RecentItems = %v, %v; want [kettle]", items, err)
	}
	// Its own write dropped it from A's table.
	if err := a.UpdateToken(bg, "tok", "alice", "teapot"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.CheckToken(bg, "tok"); err != nil {
		t.Fatal(err)
	}
	if err := a.UpdateToken(bg, "tok", "bob", "cup"); err != nil {
		t.Fatal(err)
	}
	if n := views.Load(); n != 1 {
		t.Fatalf("view.lua wrote %d visits, want 1: a session not held, or another user's, is update.lua's", n)
	}
	if items, err := b.RecentItems(bg, "tok"); err != nil || !slices.Equal(items, []string{"cup", "teapot", "kettle"}) {
		t.Fatalf("B's RecentItems after bob's login = %v, %v; want [cup teapot kettle]", items, err)
	}
}
