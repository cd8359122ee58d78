package rueidisbackend_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
	"github.com/retailkit/retail/internal/redistest"
)

// The tests in this file move hash slots between the masters of a private
// cluster, as an operator who adds masters and reshards does (redis-cli
// --cluster add-node, reshard, rebalance, or CLUSTER SETSLOT MIGRATING /
// IMPORTING and MIGRATE by hand), while the Store serves.

// slotMover moves slots of a private cluster by hand, through a plain
// connection to each node.
type slotMover struct {
	t     *testing.T
	cl    *redistest.Cluster
	nodes map[string]rueidis.Client // addr -> a plain client of that node
}

func newSlotMover(t *testing.T, cl *redistest.Cluster) *slotMover {
	m := &slotMover{t: t, cl: cl, nodes: map[string]rueidis.Client{}}
	m.refresh()
	return m
}

// refresh connects to nodes added since.
func (m *slotMover) refresh() {
	for _, addr := range m.cl.Addrs() {
		if m.nodes[addr] == nil {
			m.nodes[addr] = newClient(m.t, rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true})
		}
	}
}

func (m *slotMover) do(addr string, args ...string) (rueidis.RedisMessage, error) {
	c := m.nodes[addr]
	return c.Do(bg, c.B().Arbitrary(args...).Build()).ToMessage()
}

func (m *slotMover) must(addr string, args ...string) rueidis.RedisMessage {
	m.t.Helper()
	msg, err := m.do(addr, args...)
	if err != nil {
		m.t.Fatalf("%s on %s: %v", strings.Join(args, " "), addr, err)
	}
	return msg
}

func (m *slotMover) id(addr string) string {
	m.t.Helper()
	msg := m.must(addr, "CLUSTER", "MYID")
	id, err := msg.ToString()
	if err != nil {
		m.t.Fatal(err)
	}
	return id
}

// owner returns the address of the master that serves slot, as node
// addr's CLUSTER NODES says.
func (m *slotMover) owner(slot uint16) string {
	m.t.Helper()
	msg := m.must(m.cl.Addrs()[0], "CLUSTER", "NODES")
	nodes, err := msg.ToString()
	if err != nil {
		m.t.Fatal(err)
	}
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.Contains(f[2], "master") {
			continue
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue
			}
			lo, hi, _ := strings.Cut(r, "-")
			if hi == "" {
				hi = lo
			}
			a, _ := strconv.Atoi(lo)
			b, _ := strconv.Atoi(hi)
			if int(slot) >= a && int(slot) <= b {
				addr, _, _ := strings.Cut(f[1], "@")
				return addr
			}
		}
	}
	m.t.Fatalf("no master serves slot %d", slot)
	return ""
}

// begin opens the migration of slot from its owner to dst, as redis-cli
// does: IMPORTING on dst, then MIGRATING on the owner. It returns the owner.
func (m *slotMover) begin(slot uint16, dst string) string {
	m.t.Helper()
	src := m.owner(slot)
	if src == dst {
		m.t.Fatalf("slot %d is on %s already", slot, dst)
	}
	s := strconv.Itoa(int(slot))
	m.must(dst, "CLUSTER", "SETSLOT", s, "IMPORTING", m.id(src))
	m.must(src, "CLUSTER", "SETSLOT", s, "MIGRATING", m.id(dst))
	return src
}

// migrate moves up to n keys (all if n <= 0) of slot from src to dst with
// MIGRATE, and returns how many it moved.
func (m *slotMover) migrate(slot uint16, src, dst string, n int) int {
	m.t.Helper()
	moved := 0
	host, port, _ := strings.Cut(dst, ":")
	for n <= 0 || moved < n {
		batch := 10
		if n > 0 {
			batch = min(batch, n-moved)
		}
		msg := m.must(src, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(int(slot)), strconv.Itoa(batch))
		keys, err := msg.AsStrSlice()
		if err != nil {
			m.t.Fatal(err)
		}
		if len(keys) == 0 {
			break
		}
		m.must(src, append([]string{"MIGRATE", host, port, "", "0", "5000", "KEYS"}, keys...)...)
		moved += len(keys)
	}
	return moved
}

