package rueidisbackend_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// tally counts the errors calls returned, by call and kind.
type tally struct {
	mu   sync.Mutex
	errs map[string]map[string]int // op -> class -> n
	ex   map[string]string         // op/class -> an example
	ops  atomic.Int64
}

func (t *tally) add(op string, err error) {
	t.ops.Add(1)
	if err == nil || errors.Is(err, retail.ErrNoSession) || errors.Is(err, retail.ErrInvalid) {
		return
	}
	cl := errClass(err)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.errs == nil {
		t.errs, t.ex = map[string]map[string]int{}, map[string]string{}
	}
	if t.errs[op] == nil {
		t.errs[op] = map[string]int{}
	}
	t.errs[op][cl]++
	if _, ok := t.ex[op+"/"+cl]; !ok {
		t.ex[op+"/"+cl] = err.Error()
	}
}

// report logs the tallies and returns the number of errors of the kinds a
// call should never surface while slots move: redirections and TRYAGAIN,
// which mean the command did not run and may be sent again, and scripts
// cut short by a key that left mid-script.
func (t *tally) report(tb testing.TB) (bad int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	total := 0
	for _, op := range slices.Sorted(maps.Keys(t.errs)) {
		for _, cl := range slices.Sorted(maps.Keys(t.errs[op])) {
			n := t.errs[op][cl]
			total += n
			tb.Logf("  %-18s %-24s %5d  e.g. %.160s", op, cl, n, t.ex[op+"/"+cl])
			switch cl {
			case "TRYAGAIN", "ASK", "MOVED", "CROSSSLOT", "script: non local key":
				bad += n
			}
		}
	}
	tb.Logf("  %d calls, %d errors", t.ops.Load(), total)
	return bad
}

// trackedSession is what a tracked session must hold, by the calls that
// returned nil.
type trackedSession struct {
	token, user string
	cart        map[string]int
	recent      []string // newest first
	ended       bool     // a Logout or LogoutUser that returned nil ended it
	uncertain   bool     // a call on it failed: what it holds is not known
	started     bool     // an UpdateToken returned nil
	writer      int      // the process that wrote it last
}

func (ts *trackedSession) view(item string) {
	r := []string{item}
	for _, it := range ts.recent {
		if it != item {
			r = append(r, it)
		}
	}
	ts.recent = r[:min(len(r), retail.DefaultRecentLimit)]
}

