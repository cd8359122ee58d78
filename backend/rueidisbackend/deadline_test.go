package rueidisbackend_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// The stall of TestDeadline_StalledServer: every node sleeps stallFor
// (DEBUG SLEEP) while the calls run, each with a deadline of callTimeout.
const (
	stallFor    = 2 * time.Second
	callTimeout = 100 * time.Millisecond
	loadWorkers = 48
)

// TestDeadline_StalledServer stalls the server (every master of a cluster)
// with DEBUG SLEEP and, meanwhile, calls every method of the Store with a
// deadline far shorter than the stall: each alone, on a Store and client of
// its own with no other call in flight, and then all of them from
// loadWorkers goroutines at once on one Store, until a quarter of the stall
// has gone. Every call must return nil or an error matching
// context.DeadlineExceeded, and return before half the stall has gone,
// that is, at least a quarter of the stall before the server answers
// anything. Once the server is back, every call that returned nil must have
// been applied (a write is visible, a read's answer was right), and the
// Stores' group commit must go idle.
// It stalls the package's server and cluster, which the other parallel
// tests (the conformance suite among them) must bear.
func TestDeadline_StalledServer(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		if server == nil {
			unavailable(t, "Redis server", serverErr)
		}
		testStalled(t, targets[1], []string{server.Addr()})
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		if cluster == nil {
			unavailable(t, "Redis Cluster", clusterErr)
		}
		testStalled(t, targets[2], cluster.Addrs())
	})
}

// outcome is what one call under the stall did.
type outcome struct {
	probe   string
	start   time.Duration // since the stall began
	elapsed time.Duration
	err     error
	check   func() error // nil if err is not nil
}

// testStalled stalls the servers of addrs, which tg connects to.
func testStalled(t *testing.T, tg target, addrs []string) {
	probes := stallProbes()

	// Alone: a Store each, with what its call needs.
	alone := make([]*subject, len(probes))
	parallelPrep(t, len(probes), func(i int) error {
		s, _, _ := newStoreWith(t, tg, rueidisbackend.Options{})
		alone[i] = newSubject(s)
		return prepare(probes[i], alone[i], "a")
	})
	// Under load: one Store, and what the calls of each worker's first
	// rounds need (a worker stops at the last one prepared).
	const rounds = 12
	ls, _, _ := newStoreWith(t, tg, rueidisbackend.Options{})
	load := newSubject(ls)
	parallelPrep(t, loadWorkers, func(w int) error {
		for r := range rounds {
			if err := prepare(probes[(w+r)%len(probes)], load, fmt.Sprintf("w%d-%d", w, r)); err != nil {
				return err
			}
		}
		return nil
	})

	stall := startStall(t, addrs, stallFor)
	var (
		mu       sync.Mutex
		outcomes [2][]outcome // alone, under load
		wg       sync.WaitGroup
	)
	run := func(p probe, sub *subject, k string, alone bool) {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		begin := time.Now()
		check, err := p.call(ctx, sub, k, alone)
		o := outcome{probe: p.name, start: begin.Sub(stall.began), elapsed: time.Since(begin), err: err}
		if err == nil {
			o.check = check
		}
		phase := 1
		if alone {
			phase = 0
		}
		mu.Lock()
		outcomes[phase] = append(outcomes[phase], o)
		mu.Unlock()
	}
	// The Stores alone and the one under load have clients of their own:
	// they run at once.
	for i, p := range probes {
		wg.Go(func() { run(p, alone[i], "a", true) })
	}
	for w := range loadWorkers {
		wg.Go(func() {
			for r := 0; r < rounds && time.Since(stall.began) < stallFor/4; r++ {
				run(probes[(w+r)%len(probes)], load, fmt.Sprintf("w%d-%d", w, r), false)
			}
		})
	}
	wg.Wait()
	stalled := stall.wait(t)

	// The stall was real: the server answered DEBUG SLEEP no sooner than
	// it asked, and calls that needed it gave up.
	if stalled < stallFor*9/10 {
		t.Fatalf("DEBUG SLEEP took %v, want about %v: the server did not stall", stalled, stallFor)
	}
	report(t, "alone", outcomes[0])
	report(t, "under load", outcomes[1])

	// Every call that returned nil was applied. The rows still due are
	// claimed first, so that ScheduleRowCache's checks see them.
	for _, sub := range append(alone, load) {
		sub.sweepRows(t)
	}
	for _, o := range slices.Concat(outcomes[:]...) {
		if o.check != nil {
			if err := o.check(); err != nil {
				t.Errorf("%s returned nil under the stall, but: %v", o.probe, err)
			}
		}
	}
	// The group commit goes idle: no batch is left on its way.
	for _, sub := range append(alone, load) {
		waitFor(t, func() bool {
			return rueidisbackend.Queued(sub.s) == 0 && rueidisbackend.Sending(sub.s) == 0
		})
	}
}

