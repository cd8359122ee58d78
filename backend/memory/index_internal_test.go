package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
)

// The suite sees the Store from outside; these tests look at its insides,
// which the suite cannot: the shards' maps of sessions and lists by age, the
// index by user and the count of sessions must stay in step through every
// call, or memory leaks, listings lie and cleaning goes out of order.

// checkIndexes fails the test unless the shards, their byAge lists, byUser
// and count describe the same sessions. The caller must not be racing other
// calls.
func checkIndexes(t *testing.T, s *store, after string) {
	t.Helper()
	s.lockShards()
	defer s.unlockShards()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("after %s: "+format, append([]any{after}, args...)...)
	}
	all := map[string]*session{}
	for i := range s.shards {
		sh := &s.shards[i]
		if sh.index != i {
			fail("shard %d has index %d", i, sh.index)
		}
		for token, x := range sh.sessions {
			if x.token != token {
				fail("sessions[%q] holds the session of %q", token, x.token)
			}
			if sh != s.shard(token) {
				fail("session %q is held in shard %d, not its own", token, i)
			}
			all[token] = x
		}
		checkByAge(t, sh, fail)
	}
	if n := s.count.Load(); n != int64(len(all)) {
		fail("count is %d, the shards hold %d sessions", n, len(all))
	}

	indexed := 0
	for i := range s.users {
		for user, head := range s.users[i].byUser {
			if shardOf(s.seed, user) != i {
				fail("byUser[%q] is headed in user shard %d, not its own", user, i)
			}
			if head == nil || head.prevOfUser != nil {
				fail("byUser[%q] is not the head of a list", user)
			}
			var prev *session
			for x := head; x != nil; prev, x = x, x.nextOfUser {
				indexed++
				if indexed > len(all) {
					fail("byUser holds more than the %d sessions (a cycle?)", len(all))
				}
				if x.user != user {
					fail("byUser[%q] holds %q, which is logged in as %q", user, x.token, x.user)
				}
				if all[x.token] != x {
					fail("byUser[%q] holds %q, which no shard does", user, x.token)
				}
				if x.prevOfUser != prev {
					fail("byUser[%q]: %q links back to the wrong session", user, x.token)
				}
			}
		}
	}
	users := 0
	for _, x := range all {
		if x.user != "" {
			users++
		} else if x.prevOfUser != nil || x.nextOfUser != nil {
			fail("guest session %q is linked among a user's sessions", x.token)
		}
	}
	if indexed != users {
		fail("byUser holds %d sessions, the shards have %d logged in", indexed, users)
	}
}

// checkByAge fails unless sh's byAge list holds exactly sh's sessions, each
// younger than every session before it that is not marked moved, and
// unless sh's seq is the highest of its sessions'.
func checkByAge(t *testing.T, sh *sessionShard, fail func(format string, args ...any)) {
	t.Helper()
	inList := 0
	var older, settled *session // settled: the last session not moved
	for x := sh.byAge.oldest; x != nil; older, x = x, x.newer {
		inList++
		if inList > len(sh.sessions) {
			fail("byAge holds more than the shard's %d sessions (a cycle?)", len(sh.sessions))
		}
		if sh.sessions[x.token] != x {
			fail("byAge holds %q, which its shard's map does not", x.token)
		}
		if x.older != older {
			fail("byAge: %q links back to the wrong session", x.token)
		}
		if settled != nil && !before(settled, x) {
			fail("byAge: %q (seen %d, seq %d) is before %q (seen %d, seq %d)",
				settled.token, settled.lastSeen, settled.seq, x.token, x.lastSeen, x.seq)
		}
		if !x.moved {
			settled = x
		}
		if x.seq > sh.seq {
			fail("%q has seq %d, above its shard's %d", x.token, x.seq, sh.seq)
		}
	}
	if older != sh.byAge.newest {
		fail("byAge.newest is not the last session of the list")
	}
	if inList != len(sh.sessions) {
		fail("byAge holds %d sessions, its shard's map %d", inList, len(sh.sessions))
	}
}

