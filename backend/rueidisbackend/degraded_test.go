package rueidisbackend_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
	"github.com/retailkit/retail/internal/redistest"
)

// degradedCluster starts a 3-master cluster of the test's own that keeps
// serving the slots it has left when a master goes, and a Store on it
// under prefix.
func degradedCluster(t *testing.T, prefix string) (*redistest.Cluster, rueidis.Client, *rueidisbackend.Store) {
	t.Helper()
	cl, err := redistest.StartCluster(3, "--cluster-require-full-coverage", "no")
	if err != nil {
		unavailable(t, "Redis Cluster", err)
	}
	t.Cleanup(func() { cl.Close() })
	c := newClient(t, rueidis.ClientOption{InitAddress: cl.Addrs()})
	return cl, c, mustNew(t, c, rueidisbackend.Options{Prefix: prefix})
}

// TestDegraded_SessionsRefreshWhileTheViewsNodeIsDown kills the master that
// holds the view counts of a cluster of its own (which keeps serving the
// slots it has left) and checks that sessions whose own nodes are up (the
// session's and its user's) still refresh and view items; once the master
// is back (empty: it had no replica), the views made meanwhile, which the
// Store kept in its process, are counted, exactly.
func TestDegraded_SessionsRefreshWhileTheViewsNodeIsDown(t *testing.T) {
	t.Parallel()
	cl, c, s := degradedCluster(t, "deg:")
	addrs := cl.Addrs()
	down := owner(t, c, addrs, "deg:{views}:viewed")

	var tokens []string
	for i := 0; len(tokens) < 30; i++ {
		token := fmt.Sprintf("deg-%d", i)
		// A logged-in session needs its own node and its user's logout
		// mark's (see loggedout.go).
		if owner(t, c, addrs, sessionKey("deg:", retail.SessionID(token))) == down ||
			owner(t, c, addrs, rueidisbackend.LogoutMark("deg:", "user-"+token)) == down {
			continue
		}
		if created, err := s.StartSession(bg, token, "user-"+token); err != nil || !created {
			t.Fatalf("StartSession(%q) = %v, %v", token, created, err)
		}
		tokens = append(tokens, token)
	}

	if err := cl.Kill(down); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for i, token := range tokens {
		item := fmt.Sprintf("item-%d", i%3)
		user, ok, err := s.RefreshSession(bg, token, item)
		if err != nil || !ok || user != "user-"+token {
			t.Fatalf("RefreshSession(%q) with %s down = %q, %v, %v; want %q, true, nil", token, addrs[down], user, ok, err, "user-"+token)
		}
		want[item]++
	}
	if user, ok, err := s.CheckToken(bg, tokens[0]); err != nil || !ok || user != "user-"+tokens[0] {
		t.Errorf("CheckToken(%q) with %s down = %q, %v, %v", tokens[0], addrs[down], user, ok, err)
	}

	if err := cl.Restart(down); err != nil {
		t.Fatal(err)
	}
	// The restarted master serves its slots again once its peers see it;
	// until then TopItems fails and the views stay buffered.
	var top []retail.ItemViews
	waitFor(t, func() bool {
		var err error
		top, err = s.TopItems(bg, 10)
		return err == nil && len(top) == len(want)
	})
	for _, iv := range top {
		if iv.Views != want[iv.Item] {
			t.Errorf("%s: %g views, want %g (those made while %s was down)", iv.Item, iv.Views, want[iv.Item], addrs[down])
		}
	}
}

// owner returns the index in addrs of the node that serves key.
func owner(t *testing.T, c rueidis.Client, addrs []string, key string) int {
	t.Helper()
	nodes := c.Nodes()
	for i, addr := range addrs {
		node, ok := nodes[addr]
		if !ok {
			continue
		}
		err := node.Do(bg, node.B().Exists().Key(key).Build()).Error()
		if err == nil {
			return i
		}
		if e, ok := rueidis.IsRedisErr(err); !ok || !redirect(e) {
			t.Fatalf("EXISTS %s on %s: %v", key, addr, err)
		}
	}
	t.Fatalf("no node of %v serves %q", addrs, key)
	return -1
}

func redirect(e *rueidis.RedisError) bool {
	_, moved := e.IsMoved()
	_, ask := e.IsAsk()
	return moved || ask
}

