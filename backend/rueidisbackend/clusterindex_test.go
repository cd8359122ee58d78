package rueidisbackend_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// faultyClient is a rueidis client whose commands that name one of the
// keys in down fail without being sent, as if the node serving those keys
// had failed, or the caller's context had ended, right then. Every other
// command goes through.
type faultyClient struct {
	rueidis.Client
	mu   sync.Mutex
	down map[string]bool
}

var errNodeDown = errors.New("faulty client: node down")

func (f *faultyClient) setDown(keys ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = map[string]bool{}
	for _, k := range keys {
		f.down[k] = true
	}
}

func (f *faultyClient) fails(args []string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range args {
		if f.down[a] {
			return true
		}
	}
	return false
}

func (f *faultyClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if f.fails(cmd.Commands()) {
		return rueidis.NewErrorResult(errNodeDown)
	}
	return f.Client.Do(ctx, cmd)
}

func (f *faultyClient) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	if f.fails(cmd.Commands()) {
		return rueidis.NewErrorResult(errNodeDown)
	}
	return f.Client.DoCache(ctx, cmd, ttl)
}

func (f *faultyClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	out := make([]rueidis.RedisResult, len(multi))
	var pass []rueidis.Completed
	var at []int
	for i, cmd := range multi {
		if f.fails(cmd.Commands()) {
			out[i] = rueidis.NewErrorResult(errNodeDown)
			continue
		}
		pass = append(pass, cmd)
		at = append(at, i)
	}
	if len(pass) > 0 {
		for j, r := range f.Client.DoMulti(ctx, pass...) {
			out[at[j]] = r
		}
	}
	return out
}

// clusterTarget returns the cluster target.
func clusterTarget(t *testing.T) target {
	tg := targets[len(targets)-1]
	if tg.name != "cluster" {
		t.Fatalf("the last target is %q, want the cluster", tg.name)
	}
	return tg
}

// newFaultyClusterStore returns a Store on the cluster through a
// faultyClient, the raw client, and the prefix.
func newFaultyClusterStore(t *testing.T, clock retail.Clock) (*rueidisbackend.Store, *faultyClient, rueidis.Client, string) {
	c, prefix := clusterTarget(t).client(t, rueidis.ClientOption{})
	f := &faultyClient{Client: c}
	s := mustNew(t, f, rueidisbackend.Options{Prefix: prefix, Clock: clock})
	return s, f, c, prefix
}