// report fails t for each call of outcomes that returned an error other
// than the deadline's or returned after half the stall, and logs how many
// calls of each probe there were and how long the slowest took.
func report(t *testing.T, phase string, outcomes []outcome) {
	t.Helper()
	type tally struct {
		calls, nils, deadline, late int
		slowest                     time.Duration
	}
	byProbe := map[string]*tally{}
	var all tally
	for _, o := range outcomes {
		if o.start >= stallFor/2 {
			t.Fatalf("%s: %s started %v into the stall, after half of it: the machine is too slow for this test", phase, o.probe, o.start)
		}
		tl := byProbe[o.probe]
		if tl == nil {
			tl = &tally{}
			byProbe[o.probe] = tl
		}
		for _, tl := range []*tally{tl, &all} {
			tl.calls++
			tl.slowest = max(tl.slowest, o.elapsed)
			switch {
			case o.err == nil:
				tl.nils++
			case errors.Is(o.err, context.DeadlineExceeded):
				tl.deadline++
			}
			if o.start+o.elapsed >= stallFor/2 {
				tl.late++
			}
		}
		if o.err != nil && !errors.Is(o.err, context.DeadlineExceeded) {
			t.Errorf("%s: %s = %v, want nil or an error matching context.DeadlineExceeded", phase, o.probe, o.err)
		}
		if o.start+o.elapsed >= stallFor/2 {
			t.Errorf("%s: %s blocked %v (deadline %v), returning %v into a %v stall; want it back before half the stall",
				phase, o.probe, o.elapsed.Round(time.Millisecond), callTimeout, (o.start + o.elapsed).Round(time.Millisecond), stallFor)
		}
	}
	names := make([]string, 0, len(byProbe))
	for name := range byProbe {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		tl := byProbe[name]
		fmt.Fprintf(&b, "\n  %-16s %3d calls: %3d nil, %3d deadline, %3d late; slowest %v", name, tl.calls, tl.nils, tl.deadline, tl.late, tl.slowest.Round(time.Millisecond))
	}
	t.Logf("%s: %d calls: %d nil, %d deadline, %d returned after half the stall; slowest %v%s",
		phase, all.calls, all.nils, all.deadline, all.late, all.slowest.Round(time.Millisecond), b.String())
	if all.deadline == 0 {
		t.Errorf("%s: no call met its deadline: the stall did not hold the calls", phase)
	}
}

// stall is a DEBUG SLEEP sent to every node of a target.
type stall struct {
	began time.Time
	done  chan error
}