// finish moves the rest of slot's keys and gives the slot to dst, telling
// dst, then src, then every other master, as redis-cli does.
func (m *slotMover) finish(slot uint16, src, dst string) {
	m.t.Helper()
	m.migrate(slot, src, dst, 0)
	s := strconv.Itoa(int(slot))
	id := m.id(dst)
	m.must(dst, "CLUSTER", "SETSLOT", s, "NODE", id)
	m.must(src, "CLUSTER", "SETSLOT", s, "NODE", id)
	for _, addr := range m.cl.Addrs() {
		if addr != src && addr != dst {
			m.do(addr, "CLUSTER", "SETSLOT", s, "NODE", id) // a replica or a node that knows already may refuse
		}
	}
}

// move is a migration of a slot, begun, from src to dst.
type move struct {
	m        *slotMover
	slot     uint16
	src, dst string
}

// start begins the migration of key's slot from its master to another.
func (m *slotMover) start(key string) move {
	m.t.Helper()
	sl := slot(key)
	src := m.owner(sl)
	dst := m.other(src)
	m.begin(sl, dst)
	return move{m: m, slot: sl, src: src, dst: dst}
}

// migrate moves up to n of the slot's keys (all if n <= 0).
func (mv move) migrate(n int) int { return mv.m.migrate(mv.slot, mv.src, mv.dst, n) }

// finish moves the rest and gives the slot to dst.
func (mv move) finish() { mv.m.finish(mv.slot, mv.src, mv.dst) }