func zscore(t *testing.T, c rueidis.Client, key, member string) (float64, bool) {
	t.Helper()
	v, err := c.Do(bg, c.B().Zscore().Key(key).Member(member).Build()).AsFloat64()
	if rueidis.IsRedisNil(err) {
		return 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return v, true
}

func exists(t *testing.T, c rueidis.Client, key string) bool {
	t.Helper()
	n, err := c.Do(bg, c.B().Exists().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestCluster_LoginWhoseIndexWritesFailIsKeptForLater: in a cluster, a
// login whose index writes fail (the node of the session index and the
// user's index down, or the caller's context ended right after the
// session's script) leaves a live session. A guest's failed index write is
// kept and sent later (deferred.go); a login's must be too, else the
// session is in no index: cleaning never reads it, SessionCount does not
// count it, and only a RepairSessions finds it.
func TestCluster_LoginWhoseIndexWritesFailIsKeptForLater(t *testing.T) {
	clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
	s, f, c, prefix := newFaultyClusterStore(t, clock)
	for _, tc := range []struct{ token, user string }{{"guest", ""}, {"login", "alice"}} {
		f.setDown(indexKey(prefix), userKey(prefix, "alice"))
		_, err := s.StartSession(bg, tc.token, tc.user)
		f.setDown()
		t.Logf("StartSession(%q, %q) with the index nodes down = %v", tc.token, tc.user, err)
		if !exists(t, c, sessionKey(prefix, retail.SessionID(tc.token))) {
			t.Fatalf("%s: no session key: the script did not run", tc.token)
		}
	}
	// The same for UpdateToken's new session and RenewSession's.
	f.setDown(indexKey(prefix), userKey(prefix, "alice"))
	t.Logf("UpdateToken with the index nodes down = %v", s.UpdateToken(bg, "update", "alice", "item"))
	_, err := s.RenewSession(bg, "guest", "renewed", "alice")
	t.Logf("RenewSession with the index nodes down = %v", err)
	f.setDown()
	rueidisbackend.RetryDeferredNow(s)
	// A later call that writes the index sends what was kept.
	if _, err := s.StartSession(bg, "flush", ""); err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{"guest", "login", "update", "renewed"} {
		if _, ok := zscore(t, c, indexKey(prefix), retail.SessionID(token)); !ok {
			t.Errorf("%s: live session missing from the session index after its failed index write was due to be sent again", token)
		}
	}
	// Cleaning to 0 must end every session.
	clock.Advance(2 * retail.DefaultIdleTimeout)
	if _, err := s.CleanSessions(bg, 0, 1<<30); err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{"guest", "login", "flush", "update", "renewed"} {
		if exists(t, c, sessionKey(prefix, retail.SessionID(token))) {
			t.Errorf("%s: session key left by cleaning to 0, long after its idle timeout", token)
		}
	}
}

// TestCluster_EveryCallEndsASessionLogoutUserMissed: a cluster session its
// user's index lost is ended by LogoutUser for every call that reads or
// writes it.
func TestCluster_EveryCallEndsASessionLogoutUserMissed(t *testing.T) {
	clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
	s, _, c, prefix := newFaultyClusterStore(t, clock)
	calls := map[string]func(token string) (bool, error){
		"Value": func(tok string) (bool, error) {
			_, ok, err := s.Value(bg, tok, "k")
			return ok, err
		},
		"PopValue": func(tok string) (bool, error) {
			_, ok, err := s.PopValue(bg, tok, "k")
			return ok, err
		},
		"SetValue": func(tok string) (bool, error) {
			err := s.SetValue(bg, tok, "k2", []byte("v"))
			if errors.Is(err, retail.ErrNoSession) {
				return false, nil
			}
			return err == nil, err
		},
		"RecentItems": func(tok string) (bool, error) {
			r, err := s.RecentItems(bg, tok)
			return len(r) > 0, err
		},
		"IncrementCart": func(tok string) (bool, error) {
			_, err := s.IncrementCart(bg, tok, "item-a", 1)
			if errors.Is(err, retail.ErrNoSession) {
				return false, nil
			}
			return err == nil, err
		},
		"RenewSession": func(tok string) (bool, error) {
			return s.RenewSession(bg, tok, tok+"-new", "")
		},
		"RenewSessionLogin": func(tok string) (bool, error) {
			return s.RenewSession(bg, tok, tok+"-new", "alice")
		},
		"Cart": func(tok string) (bool, error) {
			cart, err := s.Cart(bg, tok)
			return len(cart) > 0, err
		},
	}
	names := make([]string, 0, len(calls))
	for name := range calls {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		token := "lost-" + name
		if _, err := s.StartSession(bg, token, "alice"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.RefreshSession(bg, token, "item-x"); err != nil {
			t.Fatal(err)
		}
		if err := s.SetValue(bg, token, "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
		if err := s.AddToCart(bg, token, "item-a", 1); err != nil {
			t.Fatal(err)
		}
		if err := c.Do(bg, c.B().Zrem().Key(userKey(prefix, "alice")).Member(retail.SessionID(token)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Millisecond)
	if n, err := s.LogoutUser(bg, "alice"); n != 0 || err != nil {
		t.Fatalf("LogoutUser = %d, %v; want 0 (it finds none)", n, err)
	}
	for _, name := range names {
		token := "lost-" + name
		if ok, err := calls[name](token); ok || err != nil {
			t.Errorf("%s(%q) after LogoutUser = %v, %v; want no session", name, token, ok, err)
		}
		if _, ok, err := s.CheckToken(bg, token+"-new"); ok || err != nil {
			t.Errorf("CheckToken(%q) = %v, %v; want no session", token+"-new", ok, err)
		}
	}
	if infos, err := s.UserSessions(bg, "alice"); len(infos) != 0 || err != nil {
		t.Errorf("UserSessions = %+v, %v; want none", infos, err)
	}
}

// TestCluster_DeferredReplayAfterLogoutLeavesNoLastingStray: a guest's index
// write kept while the index node was down is sent after the session was
// logged out: it creates an entry without a session, which cleaning and
// RepairSessions must remove.
func TestCluster_DeferredReplayAfterLogoutLeavesNoLastingStray(t *testing.T) {
	clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
	s, f, c, prefix := newFaultyClusterStore(t, clock)
	f.setDown(indexKey(prefix))
	if _, err := s.StartSession(bg, "gone", ""); err != nil {
		t.Fatal(err)
	}
	f.setDown()
	if err := s.Logout(bg, "gone"); err != nil {
		t.Fatal(err)
	}
	rueidisbackend.RetryDeferredNow(s)
	if _, err := s.StartSession(bg, "live", ""); err != nil {
		t.Fatal(err)
	}
	if _, stray := zscore(t, c, indexKey(prefix), retail.SessionID("gone")); !stray {
		t.Fatal("the replay left no stray entry: nothing for cleaning to remove")
	}
	// A pass that keeps 1000 reads only idle-expired entries: move past
	// the idle timeout, with one session started since.
	clock.Advance(retail.DefaultIdleTimeout + 2*time.Minute)
	if _, err := s.StartSession(bg, "live2", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CleanSessions(bg, 1000, 1<<30); err != nil {
		t.Fatal(err)
	}
	if _, ok := zscore(t, c, indexKey(prefix), retail.SessionID("gone")); ok {
		t.Errorf("stray entry left by a cleaning pass")
	}
	if n, err := s.SessionCount(bg); n != 1 || err != nil {
		t.Errorf("SessionCount = %d, %v; want 1", n, err)
	}
}

// TestCluster_UpdateTokenOverALoggedOutSessionChecksEvenIfItsIndexWriteFails:
// an UpdateToken of bob on the token of a session alice logged out of
// everywhere, not yet removed, starts bob afresh, even when the write to
// bob's index after the script fails: the script has given the session to
// bob already, so a retry would not see the change of user again.
func TestCluster_UpdateTokenOverALoggedOutSessionChecksEvenIfItsIndexWriteFails(t *testing.T) {
	clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
	s, f, _, prefix := newFaultyClusterStore(t, clock)
	if _, err := s.LogoutUser(bg, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateToken(bg, "tok-1", "alice", "item-secret"); err != nil { // over: logged in in the LogoutUser's millisecond
		t.Fatal(err)
	}
	clock.Advance(time.Millisecond)
	f.setDown(userKey(prefix, "bob"))
	if err := s.UpdateToken(bg, "tok-1", "bob", ""); !errors.Is(err, errNodeDown) {
		t.Errorf("UpdateToken(tok-1, bob) with bob's index down = %v, want an error matching %v", err, errNodeDown)
	}
	f.setDown()
	if err := s.UpdateToken(bg, "tok-1", "bob", ""); err != nil {
		t.Fatal(err)
	}
	if recent, err := s.RecentItems(bg, "tok-1"); err != nil || len(recent) != 0 {
		t.Errorf("RecentItems(tok-1) of bob's session = %q, %v; want none: alice's session was over", recent, err)
	}
}

// heldClient is a rueidis client whose round trips (DoMulti) that name the
// key hold names wait, each until the test lets it go (see next), as if
// the caller had been descheduled right before sending it. Every other
// command goes through.
type heldClient struct {
	rueidis.Client
	mu   sync.Mutex
	hold string
	held chan chan struct{} // a round trip waiting, told on its channel to go
	fail string             // see failOnce
}

// failOnce makes the commands that name key fail, in the next round trip
// that names it, as if their node were down: they are sent with a context
// already canceled.
func (h *heldClient) failOnce(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fail = key
}

// holdKey makes the round trips that name key wait ("" for none).
func (h *heldClient) holdKey(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hold = key
	if h.held == nil {
		h.held = make(chan chan struct{}, 8)
	}
}

// next waits for a round trip to be held, and returns what lets it go.
func (h *heldClient) next(t *testing.T) (release func()) {
	t.Helper()
	select {
	case go1 := <-h.held:
		return func() { close(go1) }
	case <-time.After(10 * time.Second):
		t.Fatal("no round trip was held")
		return nil
	}
}

func (h *heldClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	names := func(cmd rueidis.Completed, key string) bool {
		return key != "" && slices.Contains(cmd.Commands(), key)
	}
	h.mu.Lock()
	key, held, fail := h.hold, h.held, ""
	if slices.ContainsFunc(multi, func(cmd rueidis.Completed) bool { return names(cmd, h.fail) }) {
		fail, h.fail = h.fail, ""
	}
	h.mu.Unlock()
	for _, cmd := range multi {
		if names(cmd, key) {
			go1 := make(chan struct{})
			held <- go1
			<-go1
			break
		}
	}
	if fail == "" {
		return h.Client.DoMulti(ctx, multi...)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	res := make([]rueidis.RedisResult, len(multi))
	for i, cmd := range multi {
		if names(cmd, fail) {
			res[i] = h.Client.Do(canceled, cmd)
		} else {
			res[i] = h.Client.Do(ctx, cmd)
		}
	}
	return res
}

// TestCluster_LateUserIndexWriteOfAnEndedSessionLeavesTheNextListed: in a
// cluster a login's user index entry is written after its session script,
// in a round trip of its own. If that write is late (the caller was
// descheduled), a Logout may have ended the session and another login
// under the same token indexed its own session in between: the late write
// replaces the new session's entry with the ended session's created stamp,
// which the Logout's own index write, landing last, then removes. The new
// session, live, must still be listed under its user; also when the late
// round trip's write of the session index fails (its node is down), which
// keeps the session for a later index write.
func TestCluster_LateUserIndexWriteOfAnEndedSessionLeavesTheNextListed(t *testing.T) {
	for _, indexFails := range []bool{false, true} {
		t.Run(fmt.Sprintf("session index write fails=%v", indexFails), func(t *testing.T) {
			clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
			c, prefix := clusterTarget(t).client(t, rueidis.ClientOption{})
			h := &heldClient{Client: c}
			s := mustNew(t, h, rueidisbackend.Options{Prefix: prefix, Clock: clock})
			h.holdKey(userKey(prefix, "alice"))
			if indexFails {
				h.failOnce(indexKey(prefix))
			}
			first := make(chan error, 1)
			go func() {
				_, err := s.StartSession(bg, "tok", "alice")
				first <- err
			}()
			releaseFirst := h.next(t) // the first login's index writes
			logout := make(chan error, 1)
			go func() { logout <- s.Logout(bg, "tok") }()
			releaseLogout := h.next(t) // the Logout's, after its script ended the session
			h.holdKey("")
			if ok, err := s.StartSession(bg, "tok", "alice"); !ok || err != nil {
				t.Fatalf("StartSession(tok, alice) after the Logout = %v, %v; want true, nil", ok, err)
			}
			releaseFirst()
			if err := <-first; err != nil {
				t.Fatalf("the first StartSession(tok, alice) = %v, want nil", err)
			}
			releaseLogout()
			if err := <-logout; err != nil {
				t.Fatalf("Logout(tok) = %v", err)
			}
			if user, ok, err := s.CheckToken(bg, "tok"); user != "alice" || !ok || err != nil {
				t.Fatalf("CheckToken(tok) = %q, %v, %v; want alice's session", user, ok, err)
			}
			infos, err := s.UserSessions(bg, "alice")
			if err != nil || len(infos) != 1 || infos[0].ID != retail.SessionID("tok") {
				t.Errorf("UserSessions(alice) = %+v, %v; want the live session of tok", infos, err)
			}
		})
	}
}

// TestCluster_LateUserIndexWriteOfALoginLeavesTheNextSessionListed is the
// same race for a login on a live session (UpdateToken with another user),
// whose user index write is as late.
func TestCluster_LateUserIndexWriteOfALoginLeavesTheNextSessionListed(t *testing.T) {
	clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
	c, prefix := clusterTarget(t).client(t, rueidis.ClientOption{})
	h := &heldClient{Client: c}
	s := mustNew(t, h, rueidisbackend.Options{Prefix: prefix, Clock: clock})
	if _, err := s.StartSession(bg, "tok", "alice"); err != nil {
		t.Fatalf("StartSession(tok, alice) = %v", err)
	}
	h.holdKey(userKey(prefix, "bob"))
	login := make(chan error, 1)
	go func() { login <- s.UpdateToken(bg, "tok", "bob", "") }()
	releaseLogin := h.next(t) // the login's index writes
	logout := make(chan error, 1)
	go func() { logout <- s.Logout(bg, "tok") }()
	releaseLogout := h.next(t) // the Logout's, after its script ended the session
	h.holdKey("")
	if ok, err := s.StartSession(bg, "tok", "bob"); !ok || err != nil {
		t.Fatalf("StartSession(tok, bob) after the Logout = %v, %v; want true, nil", ok, err)
	}
	releaseLogin()
	if err := <-login; err != nil {
		t.Fatalf("UpdateToken(tok, bob) = %v", err)
	}
	releaseLogout()
	if err := <-logout; err != nil {
		t.Fatalf("Logout(tok) = %v", err)
	}
	if user, ok, err := s.CheckToken(bg, "tok"); user != "bob" || !ok || err != nil {
		t.Fatalf("CheckToken(tok) = %q, %v, %v; want bob's session", user, ok, err)
	}
	infos, err := s.UserSessions(bg, "bob")
	if err != nil || len(infos) != 1 || infos[0].ID != retail.SessionID("tok") {
		t.Errorf("UserSessions(bob) = %+v, %v; want the live session of tok", infos, err)
	}
}