// held reports whether s holds a session, live or not, under token.
func held(s *store, token string) bool {
	sh := s.shard(token)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.sessions[token] != nil
}

func newInternal(t *testing.T, clock retail.Clock, opts Options) *store {
	t.Helper()
	opts.Clock = clock
	if opts.TouchEvery == 0 {
		// These tests follow each visit in the store's order of sessions:
		// every visit is written, unless a test says otherwise.
		opts.TouchEvery = -1
	}
	s, err := newDriver(opts)
	if err != nil {
		t.Fatalf("newDriver(%+v) = %v", opts, err)
	}
	return s
}

// TestIndexes_StayInStepThroughRandomCalls makes random calls on a few
// tokens and users, moving the clock by steps that cross the idle timeout
// and lifetime, and checks the indexes after each. A model of which
// sessions are live, by whom, checks every answer that does not depend on
// cleaning's choices.
func TestIndexes_StayInStepThroughRandomCalls(t *testing.T) {
	const idle, lifetime = 10 * time.Millisecond, 40 * time.Millisecond
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("Seed", seed), func(t *testing.T) {
			clock := retail.NewManualClock(time.UnixMilli(1_700_000_000_000))
			s := newInternal(t, clock, Options{IdleTimeout: idle, Lifetime: lifetime})
			randomCalls(t, s, clock, rand.New(rand.NewPCG(seed, 8)), idle, lifetime)
		})
	}
}

// modelSession is what the model knows of a session.
type modelSession struct {
	user              string
	created, lastSeen int64
}