// finishOnTryAgain finishes mv in the background once either of its
// nodes has refused a command with TRYAGAIN (INFO errorstats), so that the
// call under test has met the moving slot; done waits for that.
func (mv move) finishOnTryAgain() (done func()) {
	count := func() int {
		n := 0
		for _, addr := range []string{mv.src, mv.dst} {
			info, err := mv.m.do(addr, "INFO", "errorstats")
			if err != nil {
				continue
			}
			text, _ := info.ToString()
			_, after, ok := strings.Cut(text, "errorstat_TRYAGAIN:count=")
			if !ok {
				continue
			}
			v, _, _ := strings.Cut(after, "\r")
			k, _ := strconv.Atoi(strings.TrimSpace(v))
			n += k
		}
		return n
	}
	before := count()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for deadline := time.Now().Add(30 * time.Second); count() == before; { // a watchdog
			if time.Now().After(deadline) {
				mv.m.t.Error("no command met the moving slot in 30 s")
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		mv.finish()
	}()
	return func() { <-finished }
}

// other returns a master of the cluster other than addr.
func (m *slotMover) other(addr string) string {
	for _, a := range m.cl.Addrs() {
		if a != addr {
			return a
		}
	}
	m.t.Fatal("no other master")
	return ""
}

// privateCluster starts a private 3-master cluster for a test that moves
// its slots.
func privateCluster(t *testing.T) (*redistest.Cluster, *slotMover) {
	t.Helper()
	cl, err := redistest.StartPrivateCluster(3)
	if err != nil {
		unavailable(t, "private Redis Cluster", err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl, newSlotMover(t, cl)
}

// errClass names the kind of error a call returned, for the tallies.
func errClass(err error) string {
	var re *rueidis.RedisError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "deadline"
	case errors.As(err, &re):
		msg := re.Error()
		switch {
		case strings.HasPrefix(msg, "TRYAGAIN"):
			return "TRYAGAIN"
		case strings.HasPrefix(msg, "ASK"):
			return "ASK"
		case strings.HasPrefix(msg, "MOVED"):
			return "MOVED"
		case strings.HasPrefix(msg, "CROSSSLOT"):
			return "CROSSSLOT"
		case strings.HasPrefix(msg, "CLUSTERDOWN"):
			return "CLUSTERDOWN"
		case strings.Contains(msg, "non local key"):
			return "script: non local key"
		}
		return "redis: " + msg
	}
	return "other: " + err.Error()
}

// TestReshard_LogoutUserWhileItsSlotMoves: while the slot of a user's keys
// migrates, LogoutUser's script, which names two keys of that slot (the
// user's loggedout key, absent until the first LogoutUser, and the user's
// index), is refused with TRYAGAIN by the source and by the target, which
// means it did not run and should be sent again. A LogoutUser that starts
// while the slot moves must succeed once the slot has moved, and end the
// user's sessions.
func TestReshard_LogoutUserWhileItsSlotMoves(t *testing.T) {
	t.Parallel()
	cl, m := privateCluster(t)
	c := newClient(t, rueidis.ClientOption{InitAddress: cl.Addrs()})
	prefix := uniquePrefix()
	s := mustNew(t, c, rueidisbackend.Options{Prefix: prefix})
	const user = "alice"
	for _, tok := range []string{"a1", "a2"} {
		if err := s.UpdateToken(bg, tok, user, "item"); err != nil {
			t.Fatal(err)
		}
	}
	mv := m.start(userKey(prefix, user))
	// The user's index moves first; its loggedout key does not exist.
	if n := mv.migrate(0); n != 1 {
		t.Fatalf("moved %d keys of slot %d, want the user's index alone", n, mv.slot)
	}
	done := mv.finishOnTryAgain()
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	n, err := s.LogoutUser(ctx, user)
	done()
	if err != nil || n != 2 {
		t.Errorf("LogoutUser while the user's slot moves = %d, %v (%s); want 2, nil", n, err, errClass(err))
	}
	for _, tok := range []string{"a1", "a2"} {
		if _, ok, err := s.CheckToken(bg, tok); ok || err != nil {
			t.Errorf("CheckToken(%q) after LogoutUser = %v, %v; want a miss", tok, ok, err)
		}
	}
}

// TestReshard_LogoutUserWhoseSlotStaysHalfMovedEndsAtItsDeadline: a
// migration left half done (the user's index moved, its loggedout key not
// there) answers TRYAGAIN for as long as it lasts. A LogoutUser whose
// context ends meanwhile must return the context's error, which callers
// test for (a worker stops on it), not the last TRYAGAIN.
func TestReshard_LogoutUserWhoseSlotStaysHalfMovedEndsAtItsDeadline(t *testing.T) {
	t.Parallel()
	cl, m := privateCluster(t)
	c := newClient(t, rueidis.ClientOption{InitAddress: cl.Addrs()})
	prefix := uniquePrefix()
	s := mustNew(t, c, rueidisbackend.Options{Prefix: prefix})
	if err := s.UpdateToken(bg, "a1", "alice", "item"); err != nil {
		t.Fatal(err)
	}
	mv := m.start(userKey(prefix, "alice"))
	mv.migrate(0)
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	_, err := s.LogoutUser(ctx, "alice")
	mv.finish()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("LogoutUser while the user's slot stays half moved, past its deadline = %v (%s), want an error matching context.DeadlineExceeded", err, errClass(err))
	}
}

// TestReshard_FlushViewsWhileTheViewsSlotMoves: the view counts and each
// process's last flush share the {views} slot; while it migrates, the
// flush's script is refused with TRYAGAIN. A FlushViews that starts while
// the slot moves must succeed once it has moved, counting each view once.
func TestReshard_FlushViewsWhileTheViewsSlotMoves(t *testing.T) {
	t.Parallel()
	cl, m := privateCluster(t)
	c := newClient(t, rueidis.ClientOption{InitAddress: cl.Addrs()})
	prefix := uniquePrefix()
	s := mustNew(t, c, rueidisbackend.Options{Prefix: prefix})
	if err := s.CountView(bg, "item-1"); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushViews(bg); err != nil {
		t.Fatal(err)
	}
	mv := m.start(viewedKey(prefix))
	mv.migrate(1) // one of the two keys
	done := mv.finishOnTryAgain()
	for range 3 {
		if err := s.CountView(bg, "item-1"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	err := s.FlushViews(ctx)
	done()
	if err != nil {
		t.Errorf("FlushViews while the views' slot moves = %v (%s), want nil", err, errClass(err))
	}
	if err := s.FlushViews(bg); err != nil {
		t.Fatal(err)
	}
	top, err := s.TopItems(bg, 10)
	if err != nil || len(top) != 1 || top[0].Views != 4 {
		t.Errorf("TopItems = %v, %v; want item-1 with 4 views", top, err)
	}
}

// TestReshard_ScheduleRowWhileTheRowsSlotMoves: the row schedule, the
// delays and the dropped rows share the {rows} slot; while it migrates,
// every row script is refused with TRYAGAIN as soon as one of the three
// keys is missing on the node (dropped is usually absent). A
// ScheduleRowCache that starts while the slot moves must succeed once it
// has moved.
func TestReshard_ScheduleRowWhileTheRowsSlotMoves(t *testing.T) {
	t.Parallel()
	cl, m := privateCluster(t)
	c := newClient(t, rueidis.ClientOption{InitAddress: cl.Addrs()})
	prefix := uniquePrefix()
	s := mustNew(t, c, rueidisbackend.Options{Prefix: prefix})
	if err := s.ScheduleRowCache(bg, "row-1", time.Minute); err != nil {
		t.Fatal(err)
	}
	mv := m.start(prefix + "{rows}:schedule")
	done := mv.finishOnTryAgain()
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	err := s.ScheduleRowCache(ctx, "row-2", time.Minute)
	done()
	if err != nil {
		t.Errorf("ScheduleRowCache while the rows' slot moves = %v (%s), want nil", err, errClass(err))
	}
	got, err := s.ClaimDueRows(bg, 10)
	if err != nil || len(got) != 2 {
		t.Errorf("ClaimDueRows after the move = %q, %v; want both rows", got, err)
	}
}

// TestReshard_ReplacingAnEndedSessionWhileItsSlotMoves: UpdateToken on a
// token whose session has expired (its key lingers for TTLSlack) replaces
// the session in one script: on the source of a migrating slot, that
// script deletes the key and then writes it again, and Redis refuses the
// write ("Script attempted to access a non local key", since the key is no
// longer there and the slot is migrating) after the delete ran. The call
// fails, and no session is left. It must succeed and leave a live
// session, as it does when no slot moves.
func TestReshard_ReplacingAnEndedSessionWhileItsSlotMoves(t *testing.T) {
	t.Parallel()
	cl, m := privateCluster(t)
	c := newClient(t, rueidis.ClientOption{InitAddress: cl.Addrs()})
	prefix := uniquePrefix()
	clock := retail.NewManualClock(time.Now())
	s := mustNew(t, c, rueidisbackend.Options{Prefix: prefix, Clock: clock})
	for _, tc := range []struct {
		name string
		call func(tok string) error
	}{
		{"UpdateToken", func(tok string) error { return s.UpdateToken(bg, tok, "bob", "item-2") }},
		{"StartSession", func(tok string) error {
			created, err := s.StartSession(bg, tok, "bob")
			if err == nil && !created {
				err = errors.New("not created")
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := "expired-" + tc.name
			if err := s.UpdateToken(bg, tok, "bob", "item-1"); err != nil {
				t.Fatal(err)
			}
			clock.Advance(retail.DefaultIdleTimeout + time.Second) // expired; its key stays for TTLSlack
			key := sessionKey(prefix, retail.SessionID(tok))
			if !exists(t, c, key) {
				t.Fatal("the expired session's key is gone already")
			}
			mv := m.start(key)
			err := tc.call(tok)
			still := exists(t, c, key) // through the cluster client: the source, or the target by ASK
			mv.finish()
			if err != nil {
				t.Errorf("%s over an expired session while its slot migrates = %v (%s), want nil", tc.name, err, errClass(err))
			}
			if user, ok, err := s.CheckToken(bg, tok); !ok || err != nil || user != "bob" {
				t.Errorf("CheckToken after it = %q, %v, %v (session key there during the move: %v); want bob's live session", user, ok, err, still)
			}
		})
	}
}

// TestReshard_AnotherProcessSeesLogoutUserAfterTheMarkMoved: a process
// caches, through the client-side cache, that a bucket has no logout mark
// (the key is absent). The mark's slot then moves to another master, and
// another process's LogoutUser writes the mark there. The first process's
// cached "absent" is on its connection to the old master, which never
// hears of the write (the key was never there, so MIGRATE invalidated
// nothing): the process serves a session that LogoutUser ended until its
// client learns of the move, from a MOVED reply (which cache hits never
// get) or a refresh of its slot map, which is what
// ClusterOption.ShardsRefreshInterval is for (the package doc recommends
// it). Here CacheTTL is an hour, so that without the refresh the session
// would be served past the test's watchdog. The session is one that the
// user's index missed (as a failover or an index write that raced
// LogoutUser leaves it), which only the mark ends.
func TestReshard_AnotherProcessSeesLogoutUserAfterTheMarkMoved(t *testing.T) {
	t.Parallel()
	cl, m := privateCluster(t)
	prefix := uniquePrefix()
	c1 := newClient(t, rueidis.ClientOption{InitAddress: cl.Addrs(), ClusterOption: rueidis.ClusterOption{ShardsRefreshInterval: 100 * time.Millisecond}})
	c2 := newClient(t, rueidis.ClientOption{InitAddress: cl.Addrs()})
	s1 := mustNew(t, c1, rueidisbackend.Options{Prefix: prefix, CacheTTL: time.Hour})
	s2 := mustNew(t, c2, rueidisbackend.Options{Prefix: prefix})
	const user, tok = "carol", "carol-phone"
	if err := s2.UpdateToken(bg, tok, user, "item"); err != nil {
		t.Fatal(err)
	}
	// The user's index misses the session.
	if err := c2.Do(bg, c2.B().Zrem().Key(userKey(prefix, user)).Member(retail.SessionID(tok)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	// Process 1 serves the session, caching its login and the absent mark.
	for range 2 {
		if _, ok, err := s1.CheckToken(bg, tok); !ok || err != nil {
			t.Fatalf("CheckToken = %v, %v; want live", ok, err)
		}
	}
	// The mark's and the user's slots move to another master; no key
	// moves with them.
	for _, key := range []string{rueidisbackend.LogoutMark(prefix, user), loggedOutKey(prefix, user)} {
		mv := m.start(key)
		mv.finish()
	}
	if _, err := s2.LogoutUser(bg, user); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		_, ok, err := s1.CheckToken(bg, tok)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if time.Since(start) > 30*time.Second { // a watchdog, not a measure
			t.Fatal("process 1 still serves the session 30 s after another process's LogoutUser")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("process 1 saw the LogoutUser after %v", time.Since(start).Round(time.Millisecond))
	// Only now: process 2's read of the session would end it, which would
	// tell process 1 through the session's own key.
	if _, ok, err := s2.CheckToken(bg, tok); ok || err != nil {
		t.Errorf("process 2 CheckToken after its LogoutUser = %v, %v; want a miss", ok, err)
	}
}

// TestReshard_ScriptsThatEmptyAKeyWhileItsSlotMoves: on the source of a
// slot that is moving, Redis stops a script that touches a key after one
// of its commands emptied (deleted) it, with what it wrote so far applied.
// The scripts that remove members (of an index, of the dropped rows, of
// the view counts) must empty a key, if they do, with their last command.
// Each runs here on a key of a slot in MIGRATING state, removing every
// member (two, or more than two chunks' worth), with a member the key does
// not hold given last.
func TestReshard_ScriptsThatEmptyAKeyWhileItsSlotMoves(t *testing.T) {
	t.Parallel()
	cl, m := privateCluster(t)
	c := newClient(t, rueidis.ClientOption{InitAddress: cl.Addrs()})
	prefix := uniquePrefix()
	s := mustNew(t, c, rueidisbackend.Options{Prefix: prefix})
	const many = 2500 // members: more than two of the scripts' chunks of 1,000
	zset := func(key string) func() rueidis.Completed {
		return func() rueidis.Completed {
			return c.B().Zadd().Key(key).ScoreMember().ScoreMember(100, "a").ScoreMember(200, "b").Build()
		}
	}
	for _, tc := range []struct {
		name string
		key  string
		fill func() rueidis.Completed
		call func() error
	}{
		{"unindexUser", userKey(prefix, "alice"), zset(userKey(prefix, "alice")), func() error {
			return rueidisbackend.RunUnindexUser(s, "alice", "a", "100", "b", "200", "x", "1")
		}},
		{"unindexUser past a chunk", userKey(prefix, "bob"), func() rueidis.Completed {
			z := c.B().Zadd().Key(userKey(prefix, "bob")).ScoreMember()
			for i := range many {
				z = z.ScoreMember(float64(i), fmt.Sprint("m", i))
			}
			return z.Build()
		}, func() error {
			var pairs []string
			for i := range many {
				pairs = append(pairs, fmt.Sprint("m", i), fmt.Sprint(i))
			}
			return rueidisbackend.RunUnindexUser(s, "bob", append(pairs, "x", "1")...)
		}},
		{"unindex", indexKey(prefix), zset(indexKey(prefix)), func() error {
			return rueidisbackend.RunUnindex(s, "a", "100", "b", "200", "x", "1")
		}},
		{"reindex", indexKey(prefix), zset(indexKey(prefix)), func() error {
			return rueidisbackend.RunReindex(s, "a", "100", "", "b", "200", "", "x", "1", "")
		}},
		{"clearDropped", prefix + "{rows}:dropped", func() rueidis.Completed {
			return c.B().Hset().Key(prefix+"{rows}:dropped").FieldValue().FieldValue("a", "c1").FieldValue("b", "c2").Build()
		}, func() error {
			return rueidisbackend.RunClearDropped(s, "a", "c1", "b", "c2", "x", "c3")
		}},
		{"RescaleViews keeping none", viewedKey(prefix), func() rueidis.Completed {
			return c.B().Zadd().Key(viewedKey(prefix)).ScoreMember().ScoreMember(-3, "a").ScoreMember(-1, "b").Build()
		}, func() error {
			return s.RescaleViews(bg, 0, 0.5)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.Do(bg, tc.fill()).Error(); err != nil {
				t.Fatal(err)
			}
			mv := m.start(tc.key)
			err := tc.call()
			left := exists(t, c, tc.key)
			mv.finish()
			if err != nil {
				t.Errorf("%s while the slot of %s moves = %v (%s), want nil", tc.name, tc.key, err, errClass(err))
			}
			if left {
				t.Errorf("%s left %s, want every member removed", tc.name, tc.key)
			}
		})
	}
}

// TestReshard_ClaimThatEmptiesTheScheduleWhileItsSlotMoves: a claim whose
// only due row was unscheduled empties the schedule and the delays; on the
// source of the moving {rows} slot it must still succeed.
func TestReshard_ClaimThatEmptiesTheScheduleWhileItsSlotMoves(t *testing.T) {
	t.Parallel()
	cl, m := privateCluster(t)
	c := newClient(t, rueidis.ClientOption{InitAddress: cl.Addrs()})
	prefix := uniquePrefix()
	s := mustNew(t, c, rueidisbackend.Options{Prefix: prefix})
	if err := s.ScheduleRowCache(bg, "row-1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.ScheduleRowCache(bg, "row-1", 0); err != nil {
		t.Fatal(err)
	}
	// A row an earlier claim left to delete, so that every key of the
	// slot is on the source when the claim starts.
	dropped := prefix + "{rows}:dropped"
	if err := c.Do(bg, c.B().Hset().Key(dropped).FieldValue().FieldValue("row-0", "old-claim").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	mv := m.start(dropped)
	rows, err := s.ClaimDueRows(bg, 10)
	mv.finish()
	if err != nil || len(rows) != 0 {
		t.Errorf("ClaimDueRows while the rows' slot moves = %q, %v (%s); want none, nil", rows, err, errClass(err))
	}
	if rows, err := s.ClaimDueRows(bg, 10); err != nil || len(rows) != 0 {
		t.Errorf("ClaimDueRows after the move = %q, %v; want none, nil (row-1 unscheduled)", rows, err)
	}
}
