package rueidisbackend_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
	"github.com/retailkit/retail/internal/redistest"
)

// TestFailover_RepairLeavesNoOrphans starts a cluster of 3 masters with a
// replica each, runs every session call from many goroutines, and kills
// (SIGKILL) the master that holds the session index in the middle of it.
// Its replica takes over without the writes it had not received yet, so
// sessions lose their index entries, or their user's, and index entries
// lose their sessions. Once the cluster is whole again and the load has
// stopped, RepairSessions must leave a keyspace, scanned on every master,
// with no session without its index entry or its user's, no index entry
// without its session and no session key without its login, every indexed
// session whole; and cleaning to 0 must then leave no session key at all.
// (Entries of users' indexes whose session is gone are never returned and
// go by the index's lifetime pruning; they are counted, not mended.)
func TestFailover_RepairLeavesNoOrphans(t *testing.T) {
	t.Parallel()
	cl, err := redistest.StartReplicatedCluster(3, 1,
		// A master is failed, and its replica elected, about a second
		// after it stops answering.
		"--cluster-node-timeout", "1000")
	if err != nil {
		unavailable(t, "replicated Redis Cluster", err)
	}
	defer cl.Close()
	addrs := cl.Addrs()
	c := newClient(t, rueidis.ClientOption{InitAddress: addrs})
	const prefix = "fo:"
	// The clock runs with the load, a millisecond now and then, so that
	// the test can then move it past the time a stray index entry is given
	// to meet its session (see RepairSessions).
	clock := retail.NewManualClock(time.Now())
	s := mustNew(t, c, rueidisbackend.Options{Prefix: prefix, Clock: clock})
	down := owner(t, c, addrs, prefix+"{sessions}:seen")

	load := startLoad(s, clock)
	load.waitSucceeded(t, 5000) // sessions to lose entries of
	if err := cl.Kill(down); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := cl.WaitHealthy(30*time.Second, down); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s, master of the session index, killed; its replica took over in %v", addrs[down], time.Since(killed).Round(time.Millisecond))
	load.waitSucceeded(t, 2000) // load on the new master too
	ops, failed := load.stop()
	t.Logf("load: %d calls, %d failed (during the failover)", ops, failed)

	clock.Advance(2 * time.Minute) // beyond strayGrace
	before := countOrphans(t, c, prefix)
	t.Logf("before repair: %s", before)

	if before.unindexed+before.strays+before.unlisted == 0 {
		t.Fatalf("before repair: %s; the failover left nothing to repair, so the test shows nothing", before)
	}
	waitFor(t, func() bool {
		// Until the client has seen the new topology, a repair can fail.
		_, err = s.RepairSessions(bg)
		return err == nil
	})
	// Each orphan takes one write to mend; a repair that failed midway
	// may have mended some, so count every repair's work.
	repaired := s.Stats().SessionsRepaired
	t.Logf("RepairSessions wrote or removed %d entries", repaired)
	if want := uint64(before.unindexed + before.strays + before.unlisted); repaired < want {
		t.Errorf("Stats().SessionsRepaired = %d, want at least the %d orphans counted", repaired, want)
	}
	if again, err := s.RepairSessions(bg); again != 0 || err != nil {
		t.Errorf("second RepairSessions = %d, %v; want 0, nil (the first one mended everything)", again, err)
	}
	if after := countOrphans(t, c, prefix); after != (orphans{}) {
		t.Errorf("after repair: %s, want none", after)
	}
	live := wantWholeKeyspace(t, s, c, prefix)
	if live == 0 {
		t.Fatal("no session survived the load: nothing was tested")
	}

	removed, err := s.CleanSessions(bg, 0, 1<<30)
	if err != nil {
		t.Fatalf("CleanSessions(0) = %d, %v", removed, err)
	}
	if left := scanAll(t, c, prefix); len(sessionKeysIn(left, prefix)) != 0 {
		t.Errorf("cleaning to 0 removed %d sessions and left session keys %q", removed, sessionKeysIn(left, prefix))
	}
	if n, err := s.SessionCount(bg); n != 0 || err != nil {
		t.Errorf("SessionCount after cleaning to 0 = %d, %v; want 0, nil", n, err)
	}
}