// startStall makes every server of addrs sleep stallFor, through raw
// connections of its own, and returns once the servers have had the
// commands for a moment (see below).
func startStall(t *testing.T, addrs []string, stallFor time.Duration) *stall {
	t.Helper()
	conns := make([]net.Conn, len(addrs))
	for i, addr := range addrs {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c
	}
	secs := strconv.FormatFloat(stallFor.Seconds(), 'f', -1, 64)
	cmd := fmt.Sprintf("*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$%d\r\n%s\r\n", len(secs), secs)
	st := &stall{began: time.Now(), done: make(chan error, len(addrs))}
	for _, c := range conns {
		if _, err := c.Write([]byte(cmd)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range conns {
		go func() {
			c.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang, not a slow machine
			line, err := bufio.NewReader(c).ReadString('\n')
			if err == nil && line != "+OK\r\n" {
				err = fmt.Errorf("DEBUG SLEEP = %q", strings.TrimSpace(line))
			}
			st.done <- err
		}()
	}
	// Nothing tells when a server has read its command: give it a moment,
	// short against the stall, so that the calls reach it asleep.
	time.Sleep(stallFor / 100)
	return st
}

// wait waits for every server to answer and returns how long the stall
// took; a server that refuses DEBUG fails t.
func (st *stall) wait(t *testing.T) time.Duration {
	t.Helper()
	for range cap(st.done) {
		if err := <-st.done; err != nil {
			t.Fatalf("stalling the server: %v (it must allow DEBUG from local connections: %q)", err, debugCommand)
		}
	}
	return time.Since(st.began)
}

// subject is a Store the probes call, with the rows its calls claimed.
type subject struct {
	s *rueidisbackend.Store

	mu          sync.Mutex
	claimed     map[string]string // row -> which call claimed it
	claimFailed bool              // a ClaimDueRows returned an error: it may have claimed rows
}

func newSubject(s *rueidisbackend.Store) *subject {
	return &subject{s: s, claimed: map[string]string{}}
}

// claim records rows as claimed by who; a row claimed twice is an error.
func (sub *subject) claim(who string, rows []string) error {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	for _, r := range rows {
		if by, ok := sub.claimed[r]; ok {
			return fmt.Errorf("row %s claimed by %s and again by %s", r, by, who)
		}
		sub.claimed[r] = who
	}
	return nil
}

// sweepRows claims every row still due.
func (sub *subject) sweepRows(t *testing.T) {
	t.Helper()
	for {
		rows, err := sub.s.ClaimDueRows(bg, 1000)
		if err != nil {
			t.Fatalf("ClaimDueRows() after the stall = %v", err)
		}
		if err := sub.claim("the sweep after the stall", rows); err != nil {
			t.Error(err)
		}
		if len(rows) == 0 {
			return
		}
	}
}

// A probe calls one method of the Store. prep, if set, writes before the
// stall what the call with key k needs; call makes the call with ctx and,
// if it returned nil, returns check, which reports, after the stall, why
// its answer was wrong or its effect is not there. alone is whether the
// call has its Store to itself.
type probe struct {
	name string
	prep func(sub *subject, k string) error
	call func(ctx context.Context, sub *subject, k string, alone bool) (check func() error, err error)
}

func prepare(p probe, sub *subject, k string) error {
	if p.prep == nil {
		return nil
	}
	if err := p.prep(sub, k); err != nil {
		return fmt.Errorf("preparing %s(%s): %w", p.name, k, err)
	}
	return nil
}

// parallelPrep runs n preparations at once and fails t if one fails.
func parallelPrep(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// Names a probe's call uses, from its key.
func tok(k string) string  { return "tok-" + k }
func usr(k string) string  { return "user-" + k }
func itm(k string) string  { return "item-" + k }
func page(k string) string { return "/page?item=" + k }
func row(k string) string  { return "row-" + k }
func body(k string) []byte { return []byte("body of " + k) }

func startSession(sub *subject, k string) error {
	_, err := sub.s.StartSession(bg, tok(k), usr(k))
	return err
}

func wantUser(s retail.Store, token, user string) error {
	u, ok, err := s.CheckToken(bg, token)
	if err != nil || !ok || u != user {
		return fmt.Errorf("CheckToken(%s) = %q, %v, %v; want %q", token, u, ok, err, user)
	}
	return nil
}

func wantNoSession(s retail.Store, token string) error {
	u, ok, err := s.CheckToken(bg, token)
	if err != nil || ok {
		return fmt.Errorf("CheckToken(%s) = %q, %v, %v; want no session", token, u, ok, err)
	}
	return nil
}

func wantRecent(s retail.Store, token, item string) error {
	items, err := s.RecentItems(bg, token)
	if err != nil || !slices.Contains(items, item) {
		return fmt.Errorf("RecentItems(%s) = %q, %v; want %s among them", token, items, err, item)
	}
	return nil
}

func wantValue(s retail.Store, token string, want []byte) error {
	v, ok, err := s.Value(bg, token, "v")
	if err != nil || ok != (want != nil) || string(v) != string(want) {
		return fmt.Errorf("Value(%s) = %q, %v, %v; want %q, %v", token, v, ok, err, want, want != nil)
	}
	return nil
}

func wantCart(s retail.Store, token string, want map[string]int) error {
	cart, err := s.Cart(bg, token)
	if err != nil || !cmp.Equal(cart, want) {
		return fmt.Errorf("Cart(%s) = %v, %v; want %v", token, cart, err, want)
	}
	return nil
}

func wantPage(s retail.Store, key string, want []byte) error {
	b, ok, err := s.Page(bg, key)
	if err != nil || ok != (want != nil) || string(b) != string(want) {
		return fmt.Errorf("Page(%s) = %q, %v, %v; want %q, %v", key, b, ok, err, want, want != nil)
	}
	return nil
}

func wantRow(s retail.Store, r string, want []byte) error {
	b, ok, err := s.Row(bg, r)
	if err != nil || !ok || string(b) != string(want) {
		return fmt.Errorf("Row(%s) = %q, %v, %v; want %q", r, b, ok, err, want)
	}
	return nil
}

func wantRanked(s retail.Store, item string) error {
	_, ok, err := s.ItemRank(bg, item)
	if err != nil || !ok {
		return fmt.Errorf("ItemRank(%s) = %v, %v; want a rank", item, ok, err)
	}
	return nil
}

// errorf returns a check that fails with the message if bad, else passes.
func errorf(bad bool, format string, args ...any) func() error {
	return func() error {
		if bad {
			return fmt.Errorf(format, args...)
		}
		return nil
	}
}

// stallProbes are the probes of every method of retail.Store that takes a
// context.
func stallProbes() []probe {
	return []probe{
		{"StartSession", nil, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			created, err := sub.s.StartSession(ctx, tok(k), usr(k))
			return func() error {
				if !created {
					return errors.New("StartSession of a new token reported created == false")
				}
				return wantUser(sub.s, tok(k), usr(k))
			}, err
		}},
		{"CheckToken", startSession, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			u, ok, err := sub.s.CheckToken(ctx, tok(k))
			return errorf(!ok || u != usr(k), "CheckToken = %q, %v; want %q", u, ok, usr(k)), err
		}},
		{"RefreshSession", startSession, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			u, ok, err := sub.s.RefreshSession(ctx, tok(k), itm(k))
			return func() error {
				if !ok || u != usr(k) {
					return fmt.Errorf("RefreshSession = %q, %v; want %q", u, ok, usr(k))
				}
				return wantRecent(sub.s, tok(k), itm(k))
			}, err
		}},
		{"UpdateToken", startSession, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			err := sub.s.UpdateToken(ctx, tok(k), usr(k), itm(k))
			return func() error {
				return errors.Join(wantUser(sub.s, tok(k), usr(k)), wantRecent(sub.s, tok(k), itm(k)))
			}, err
		}},
		{"RenewSession", startSession, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			ok, err := sub.s.RenewSession(ctx, tok(k), "renewed-"+k, usr(k))
			return func() error {
				if !ok {
					return errors.New("RenewSession of a live session = false")
				}
				return wantUser(sub.s, "renewed-"+k, usr(k))
			}, err
		}},
		{"RecentItems", func(sub *subject, k string) error {
			return sub.s.UpdateToken(bg, tok(k), usr(k), itm(k))
		}, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			items, err := sub.s.RecentItems(ctx, tok(k))
			return errorf(!cmp.Equal(items, []string{itm(k)}), "RecentItems = %q; want [%s]", items, itm(k)), err
		}},
		{"Logout", startSession, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			err := sub.s.Logout(ctx, tok(k))
			return func() error { return wantNoSession(sub.s, tok(k)) }, err
		}},
		{"EndSession", startSession, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			err := sub.s.EndSession(ctx, retail.SessionID(tok(k)))
			return func() error { return wantNoSession(sub.s, tok(k)) }, err
		}},
		{"UserSessions", startSession, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			list, err := sub.s.UserSessions(ctx, usr(k))
			return errorf(len(list) != 1 || list[0].User != usr(k), "UserSessions = %v; want one session of %s", list, usr(k)), err
		}},
		{"LogoutUser", startSession, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			n, err := sub.s.LogoutUser(ctx, usr(k))
			return func() error {
				if n != 1 {
					return fmt.Errorf("LogoutUser = %d; want 1", n)
				}
				return wantNoSession(sub.s, tok(k))
			}, err
		}},
		{"SessionCount", startSession, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			n, err := sub.s.SessionCount(ctx)
			return errorf(n < 1, "SessionCount = %d; want at least 1", n), err
		}},
		{"CleanSessions", func(sub *subject, k string) error {
			for i := range 3 {
				if err := startSession(sub, k+"-"+strconv.Itoa(i)); err != nil {
					return err
				}
			}
			return nil
		}, func(ctx context.Context, sub *subject, k string, alone bool) (func() error, error) {
			if !alone { // other calls' sessions must stay
				removed, err := sub.s.CleanSessions(ctx, 1<<30, 100)
				return errorf(removed != 0, "CleanSessions(1<<30, 100) = %d; want 0", removed), err
			}
			removed, err := sub.s.CleanSessions(ctx, 1, 10)
			return func() error {
				n, err := sub.s.SessionCount(bg)
				if removed != 2 || err != nil || n != 1 {
					return fmt.Errorf("CleanSessions(1, 10) = %d, then SessionCount() = %d, %v; want 2, then 1", removed, n, err)
				}
				return nil
			}, err
		}},
		{"RepairSessions", startSession, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			_, err := sub.s.RepairSessions(ctx)
			return func() error { return wantUser(sub.s, tok(k), usr(k)) }, err
		}},
		{"Claim", nil, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			held, err := sub.s.Claim(ctx, "job-"+k, "owner-"+k, 1, time.Minute)
			return func() error {
				rival, err := sub.s.Claim(bg, "job-"+k, "rival", 1, time.Minute)
				if !held || err != nil || rival {
					return fmt.Errorf("Claim = %v, then a rival's Claim = %v, %v; want true, then false", held, rival, err)
				}
				return nil
			}, err
		}},
		{"SetValue", startSession, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			err := sub.s.SetValue(ctx, tok(k), "v", body(k))
			return func() error { return wantValue(sub.s, tok(k), body(k)) }, err
		}},
		{"Value", setValue, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			v, ok, err := sub.s.Value(ctx, tok(k), "v")
			return errorf(!ok || string(v) != string(body(k)), "Value = %q, %v; want %q", v, ok, body(k)), err
		}},
		{"PopValue", setValue, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			v, ok, err := sub.s.PopValue(ctx, tok(k), "v")
			return func() error {
				if !ok || string(v) != string(body(k)) {
					return fmt.Errorf("PopValue = %q, %v; want %q", v, ok, body(k))
				}
				return wantValue(sub.s, tok(k), nil)
			}, err
		}},
		{"DeleteValue", setValue, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			err := sub.s.DeleteValue(ctx, tok(k), "v")
			return func() error { return wantValue(sub.s, tok(k), nil) }, err
		}},
		{"AddToCart", startSession, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			err := sub.s.AddToCart(ctx, tok(k), itm(k), 3)
			return func() error { return wantCart(sub.s, tok(k), map[string]int{itm(k): 3}) }, err
		}},
		{"IncrementCart", addToCart, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			n, err := sub.s.IncrementCart(ctx, tok(k), itm(k), 2)
			return func() error {
				if n != 4 {
					return fmt.Errorf("IncrementCart(2) of 2 = %d; want 4", n)
				}
				return wantCart(sub.s, tok(k), map[string]int{itm(k): 4})
			}, err
		}},
		{"Cart", addToCart, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			cart, err := sub.s.Cart(ctx, tok(k))
			return errorf(!cmp.Equal(cart, map[string]int{itm(k): 2}), "Cart = %v; want %s: 2", cart, itm(k)), err
		}},
		{"Page", setPage, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			b, ok, err := sub.s.Page(ctx, page(k))
			return errorf(!ok || string(b) != string(body(k)), "Page = %q, %v; want %q", b, ok, body(k)), err
		}},
		{"SetPage", nil, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			err := sub.s.SetPage(ctx, page(k), body(k), time.Minute)
			return func() error { return wantPage(sub.s, page(k), body(k)) }, err
		}},
		{"SetItemPage", nil, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			err := sub.s.SetItemPage(ctx, itm(k), page(k), body(k), time.Minute)
			return func() error { return wantPage(sub.s, page(k), body(k)) }, err
		}},
		{"DeletePage", setPage, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			err := sub.s.DeletePage(ctx, page(k))
			return func() error { return wantPage(sub.s, page(k), nil) }, err
		}},
		{"PurgeItemPages", func(sub *subject, k string) error {
			return sub.s.SetItemPage(bg, itm(k), page(k), body(k), time.Minute)
		}, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			n, err := sub.s.PurgeItemPages(ctx, itm(k))
			return func() error {
				if n != 1 {
					return fmt.Errorf("PurgeItemPages = %d; want 1", n)
				}
				return wantPage(sub.s, page(k), nil)
			}, err
		}},
		{"ScheduleRowCache", nil, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			err := sub.s.ScheduleRowCache(ctx, row(k), time.Minute)
			return func() error {
				sub.mu.Lock()
				defer sub.mu.Unlock()
				// A ClaimDueRows that gave up may have claimed the row
				// without saying so.
				if _, ok := sub.claimed[row(k)]; !ok && !sub.claimFailed {
					return fmt.Errorf("row %s was never due", row(k))
				}
				return nil
			}, err
		}},
		{"ClaimDueRows", func(sub *subject, k string) error {
			return sub.s.ScheduleRowCache(bg, row(k), time.Minute)
		}, func(ctx context.Context, sub *subject, k string, alone bool) (func() error, error) {
			rows, err := sub.s.ClaimDueRows(ctx, 100)
			if err != nil {
				sub.mu.Lock()
				sub.claimFailed = true
				sub.mu.Unlock()
				return nil, err
			}
			claimErr := sub.claim("ClaimDueRows("+k+")", rows)
			return func() error {
				if alone && !slices.Contains(rows, row(k)) {
					return fmt.Errorf("ClaimDueRows = %q; want %s among them", rows, row(k))
				}
				return claimErr
			}, nil
		}},
		{"Row", setRow, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			b, ok, err := sub.s.Row(ctx, row(k))
			return errorf(!ok || string(b) != string(body(k)), "Row = %q, %v; want %q", b, ok, body(k)), err
		}},
		{"SetRow", nil, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			err := sub.s.SetRow(ctx, row(k), body(k))
			return func() error { return wantRow(sub.s, row(k), body(k)) }, err
		}},
		{"SetScheduledRow", func(sub *subject, k string) error {
			return sub.s.ScheduleRowCache(bg, row(k), time.Hour)
		}, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			stored, err := sub.s.SetScheduledRow(ctx, row(k), body(k))
			return func() error {
				if !stored {
					return fmt.Errorf("SetScheduledRow of a scheduled row stored nothing")
				}
				return wantRow(sub.s, row(k), body(k))
			}, err
		}},
		{"CountView", nil, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			err := sub.s.CountView(ctx, itm(k))
			return func() error { return wantRanked(sub.s, itm(k)) }, err
		}},
		{"FlushViews", countView, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			err := sub.s.FlushViews(ctx)
			return func() error { return wantRanked(sub.s, itm(k)) }, err
		}},
		{"ItemRank", countView, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			_, ok, err := sub.s.ItemRank(ctx, itm(k))
			return errorf(!ok, "ItemRank of a viewed item: no rank"), err
		}},
		{"TopItems", countView, func(ctx context.Context, sub *subject, k string, _ bool) (func() error, error) {
			top, err := sub.s.TopItems(ctx, 10)
			return errorf(len(top) == 0, "TopItems = none; want some"), err
		}},
		{"RescaleViews", func(sub *subject, k string) error {
			for range 4 {
				if err := countView(sub, k); err != nil {
					return err
				}
			}
			return nil
		}, func(ctx context.Context, sub *subject, k string, alone bool) (func() error, error) {
			err := sub.s.RescaleViews(ctx, 1000, 0.5)
			return func() error {
				if !alone { // the others' views change
					return wantRanked(sub.s, itm(k))
				}
				top, err := sub.s.TopItems(bg, 10)
				if want := []retail.ItemViews{{Item: itm(k), Views: 2}}; err != nil || !cmp.Equal(top, want) {
					return fmt.Errorf("TopItems() = %v, %v; want %v", top, err, want)
				}
				return nil
			}, err
		}},
	}
}

func setValue(sub *subject, k string) error {
	if err := startSession(sub, k); err != nil {
		return err
	}
	return sub.s.SetValue(bg, tok(k), "v", body(k))
}

func addToCart(sub *subject, k string) error {
	if err := startSession(sub, k); err != nil {
		return err
	}
	return sub.s.AddToCart(bg, tok(k), itm(k), 2)
}

func setPage(sub *subject, k string) error {
	return sub.s.SetPage(bg, page(k), body(k), time.Minute)
}

func setRow(sub *subject, k string) error { return sub.s.SetRow(bg, row(k), body(k)) }

func countView(sub *subject, k string) error { return sub.s.CountView(bg, itm(k)) }
