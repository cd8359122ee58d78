package rueidisbackend

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
)

// TestWithItem_AsTheScriptsDo: the recent items a process computes for
// view.lua are those refresh.lua and update.lua compute, byte for byte,
// whatever the list holds (items that are prefixes of others, or hold
// spaces) and whatever the limit.
func TestWithItem_AsTheScriptsDo(t *testing.T) {
	_, c := miniredisServer(t)
	lua := rueidis.NewLuaScript(statusLua + sessionLua + `
return withItem(ARGV[1] ~= '' and ARGV[1] or nil, ARGV[2], tonumber(ARGV[3])) or false`)
	r := rand.New(rand.NewPCG(1, 2))
	pool := []string{"a", "ab", "ba", "a b", "b", "item-1", "item-10"}
	for range 500 {
		var recent string
		for range r.IntN(8) {
			recent, _ = withItem(recent, pool[r.IntN(len(pool))], 7)
		}
		item, limit := pool[r.IntN(len(pool))], 1+r.IntN(6)
		if r.IntN(10) == 0 {
			item = ""
		}
		want, err := lua.Exec(context.Background(), c, nil, []string{recent, item, i64(int64(limit))}).ToString()
		wantChanged := err == nil
		if rueidis.IsRedisNil(err) {
			err = nil
		}
		if err != nil {
			t.Fatal(err)
		}
		got, changed := withItem(recent, item, limit)
		if changed != wantChanged || (changed && got != want) {
			t.Fatalf("withItem(%q, %q, %d) = %q, %v; the scripts' = %q, %v", recent, item, limit, got, changed, want, wantChanged)
		}
	}
}

// TestViewed_WritesOnlyOverWhatItRead: view.lua writes a visit only over
// the login and recent items the process read; over anything else it
// writes nothing and says so. (A RefreshSession that falls back to
// refresh.lua is TestRefreshSession_ViewOverAStaleReadIsDecidedOnTheServer.)
func TestViewed_WritesOnlyOverWhatItRead(t *testing.T) {
	mr, clock, s, token, key := viewedSession(t)
	ctx := context.Background()
	l, recent, found, err := s.cachedSession(ctx, key)
	if !found || err != nil {
		t.Fatalf("cachedSession = %v, %v", found, err)
	}
	clock.Advance(time.Second)
	if err := s.UpdateToken(ctx, token, "alice", "i2"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.viewed(ctx, key, l, recent, "i3"); ok || err != nil {
		t.Fatalf("viewed over recent items that changed since = %v, %v; want false, nil", ok, err)
	}
	if got := mr.HGet(key, "recent"); got != "i1\ni2\n" {
		t.Fatalf("recent after a refused view = %q, want %q", got, "i1\ni2\n")
	}
	stale := l
	stale.raw = strings.Replace(l.raw, "alice", "alice2", 1)
	_, recent, _, _ = s.cachedSession(ctx, key)
	if ok, err := s.viewed(ctx, key, stale, recent, "i3"); ok || err != nil {
		t.Fatalf("viewed over a login that changed since = %v, %v; want false, nil", ok, err)
	}
	if user, ok, err := s.RefreshSession(ctx, token, "i3"); !ok || err != nil || user != "alice" {
		t.Fatalf("RefreshSession = %q, %v, %v; want alice", user, ok, err)
	}
	if got := mr.HGet(key, "recent"); got != "i1\ni2\ni3\n" {
		t.Fatalf("recent after RefreshSession = %q, want %q", got, "i1\ni2\ni3\n")
	}
	// Past TouchEvery the process decides nothing: the login is due.
	l, recent, _, _ = s.cachedSession(ctx, key)
	clock.Advance(retail.DefaultTouchEvery)
	if ok, err := s.viewed(ctx, key, l, recent, "i4"); ok || err != nil {
		t.Fatalf("viewed of a session due to be touched = %v, %v; want false, nil", ok, err)
	}
}

// TestViewed_WritesTheVisitOverWhatItRead: over the session as the process
// read it, view.lua writes the visit: the recent items with the item, and
// the seen stamp, which never goes back (another process's clock may run
// ahead). A view.lua that wrote nothing would pass every other test, as
// RefreshSession then decides on the server.
func TestViewed_WritesTheVisitOverWhatItRead(t *testing.T) {
	mr, clock, s, _, key := viewedSession(t)
	ctx := context.Background()
	before := mr.HGet(key, "seen")
	clock.Advance(time.Second)
	l, recent, _, err := s.cachedSession(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.viewed(ctx, key, l, recent, "i2"); !ok || err != nil {
		t.Fatalf("viewed over what it read = %v, %v; want true, nil", ok, err)
	}
	if got := mr.HGet(key, "recent"); got != "i1\ni2\n" {
		t.Errorf("recent after a view = %q, want %q", got, "i1\ni2\n")
	}
	if got := mr.HGet(key, "seen"); got == before {
		t.Errorf("seen after a view a second later = %q, unchanged", got)
	}
	if got := mr.HGet(key, "login"); got != l.raw {
		t.Errorf("login after a view = %q, want %q unchanged", got, l.raw)
	}
	ahead := formatStamp(float64(clock.Now().Add(time.Hour).UnixMilli()))
	mr.HSet(key, "seen", ahead)
	l, recent, _, _ = s.cachedSession(ctx, key)
	if ok, err := s.viewed(ctx, key, l, recent, "i3"); !ok || err != nil {
		t.Fatalf("viewed over what it read = %v, %v; want true, nil", ok, err)
	}
	if got := mr.HGet(key, "seen"); got != ahead {
		t.Errorf("seen after a view behind it = %q, want %q kept", got, ahead)
	}
}

// TestDigestStrings_AsDigestArray: what view.lua's caller records of its
// write (wroteStrings) is what a read of the same fields would answer
// (digestArray of an HMGET reply), absent fields too; a record that
// disagreed would send every read to the server until the cache caught up.
func TestDigestStrings_AsDigestArray(t *testing.T) {
	mr, c := miniredisServer(t)
	for i, f := range [][2]string{{tableLogin, "a\nb\n"}, {tableLogin, ""}, {"x", "y\n"}} {
		key := "d:" + i64(int64(i))
		mr.HSet(key, "login", f[0])
		if f[1] != "" {
			mr.HSet(key, "recent", f[1])
		}
		reply, err := c.Do(context.Background(), c.B().Hmget().Key(key).Field("login", "recent").Build()).ToArray()
		if err != nil {
			t.Fatal(err)
		}
		want, ok := digestArray(reply)
		if got := digestStrings(f[0], f[1]); !ok || got != want {
			t.Errorf("digestStrings(%q, %q) = %x, digestArray of the reply = %x, %v", f[0], f[1], got, want, ok)
		}
	}
}

// viewedSession returns a Store's driver on miniredis, at a manual clock,
// with alice's session under token (its key, key) viewing item i1.
func viewedSession(t *testing.T) (mr *miniredis.Miniredis, clock *retail.ManualClock, s *store, token, key string) {
	t.Helper()
	mr, c := miniredisServer(t)
	clock = retail.NewManualClock(time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC))
	st, err := New(c, Options{Prefix: "v:", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	s, token = st.d, "0123456789abcdef0123456789abcdef"
	key = s.k.session(token)
	if err := s.UpdateToken(context.Background(), token, "alice", "i1"); err != nil {
		t.Fatal(err)
	}
	return mr, clock, s, token, key
}