// sessionKeysIn returns the keys among keys that belong to sessions.
func sessionKeysIn(keys []string, prefix string) []string {
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(k, prefix+"session:{") {
			out = append(out, k)
		}
	}
	return out
}

// orphans counts what a failover leaves half done.
type orphans struct {
	unindexed  int // sessions without an index entry
	strays     int // index entries without a session
	unlisted   int // sessions of a user missing from the user's index
	headless   int // session keys without a login
	unreadable int // login keys that do not parse
}

func (o orphans) String() string {
	return fmt.Sprintf("%d sessions without index entry, %d index entries without session, %d sessions missing from their user's index, %d session keys without login, %d unreadable logins",
		o.unindexed, o.strays, o.unlisted, o.headless, o.unreadable)
}

// countOrphans scans every master and counts the orphans of each kind.
func countOrphans(t *testing.T, c rueidis.Client, prefix string) orphans {
	t.Helper()
	var o orphans
	keys := scanAll(t, c, prefix)
	exists := map[string]bool{}
	for _, k := range keys {
		exists[k] = true
	}
	indexed, err := c.Do(bg, c.B().Zrange().Key(prefix+"{sessions}:seen").Min("0").Max("-1").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	inIndex := map[string]bool{}
	for _, tok := range indexed {
		inIndex[tok] = true
		if !exists[sessionKey(prefix, tok)] {
			o.strays++
		}
	}
	for _, k := range keys {
		rest, ok := strings.CutPrefix(k, prefix+"session:{")
		if !ok {
			continue
		}
		tok := strings.NewReplacer("%25", "%", "%7D", "}").Replace(strings.TrimSuffix(rest, "}"))
		if !inIndex[tok] {
			o.unindexed++
		}
		login, err := c.Do(bg, c.B().Hget().Key(k).Field("login").Build()).ToString()
		if rueidis.IsRedisNil(err) {
			if n, err := c.Do(bg, c.B().Exists().Key(k).Build()).AsInt64(); err == nil && n == 1 {
				o.headless++ // a session's fields without its login
			}
			continue // else expired or cleaned since the scan
		}
		if err != nil {
			t.Fatal(err)
		}
		f := strings.SplitN(login, " ", 3)
		if len(f) != 3 {
			o.unreadable++
			continue
		}
		if user := f[2]; user != "" {
			_, err := c.Do(bg, c.B().Zscore().Key(userKey(prefix, user)).Member(tok).Build()).AsFloat64()
			if rueidis.IsRedisNil(err) {
				o.unlisted++
			} else if err != nil {
				t.Fatal(err)
			}
		}
	}
	return o
}

// load runs session calls from many goroutines until stopped.
type load struct {
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	ops, failed atomic.Int64
}

// startLoad starts 16 goroutines that create, refresh, renew, log out and
// clean sessions of 2,000 tokens and 300 users, each call with a short
// deadline so that calls to a dead master fail instead of waiting.
func startLoad(s *rueidisbackend.Store, clock *retail.ManualClock) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{cancel: cancel}
	for g := range 16 {
		l.wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for ctx.Err() == nil {
				tok := fmt.Sprintf("fo-%d", r.IntN(2000))
				user := fmt.Sprintf("user-%d", r.IntN(300))
				item := fmt.Sprintf("item-%d", r.IntN(50))
				cctx, done := context.WithTimeout(ctx, 300*time.Millisecond)
				var err error
				switch op := r.IntN(20); {
				case op < 8:
					err = s.UpdateToken(cctx, tok, user, item)
				case op < 10:
					_, err = s.StartSession(cctx, tok, user)
				case op < 14:
					_, _, err = s.RefreshSession(cctx, tok, item)
				case op < 15:
					err = s.AddToCart(cctx, tok, item, 1)
				case op < 16:
					_, err = s.RenewSession(cctx, tok, fmt.Sprintf("fo-%d", r.IntN(2000)), user)
				case op < 17:
					err = s.Logout(cctx, tok)
				case op < 18:
					_, err = s.LogoutUser(cctx, user)
				case op < 19:
					_, err = s.CleanSessions(cctx, 1500, 20)
				default:
					clock.Advance(time.Millisecond)
				}
				done()
				if errors.Is(err, retail.ErrNoSession) || errors.Is(err, retail.ErrInvalid) {
					err = nil
				}
				if ctx.Err() != nil {
					return
				}
				l.ops.Add(1)
				if err != nil {
					l.failed.Add(1)
				}
			}
		})
	}
	return l
}