// TestDegraded_AStalledNodeHoldsUpNoRowClaim stalls, with DEBUG SLEEP, the
// master that holds an unscheduled row's copy just as a claim is to delete
// it: the claim still returns the row it claimed, while the master sleeps;
// once the master is back, a later claim finishes the delete and clears
// the row from {rows}:dropped, and the copy is gone.
func TestDegraded_AStalledNodeHoldsUpNoRowClaim(t *testing.T) {
	t.Parallel()
	addrs := stallableCluster(t)
	c := newClient(t, rueidis.ClientOption{InitAddress: addrs})
	prefix := uniquePrefix()
	s := mustNew(t, c, rueidisbackend.Options{Prefix: prefix})
	rowsNode := owner(t, c, addrs, prefix+"{rows}:schedule")
	row, node := "", -1
	for i := 0; node < 0 || node == rowsNode; i++ {
		row = fmt.Sprintf("row-%d", i)
		node = owner(t, c, addrs, prefix+"row:"+row)
	}
	if err := s.ScheduleRowCache(bg, row, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ClaimDueRows(bg, 10); err != nil || len(got) != 1 {
		t.Fatalf("ClaimDueRows = %q, %v, want %q", got, err, row)
	}
	if stored, err := s.SetScheduledRow(bg, row, []byte(`{}`)); !stored || err != nil {
		t.Fatalf("SetScheduledRow = %v, %v, want true, nil", stored, err)
	}
	for r, delay := range map[string]time.Duration{row: 0, "other": time.Hour} {
		if err := s.ScheduleRowCache(bg, r, delay); err != nil {
			t.Fatal(err)
		}
	}

	const stallFor = 4 * time.Second
	st := startStall(t, []string{addrs[node]}, stallFor)
	got, err := s.ClaimDueRows(bg, 10)
	during := time.Since(st.began) < stallFor
	if err != nil || len(got) != 1 || got[0] != "other" {
		t.Fatalf("ClaimDueRows with %s asleep = %q, %v, want [other], nil", addrs[node], got, err)
	}
	if !during {
		t.Errorf("ClaimDueRows returned after %s had woken, want while it slept", addrs[node])
	}
	st.wait(t)

	if got, err := s.ClaimDueRows(bg, 10); err != nil || len(got) != 0 {
		t.Fatalf("ClaimDueRows after the stall = %q, %v, want none, nil", got, err)
	}
	if err := c.Do(bg, c.B().Get().Key(prefix+"row:"+row).Build()).Error(); !rueidis.IsRedisNil(err) {
		t.Errorf("GET of the unscheduled row's copy after the stall = %v, want nil", err)
	}
	if n, err := c.Do(bg, c.B().Hlen().Key(prefix+"{rows}:dropped").Build()).AsInt64(); err != nil || n != 0 {
		t.Errorf("HLEN {rows}:dropped after the stall = %d, %v, want 0", n, err)
	}
}

// TestDegraded_RenewSessionKeepsTheCartWhileTheIndexNodeIsDown logs a guest
// with a cart in (RenewSession, as SessionManager.Login does) while the
// master of the session index is down and the masters of both sessions and
// of the user's index answer, as in the first seconds of a failover. The
// contract (renew.go): RenewSession either succeeds, the new session holding
// the cart, or returns an error leaving the old session unchanged and
// working. Found by a chaos run (a master killed under two shops' load):
// the old session was deleted, then removing its index entry failed and
// RenewSession returned that error, so the caller handed out no token and
// the visitor lost session and cart.
func TestDegraded_RenewSessionKeepsTheCartWhileTheIndexNodeIsDown(t *testing.T) {
	t.Parallel()
	const prefix = "rd:"
	cl, c, s := degradedCluster(t, prefix)
	addrs := cl.Addrs()
	down := owner(t, c, addrs, prefix+"{sessions}:seen")
	sessionKey := func(token string) string { return prefix + "session:{" + retail.SessionID(token) + "}" }
	// Both sessions and the user's index away from the index's node.
	pick := func(format string, key func(string) string) string {
		for i := 0; ; i++ {
			if v := fmt.Sprintf(format, i); owner(t, c, addrs, key(v)) != down {
				return v
			}
		}
	}
	guest := pick("guest-%d", sessionKey)
	renewed := pick("renewed-%d", sessionKey)
	user := pick("alice-%d", func(u string) string { return prefix + "user:{" + u + "}" })

	if _, err := s.StartSession(bg, guest, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.AddToCart(bg, guest, "kettle", 2); err != nil {
		t.Fatal(err)
	}
	if err := cl.Kill(down); err != nil {
		t.Fatal(err)
	}

	// Calls to the dead node wait for it until their context ends, as a
	// request's do.
	ctx, cancel := context.WithTimeout(bg, 2*time.Second)
	defer cancel()
	ok, err := s.RenewSession(ctx, guest, renewed, user)
	t.Logf("RenewSession with the index's node down = %v, %v", ok, err)
	// A logged-in session's calls need the node of its user's logout mark
	// too (see "Failover"), which may be the one down: look once it is back
	// (empty, without replicas; neither session lived there).
	if err := cl.Restart(down); err != nil {
		t.Fatal(err)
	}
	var (
		oldCart, newCart map[string]int
		oldErr, newErr   error
		oldLive          bool
	)
	waitFor(t, func() bool {
		ctx, cancel := context.WithTimeout(bg, time.Second)
		defer cancel()
		oldCart, oldErr = s.Cart(ctx, guest)
		_, oldLive, _ = s.CheckToken(ctx, guest)
		newCart, newErr = s.Cart(ctx, renewed)
		return oldErr == nil && (newErr == nil || errors.Is(newErr, retail.ErrNoSession))
	})
	t.Logf("old session: live %v, cart %v (%v); new session: cart %v (%v)", oldLive, oldCart, oldErr, newCart, newErr)
	switch {
	case err == nil && ok:
		if newCart["kettle"] != 2 {
			t.Errorf("RenewSession succeeded, but the new session's cart = %v, %v; want kettle:2", newCart, newErr)
		}
	case err != nil:
		if !oldLive || oldCart["kettle"] != 2 {
			t.Errorf("RenewSession failed (%v) and the old session is live %v with cart %v (%v): "+
				"the caller hands out no new token, so the visitor lost the session and its cart; "+
				"want the old session unchanged and working", err, oldLive, oldCart, oldErr)
		}
	default:
		t.Errorf("RenewSession = %v, nil for a live guest session", ok)
	}
}