func randomCalls(t *testing.T, s *store, clock *retail.ManualClock, r *rand.Rand, idle, lifetime time.Duration) {
	ctx := context.Background()
	tokens := []string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"}
	users := []string{"", "", "alice", "bob", "carol"}
	model := map[string]modelSession{}
	loggedOut := map[string]int64{} // user -> the ms of their last LogoutUser
	live := func(token string, now int64) (modelSession, bool) {
		m, ok := model[token]
		at, out := loggedOut[m.user]
		revoked := m.user != "" && out && m.created <= at
		return m, ok && now < m.lastSeen+idle.Milliseconds() && now < m.created+lifetime.Milliseconds() && !revoked
	}
	for step := range 2000 {
		now := clock.Now().UnixMilli()
		token, other := tokens[r.IntN(len(tokens))], tokens[r.IntN(len(tokens))]
		user := users[r.IntN(len(users))]
		m, isLive := live(token, now)
		var call string
		switch op := r.IntN(16); op {
		case 0, 1:
			call = fmt.Sprintf("StartSession(%q, %q)", token, user)
			st, _ := s.StartSession(ctx, token, user, driver.SessionOptions{})
			if (st == 0) == isLive {
				t.Fatalf("step %d: %s = %v, model says live %v", step, call, st, isLive)
			}
			if !isLive {
				model[token] = modelSession{user, now, now}
			}
		case 2, 3:
			call = fmt.Sprintf("RefreshSession(%q, \"item\")", token)
			got, ok, _ := s.RefreshSession(ctx, token, "item")
			if ok != isLive || got != m.user && isLive {
				t.Fatalf("step %d: %s = %q, %v, model says %q, %v", step, call, got, ok, m.user, isLive)
			}
			if isLive {
				m.lastSeen = now
				model[token] = m
			}
		case 4:
			if user == "" {
				user = "dave"
			}
			call = fmt.Sprintf("UpdateToken(%q, %q, \"\")", token, user)
			s.UpdateToken(ctx, token, user, "")
			if !isLive || m.user != user {
				m.created = now // a new session, or a login
			}
			model[token] = modelSession{user, m.created, now}
		case 5, 6:
			if other == token {
				other += "x"
			}
			call = fmt.Sprintf("RenewSession(%q, %q, %q)", token, other, user)
			st, _ := s.RenewSession(ctx, token, other, user, driver.SessionOptions{})
			_, otherLive := live(other, now)
			want := map[bool]string{true: "OK"}[isLive && !otherLive]
			if (st == 0) != (want == "OK") {
				t.Fatalf("step %d: %s = %v, model says token live %v, newToken live %v", step, call, st, isLive, otherLive)
			}
			if st == 0 {
				delete(model, token)
				if user != "" {
					m.user, m.created = user, now
				}
				m.lastSeen = now
				model[other] = m
			}
		case 7:
			call = fmt.Sprintf("Logout(%q)", token)
			s.Logout(ctx, token)
			delete(model, token)
		case 8:
			if user == "" {
				user = "alice"
			}
			call = fmt.Sprintf("LogoutUser(%q)", user)
			n, _ := s.LogoutUser(ctx, user)
			want := 0
			for tok, m := range model {
				if m.user == user {
					if _, ok := live(tok, now); ok {
						want++
					}
					delete(model, tok)
				}
			}
			loggedOut[user] = now
			if n != want {
				t.Fatalf("step %d: %s = %d, model says %d", step, call, n, want)
			}
		case 9:
			if user == "" {
				user = "bob"
			}
			call = fmt.Sprintf("UserSessions(%q)", user)
			infos, _ := s.UserSessions(ctx, user)
			var got, want []string
			for _, in := range infos {
				got = append(got, fmt.Sprintf("%s@%d", in.ID, in.Created.UnixMilli()))
			}
			for tok, m := range model {
				if _, ok := live(tok, now); ok && m.user == user {
					want = append(want, fmt.Sprintf("%s@%d", tok, m.created))
				}
			}
			slices.Sort(want) // the order is the suite's to check
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: %s = %v, model says %v", step, call, got, want)
			}
		case 10:
			keep, max := r.IntN(5), r.IntN(5)
			call = fmt.Sprintf("CleanSessions(%d, %d)", keep, max)
			removed, _ := s.CleanSessions(ctx, keep, max)
			gone := 0
			for tok := range model {
				if !held(s, tok) {
					delete(model, tok)
					gone++
				}
			}
			if removed != gone {
				t.Fatalf("step %d: %s = %d, but %d sessions went", step, call, removed, gone)
			}
		case 11:
			call = fmt.Sprintf("SetValue(%q, \"k\", \"v\")", token)
			st, _ := s.SetValue(ctx, token, "k", []byte("v"))
			if (st == 0) != isLive {
				t.Fatalf("step %d: %s = %v, model says live %v", step, call, st, isLive)
			}
		case 12:
			call = fmt.Sprintf("IncrementCart(%q, \"item\", 1)", token)
			_, st, _ := s.IncrementCart(ctx, token, "item", 1)
			if (st == 0) != isLive {
				t.Fatalf("step %d: %s = %v, model says live %v", step, call, st, isLive)
			}
		case 13:
			call = fmt.Sprintf("CheckToken(%q)", token)
			got, ok, _ := s.CheckToken(ctx, token)
			if ok != isLive || isLive && got != m.user {
				t.Fatalf("step %d: %s = %q, %v, model says %q, %v", step, call, got, ok, m.user, isLive)
			}
		default:
			d := time.Duration(r.IntN(int(idle/time.Millisecond)+1)) * time.Millisecond
			call = fmt.Sprintf("Advance(%v)", d)
			clock.Advance(d)
		}
		// Sessions the Store dropped on access were expired in the model.
		for tok := range model {
			if !held(s, tok) {
				if _, ok := live(tok, now); ok {
					t.Fatalf("step %d: after %s, live session %q is gone", step, call, tok)
				}
				delete(model, tok)
			}
		}
		if n, _ := s.SessionCount(ctx); n != len(model) {
			t.Fatalf("step %d: after %s, the Store holds %d sessions, the model %d", step, call, n, len(model))
		}
		checkIndexes(t, s, call)
	}
}