// TestReshard_UnderLoad runs a shop's calls from two processes (two
// clients, two Stores each: one prefix for churn with cleaning and
// LogoutUser, one whose sessions are tracked call by call) on a 3-master
// cluster, adds a fourth master and moves slots while they run: the slots
// of the shared sets and of some users by hand (with time between the
// steps, as a slot of many keys takes), then redis-cli --cluster
// rebalance onto the new master and redis-cli --cluster reshard between
// old ones. It tallies the errors calls returned, and then checks that
// tracked sessions hold what the calls that succeeded wrote, that those
// ended stay ended, that each view was counted once, that the keyspace is
// whole, and that every key has a TTL but the documented ones.
func TestReshard_UnderLoad(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("moves slots of a private cluster under load")
	}
	cl, m := privateCluster(t)
	addrs := cl.Addrs()
	c1 := newClient(t, rueidis.ClientOption{InitAddress: addrs})
	c2 := newClient(t, rueidis.ClientOption{InitAddress: addrs})
	churnP, trackP, cacheP := uniquePrefix(), uniquePrefix(), uniquePrefix()
	churn := []*rueidisbackend.Store{
		mustNew(t, c1, rueidisbackend.Options{Prefix: churnP}),
		mustNew(t, c2, rueidisbackend.Options{Prefix: churnP}),
	}
	caches := []*rueidisbackend.Store{ // pages and rows, apart so that the sessions' keyspace can be checked alone
		mustNew(t, c1, rueidisbackend.Options{Prefix: cacheP}),
		mustNew(t, c2, rueidisbackend.Options{Prefix: cacheP}),
	}
	track := []*rueidisbackend.Store{
		mustNew(t, c1, rueidisbackend.Options{Prefix: trackP}),
		mustNew(t, c2, rueidisbackend.Options{Prefix: trackP}),
	}
	var errs tally
	// The load stops between calls, so that no call is cut short.
	var stopping atomic.Bool
	ctx := bg
	var wg sync.WaitGroup
	const timeout = 3 * time.Second

	// Churn: every call, over tokens and users that collide.
	for g := range 6 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 11))
			for !stopping.Load() {
				i := r.IntN(2)
				s, cs := churn[i], caches[i]
				tok := fmt.Sprintf("c-%d", r.IntN(800))
				user := fmt.Sprintf("cu-%d", r.IntN(80))
				item := fmt.Sprintf("item-%d", r.IntN(40))
				page := fmt.Sprintf("/p/%d", r.IntN(200))
				row := fmt.Sprintf("row-%d", r.IntN(50))
				cctx, done := context.WithTimeout(ctx, timeout)
				var err error
				op := ""
				switch n := r.IntN(30); {
				case n < 6:
					op, err = "UpdateToken", s.UpdateToken(cctx, tok, user, item)
				case n < 8:
					op = "RefreshSession"
					_, _, err = s.RefreshSession(cctx, tok, item)
				case n < 10:
					op = "CheckToken"
					_, _, err = s.CheckToken(cctx, tok)
				case n < 11:
					op, err = "AddToCart", s.AddToCart(cctx, tok, item, 1+r.IntN(3))
				case n < 12:
					op = "Cart"
					_, err = s.Cart(cctx, tok)
				case n < 13:
					op, err = "Logout", s.Logout(cctx, tok)
				case n < 14:
					op = "LogoutUser"
					_, err = s.LogoutUser(cctx, user)
				case n < 15:
					op = "UserSessions"
					_, err = s.UserSessions(cctx, user)
				case n < 16:
					op = "CleanSessions"
					_, err = s.CleanSessions(cctx, 600, 20)
				case n < 17:
					op = "RenewSession"
					_, err = s.RenewSession(cctx, tok, fmt.Sprintf("c-%d", r.IntN(800)), user)
				case n < 18:
					op = "StartSession"
					_, err = s.StartSession(cctx, tok, user)
				case n < 19:
					op, err = "SetValue", s.SetValue(cctx, tok, "k", []byte(item))
				case n < 21:
					op = "Page"
					var body []byte
					var ok bool
					body, ok, err = cs.Page(cctx, page)
					if ok && string(body) != "body of "+page {
						t.Errorf("Page(%q) = %q", page, body)
					}
				case n < 22:
					op, err = "SetPage", cs.SetPage(cctx, page, []byte("body of "+page), time.Minute)
				case n < 23:
					op, err = "SetItemPage", cs.SetItemPage(cctx, item, page, []byte("body of "+page), time.Minute)
				case n < 24:
					op = "PurgeItemPages"
					_, err = cs.PurgeItemPages(cctx, item)
				case n < 25:
					op, err = "ScheduleRowCache", cs.ScheduleRowCache(cctx, row, time.Duration(r.IntN(3))*50*time.Millisecond)
				case n < 26:
					op = "ClaimDueRows"
					var rows []string
					rows, err = cs.ClaimDueRows(cctx, 5)
					for _, rw := range rows {
						_, e := cs.SetScheduledRow(cctx, rw, []byte("data of "+rw))
						errs.add("SetScheduledRow", e)
					}
				case n < 27:
					op = "Row"
					var data []byte
					var ok bool
					data, ok, err = cs.Row(cctx, row)
					if ok && string(data) != "data of "+row {
						t.Errorf("Row(%q) = %q", row, data)
					}
				case n < 28:
					op = "ItemRank"
					_, _, err = s.ItemRank(cctx, item)
				default:
					op, err = "CountView", s.CountView(cctx, item)
				}
				done()
				errs.add(op, err)
			}
		})
	}

	// Tracked sessions: each goroutine owns its users and tokens.
	var crossStale atomic.Int64 // reads of a cart another process had just written, stale
	var (
		trackedMu sync.Mutex
		tracked   []*trackedSession
		views     = map[string]int{}
		viewsMu   sync.Mutex
	)
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 23))
			var live []*trackedSession
			next := 0
			newSession := func() *trackedSession {
				next++
				ts := &trackedSession{token: fmt.Sprintf("t-%d-%d", g, next), user: fmt.Sprintf("tu-%d-%d", g, r.IntN(6)), cart: map[string]int{}}
				trackedMu.Lock()
				tracked = append(tracked, ts)
				trackedMu.Unlock()
				live = append(live, ts)
				return ts
			}
			for !stopping.Load() {
				if len(live) < 30 {
					newSession()
				}
				ts := live[r.IntN(len(live))]
				proc := r.IntN(2)
				s := track[proc]
				item := fmt.Sprintf("ti-%d", r.IntN(40))
				cctx, done := context.WithTimeout(ctx, timeout)
				var err error
				op := ""
				switch n := r.IntN(200); {
				case n < 80 || !ts.started:
					// UpdateToken counts the item's view too.
					op, err = "UpdateToken", s.UpdateToken(cctx, ts.token, ts.user, item)
					if err == nil {
						ts.writer = proc
						ts.started = true
						ts.view(item)
						viewsMu.Lock()
						views[item]++
						viewsMu.Unlock()
					}
				case n < 120:
					op = "AddToCart"
					count := r.IntN(4)
					err = s.AddToCart(cctx, ts.token, item, count)
					if err == nil {
						ts.writer = proc
						if count == 0 {
							delete(ts.cart, item)
						} else {
							ts.cart[item] = count
						}
					}
				case n < 160:
					op = "CheckToken"
					var user string
					var ok bool
					user, ok, err = s.CheckToken(cctx, ts.token)
					if err == nil && !ts.uncertain && (!ok || user != ts.user) {
						t.Errorf("CheckToken(%q) = %q, %v during the load; want %q's live session", ts.token, user, ok, ts.user)
					}
				case n < 190:
					op = "Cart"
					var cart map[string]int
					cart, err = s.Cart(cctx, ts.token)
					if err == nil && !ts.uncertain && !maps.Equal(cart, ts.cart) {
						if proc == ts.writer {
							t.Errorf("Cart(%q) = %v during the load, in the process that wrote it; want %v", ts.token, cart, ts.cart)
						} else {
							// Another process's write reaches this one's cache when
							// its invalidation arrives (see the package doc).
							crossStale.Add(1)
						}
					}
				case n < 197:
					op, err = "Logout", s.Logout(cctx, ts.token)
					ts.ended = err == nil
					ts.uncertain = true
					live = slices.DeleteFunc(live, func(x *trackedSession) bool { return x == ts })
				default:
					op = "LogoutUser"
					_, err = s.LogoutUser(cctx, ts.user)
					for _, x := range live {
						if x.user == ts.user {
							x.ended = err == nil
							x.uncertain = true
						}
					}
					live = slices.DeleteFunc(live, func(x *trackedSession) bool { return x.user == ts.user })
				}
				done()
				if err != nil && !errors.Is(err, retail.ErrNoSession) {
					ts.uncertain = true
				}
				errs.add("tracked "+op, err)
			}
		})
	}

	waitOps := func(n int64) {
		t.Helper()
		start := errs.ops.Load()
		waitFor(t, func() bool { return errs.ops.Load() >= start+n })
	}
	waitOps(3000)
	t.Logf("warm: %d calls", errs.ops.Load())

	// 1. A fourth master joins.
	added, err := cl.AddMaster()
	if err != nil {
		t.Fatal(err)
	}
	m.refresh()
	t.Logf("added master %s", added)
	waitOps(500)

	// 2. The hot slots move to it by hand, a key at a time, with pauses.
	hot := map[uint16]string{}
	for _, k := range []string{
		indexKey(churnP), indexKey(trackP), viewedKey(trackP), viewedKey(churnP),
		churnP + "{rows}:schedule", userKey(trackP, "tu-0-0"), userKey(trackP, "tu-1-1"),
		rueidisbackend.LogoutMark(trackP, "tu-0-0"), rueidisbackend.LogoutMark(trackP, "tu-2-2"),
	} {
		hot[slot(k)] = k
	}
	for sl, k := range hot {
		src := m.owner(sl)
		if src == added {
			continue
		}
		m.begin(sl, added)
		moved := 0
		for m.migrate(sl, src, added, 1) == 1 {
			moved++
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		m.finish(sl, src, added)
		t.Logf("moved slot %d (%s, %d keys) from %s to %s by hand", sl, k, moved, src, added)
	}
	waitOps(500)

	// 3. redis-cli rebalances onto the new master, weighted to take a
	// quarter of an old master's share (about 1,260 slots, at about 6 ms a
	// slot here: the load runs as long as the slots move).
	began := time.Now()
	out, err := exec.Command("redis-cli", "--cluster", "rebalance", addrs[0], "--cluster-use-empty-masters", "--cluster-pipeline", "10",
		"--cluster-weight", m.id(added)+"=0.25").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster rebalance: %v\n%s", err, out)
	}
	t.Logf("rebalance took %v: %d lines of output", time.Since(began).Round(time.Millisecond), strings.Count(string(out), "\n"))
	if err := cl.WaitAgreed(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitOps(500)

	// 4. redis-cli reshards 500 slots between two old masters.
	began = time.Now()
	out, err = exec.Command("redis-cli", "--cluster", "reshard", addrs[0], "--cluster-from", m.id(addrs[1]), "--cluster-to", m.id(addrs[2]),
		"--cluster-slots", "500", "--cluster-yes", "--cluster-pipeline", "10").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster reshard: %v\n%s", err, out)
	}
	t.Logf("reshard took %v", time.Since(began).Round(time.Millisecond))
	if err := cl.WaitAgreed(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitOps(1000)
	stopping.Store(true)
	wg.Wait()

	t.Logf("errors the calls returned while slots moved:")
	if bad := errs.report(t); bad > 0 {
		t.Errorf("%d calls returned a redirection, TRYAGAIN or a script cut short by a moving key: errors that mean retry", bad)
	}

	// Tracked sessions hold what the calls that succeeded wrote, in both
	// processes, and those ended stay ended.
	checked, ended := 0, 0
	for _, ts := range tracked {
		for i, s := range track {
			user, ok, err := s.CheckToken(bg, ts.token)
			if err != nil {
				t.Errorf("process %d: CheckToken(%q) after the load: %v", i, ts.token, err)
				continue
			}
			switch {
			case ts.ended:
				if ok {
					t.Errorf("process %d: session %q of %q is live after a Logout or LogoutUser that returned nil", i, ts.token, ts.user)
				}
				ended++
			case ts.uncertain || !ts.started:
			default:
				checked++
				if !ok || user != ts.user {
					t.Errorf("process %d: CheckToken(%q) after the load = %q, %v; want %q's live session", i, ts.token, user, ok, ts.user)
					continue
				}
				cart, err := s.Cart(bg, ts.token)
				if err != nil || !maps.Equal(cart, ts.cart) {
					t.Errorf("process %d: Cart(%q) after the load = %v, %v; want %v", i, ts.token, cart, err, ts.cart)
				}
				recent, err := s.RecentItems(bg, ts.token)
				if err != nil || !slices.Equal(recent, ts.recent) {
					t.Errorf("process %d: RecentItems(%q) after the load = %v, %v; want %v", i, ts.token, recent, err, ts.recent)
				}
			}
		}
	}
	t.Logf("%d Cart reads during the load missed another process's write of a moment before", crossStale.Load())
	t.Logf("tracked sessions: %d checked whole in both processes, %d ended checked absent, of %d", checked/2, ended/2, len(tracked))

	// Each view counted once.
	for _, s := range track {
		waitFor(t, func() bool { return s.FlushViews(bg) == nil })
	}
	top, err := track[0].TopItems(bg, 1000)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, iv := range top {
		got[iv.Item] = int(iv.Views)
	}
	if !maps.Equal(got, views) {
		t.Errorf("view counts after the load = %v, want %v", got, views)
	}

	// The keyspace: orphans before a repair, none after; TTLs.
	for _, p := range []string{churnP, trackP} {
		t.Logf("%s before repair: %s", p, countOrphans(t, c1, p))
	}
	wantTTLs(t, c1, churnP)
	wantTTLs(t, c1, trackP)
	for _, s := range []*rueidisbackend.Store{churn[0], track[0]} {
		if _, err := s.RepairSessions(bg); err != nil {
			t.Errorf("RepairSessions: %v", err)
		}
	}
	wantWholeKeyspace(t, churn[0], c1, churnP)
	wantWholeKeyspace(t, track[0], c1, trackP)
}

// wantTTLs checks that every key under prefix has a TTL, but those the
// package doc lists without one: the session index, the view counts, the
// row schedule's sets and the cached rows.
func wantTTLs(t *testing.T, c rueidis.Client, prefix string) {
	t.Helper()
	none := 0
	for _, k := range scanAll(t, c, prefix) {
		switch {
		case k == indexKey(prefix), k == viewedKey(prefix), strings.HasPrefix(k, prefix+"{rows}:"), strings.HasPrefix(k, prefix+"row:"):
			continue
		}
		ttl, err := c.Do(bg, c.B().Pttl().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if ttl == -1 {
			none++
			if none <= 5 {
				t.Errorf("key %q has no TTL", k)
			}
		}
	}
	if none > 5 {
		t.Errorf("... %d keys without a TTL in all", none)
	}
}