// waitSucceeded waits until n more calls of the load have succeeded, so
// that the test depends on work done rather than on time passed.
func (l *load) waitSucceeded(t *testing.T, n int64) {
	t.Helper()
	start := l.ops.Load() - l.failed.Load()
	waitFor(t, func() bool { return l.ops.Load()-l.failed.Load() >= start+n })
}

// stop ends the load and returns how many calls it made and how many of
// them failed.
func (l *load) stop() (ops, failed int64) {
	l.cancel()
	l.wg.Wait()
	return l.ops.Load(), l.failed.Load()
}

// TestFailover_LogoutUserEndsSessionsTheIndexLost logs one user in again
// and again from 16 goroutines and kills the master that holds the user's
// index meanwhile: its replica takes over without the last entries it had
// not received, so the index misses sessions that exist. LogoutUser,
// acknowledged once the cluster is whole, must still end every one of
// them.
func TestFailover_LogoutUserEndsSessionsTheIndexLost(t *testing.T) {
	t.Parallel()
	cl, err := redistest.StartReplicatedCluster(3, 1, "--cluster-node-timeout", "1000")
	if err != nil {
		unavailable(t, "replicated Redis Cluster", err)
	}
	defer cl.Close()
	addrs := cl.Addrs()
	c := newClient(t, rueidis.ClientOption{InitAddress: addrs})
	const prefix, user = "lu:", "victim"
	clock := retail.NewManualClock(time.Now())
	s := mustNew(t, c, rueidisbackend.Options{Prefix: prefix, Clock: clock})
	if _, err := s.StartSession(bg, "first", user); err != nil {
		t.Fatal(err)
	}
	down := owner(t, c, addrs, prefix+"user:{"+user+"}")

	ctx, cancel := context.WithCancel(bg)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		started = []string{"first"}
		next    atomic.Int64
	)
	for range 16 {
		wg.Go(func() {
			for ctx.Err() == nil {
				token := fmt.Sprintf("login-%d", next.Add(1))
				cctx, done := context.WithTimeout(ctx, 300*time.Millisecond)
				ok, err := s.StartSession(cctx, token, user)
				done()
				if ok && err == nil {
					mu.Lock()
					started = append(started, token)
					mu.Unlock()
				}
			}
		})
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(started) > 2000 })
	if err := cl.Kill(down); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitHealthy(30*time.Second, down); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	n := len(started)
	mu.Unlock()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(started) > n+500 })
	cancel()
	wg.Wait()

	clock.Advance(time.Millisecond)
	var listed []retail.SessionInfo
	waitFor(t, func() bool {
		listed, err = s.UserSessions(bg, user)
		return err == nil
	})
	var ended int
	waitFor(t, func() bool {
		// Until the client has seen the new topology, a call can fail.
		ended, err = s.LogoutUser(bg, user)
		return err == nil
	})
	live := 0
	for _, token := range started {
		if _, ok, err := s.CheckToken(bg, token); ok || err != nil {
			live++
			if live == 1 {
				t.Errorf("CheckToken(%q) after an acknowledged LogoutUser = %v, %v, want a miss", token, ok, err)
			}
		}
	}
	t.Logf("%d sessions started, %d listed by the index after the failover (%d lost), LogoutUser ended %d; %d live after it",
		len(started), len(listed), len(started)-len(listed), ended, live)
	if live != 0 {
		t.Errorf("%d of %d sessions live after an acknowledged LogoutUser, want 0", live, len(started))
	}
}
