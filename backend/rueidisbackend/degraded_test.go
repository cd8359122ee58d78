package rueidisbackend_test

import (
	"fmt"
	"testing"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
	"github.com/retailkit/retail/internal/redistest"
)

// TestDegraded_SessionsRefreshWhileTheViewsNodeIsDown kills the master that
// holds the view counts of a cluster of its own (which keeps serving the
// slots it has left) and checks that sessions whose own nodes are up (the
// session's and its user's) still refresh and view items; once the master
// is back (empty: it had no replica), the views made meanwhile, which the
// Store kept in its process, are counted, exactly.
func TestDegraded_SessionsRefreshWhileTheViewsNodeIsDown(t *testing.T) {
	cl, err := redistest.StartCluster(3, "--cluster-require-full-coverage", "no")
	if err != nil {
		unavailable(t, "Redis Cluster", err)
	}
	defer cl.Close()
	addrs := cl.Addrs()
	c := newClient(t, rueidis.ClientOption{InitAddress: addrs})
	s := mustNew(t, c, rueidisbackend.Options{Prefix: "deg:"})
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
