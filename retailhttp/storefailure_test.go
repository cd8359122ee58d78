package retailhttp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
	"github.com/retailkit/retail/retailhttp"
)

// guest starts a guest session with one item in its cart, and returns its
// cookie and token.
func (r *rememberRig) guest() (*http.Cookie, string) {
	r.t.Helper()
	rec := httptest.NewRecorder()
	s, err := r.m.Ensure(requestContext(r.t, r.m), rec)
	if err != nil {
		r.t.Fatalf("Ensure() = %v", err)
	}
	if err := r.s.AddToCart(context.Background(), s.Token, "itemX", 1); err != nil {
		r.t.Fatalf("AddToCart() = %v", err)
	}
	return sessionCookie(r.t, rec.Result()), s.Token
}

// token returns the token of the session a request with c has, failing the
// test if it has none.
func (r *rememberRig) token(c *http.Cookie) string {
	r.t.Helper()
	v := get(r.m, "/", c)
	if !v.ok {
		r.t.Fatalf("request with cookie %s has no session", c.Value)
	}
	return v.session.Token
}

// wantSessionCount checks how many sessions the Store holds.
func (r *rememberRig) wantSessionCount(what string, want int) {
	r.t.Helper()
	if n, err := r.s.SessionCount(context.Background()); n != want || err != nil {
		r.t.Errorf("%s: SessionCount() = %d, %v; want %d", what, n, err, want)
	}
}

// wantStoreError checks that a call failed with the Store's error and set
// no cookie.
func wantStoreError(t *testing.T, call string, err error, rec *httptest.ResponseRecorder) {
	t.Helper()
	if !errors.Is(err, errStoreDown) {
		t.Errorf("%s with the Store failing = %v, want the Store's error (%v)", call, err, errStoreDown)
	}
	if got := rec.Result().Header["Set-Cookie"]; len(got) != 0 {
		t.Errorf("failed %s Set-Cookie = %q, want none", call, got)
	}
}

func TestLoginWith_StoreFailureSetsNoCookie(t *testing.T) {
	// Each case logs alice in from a request that has the session setup
	// makes (a nil cookie: none) while the Store's methods named in fail
	// break, and then checks what is left, with the Store working again.
	// A login starts or moves a session with whichever of a pair of
	// methods it likes, so both of the pair fail.
	const start, move = "StartSession StartSessionFor", "RenewSession RenewSessionFor"
	for _, tc := range []struct {
		name  string
		setup func(r *rememberRig) *http.Cookie
		opts  retailhttp.LoginOptions
		fail  string
		check func(r *rememberRig, old *http.Cookie)
	}{
		{
			name: "StartWithoutSession", fail: start,
			check: func(r *rememberRig, _ *http.Cookie) { r.wantSessionCount("after the failed login", 0) },
		},
		{
			name: "StartForWithoutSession", opts: retailhttp.LoginOptions{Lifetime: day}, fail: start,
			check: func(r *rememberRig, _ *http.Cookie) { r.wantSessionCount("after the failed login", 0) },
		},
		{
			name: "RenewGuest", setup: guestCookie, fail: move,
			check: wantGuestKept,
		},
		{
			name: "RenewForGuest", setup: guestCookie, opts: retailhttp.LoginOptions{Lifetime: day, BrowserSession: true}, fail: move,
			check: wantGuestKept,
		},
		{
			name: "RenewForGuestRemembered", setup: guestCookie, opts: retailhttp.LoginOptions{Lifetime: day}, fail: move,
			check: wantGuestKept,
		},
		{
			// alice's remembered login keeps its cookie: a Renew gives the
			// persistent cookie of 30 days, not the failed login's.
			name: "RenewForOwnSession", setup: rememberedAlice,
			opts: retailhttp.LoginOptions{Lifetime: day, BrowserSession: true}, fail: move,
			check: wantRememberedAliceKept,
		},
		{
			// A login without options, which drops the records, keeps them
			// too if it fails.
			name: "RenewOwnSession", setup: rememberedAlice, fail: move,
			check: wantRememberedAliceKept,
		},
		{
			// Another user's session is logged out first; if that fails,
			// it is unchanged.
			name: "LogoutOfAnotherUser", fail: "Logout",
			setup: func(r *rememberRig) *http.Cookie {
				r.opts = retailhttp.LoginOptions{}
				return r.do("/login?user=bob", nil)
			},
			check: func(r *rememberRig, old *http.Cookie) {
				wantSession(r.t, r.m, "bob's old cookie", old, retailhttp.Session{Token: r.token(old), User: "bob"})
			},
		},
	} {
		for _, mode := range cookieModes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				r := newRememberRigWith(t, mode.opts)
				old := r.setUp(tc.setup)
				ctx := requestContext(t, r.m, cookies(old)...)
				r.failing.fail = map[string]bool{}
				for _, name := range strings.Fields(tc.fail) {
					r.failing.fail[name] = true
				}
				rec := httptest.NewRecorder()
				_, err := r.m.LoginWith(ctx, rec, "alice", tc.opts)
				r.failing.fail = nil
				wantStoreError(t, "LoginWith(alice) failing "+tc.fail, err, rec)
				tc.check(r, old)
			})
		}
	}
}

// setUp runs setup, if not nil, on r and returns the cookie it leaves.
func (r *rememberRig) setUp(setup func(*rememberRig) *http.Cookie) *http.Cookie {
	if setup == nil {
		return nil
	}
	return setup(r)
}

// A login records its choice of cookie in the call of the Store that
// starts or moves the session, and writes nothing else that could fail
// once the old token names no session: with the Store's SetValue and
// DeleteValue broken, every login sets its own choice, which a Renew
// keeps, and no earlier login's.
func TestLoginWith_RecordsItsChoiceWithTheSession(t *testing.T) {
	const remember, browser, login = int(30 * day / time.Second), 0, int(retailhttp.DefaultSessionMaxAge / time.Second)
	for _, tc := range []struct {
		name   string
		setup  func(r *rememberRig) *http.Cookie
		opts   retailhttp.LoginOptions
		maxAge int
	}{
		{"Start/BrowserSession", nil, retailhttp.LoginOptions{Lifetime: day, BrowserSession: true}, browser},
		{"Start/RememberMe", nil, retailhttp.LoginOptions{Lifetime: 30 * day}, remember},
		{"Guest/BrowserSession", guestCookie, retailhttp.LoginOptions{BrowserSession: true}, browser},
		{"Guest/RememberMe", guestCookie, retailhttp.LoginOptions{Lifetime: 30 * day}, remember},
		{"Remembered/BrowserSession", rememberedAlice, retailhttp.LoginOptions{Lifetime: day, BrowserSession: true}, browser},
		{"Remembered/Login", rememberedAlice, retailhttp.LoginOptions{}, login},
		{"Browser/RememberMe", browserAlice, retailhttp.LoginOptions{Lifetime: 30 * day}, remember},
	} {
		for _, mode := range cookieModes {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				r := newRememberRigWith(t, mode.opts)
				old := r.setUp(tc.setup)
				r.opts = tc.opts
				r.failing.fail = map[string]bool{"SetValue": true, "DeleteValue": true}
				c := r.do("/login?user=alice", old)
				r.failing.fail = nil
				wantCookie(t, "the login's cookie", c, tc.maxAge)
				// Only a browser-session login in signed-cookie mode
				// records its signed expiry; any other drops an earlier
				// login's.
				signed := tc.opts.BrowserSession && mode.name == "SignedCookie"
				if _, ok, err := r.s.Value(context.Background(), r.token(c), "retailhttp:signed-until"); ok != signed || err != nil {
					t.Errorf(`the session's Value("retailhttp:signed-until") = %v, %v; want %v, nil`, ok, err, signed)
				}
				wantCookie(t, "Renew after the login", r.do("/renew", c), tc.maxAge)
				r.wantSessionCount("after the login", 1)
			})
		}
	}
}

// A session full of the application's values has no room for a login's
// record of its choice of cookie: such a login is refused as invalid and
// changes nothing, and a login without a choice to record is not.
func TestLoginWith_FullSessionRefusesARecordingLogin(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			r := newRememberRigWith(t, mode.opts)
			old, token := r.guest()
			for i := range retail.MaxSessionValues {
				if err := r.s.SetValue(context.Background(), token, fmt.Sprint("app-", i), []byte("x")); err != nil {
					t.Fatal(err)
				}
			}
			for _, opts := range []retailhttp.LoginOptions{{BrowserSession: true}, {Lifetime: day}} {
				rec := httptest.NewRecorder()
				_, err := r.m.LoginWith(requestContext(t, r.m, old), rec, "alice", opts)
				if !errors.Is(err, retail.ErrInvalid) {
					t.Errorf("LoginWith(%+v) from a full session = %v, want ErrInvalid", opts, err)
				}
				if got := rec.Result().Header["Set-Cookie"]; len(got) != 0 {
					t.Errorf("refused LoginWith(%+v) Set-Cookie = %q, want none", opts, got)
				}
				wantGuestKept(r, old)
			}
			r.opts = retailhttp.LoginOptions{}
			c := r.do("/login?user=alice", old)
			wantSession(t, r.m, "alice's cookie", c, retailhttp.Session{Token: r.token(c), User: "alice"})
			if v, ok, err := r.s.Value(context.Background(), r.token(c), "app-0"); !ok || err != nil || string(v) != "x" {
				t.Errorf(`Value("app-0") of alice's session = %q, %v, %v; want the guest's "x"`, v, ok, err)
			}
		})
	}
}

// guestCookie starts a guest session with itemX in its cart.
func guestCookie(r *rememberRig) *http.Cookie {
	c, _ := r.guest()
	return c
}

// rememberedAlice logs alice in for 30 days, with a persistent cookie.
func rememberedAlice(r *rememberRig) *http.Cookie {
	r.opts = retailhttp.LoginOptions{Lifetime: 30 * day}
	return r.do("/login?user=alice", nil)
}

// browserAlice logs alice in for a day, with a browser-session cookie.
func browserAlice(r *rememberRig) *http.Cookie {
	r.opts = retailhttp.LoginOptions{Lifetime: day, BrowserSession: true}
	return r.do("/login?user=alice", nil)
}

// wantGuestKept checks that old still names a guest session with itemX in
// its cart and no record of a login's choice of cookie, and that it is
// the only session.
func wantGuestKept(r *rememberRig, old *http.Cookie) {
	r.t.Helper()
	token := r.token(old)
	wantSession(r.t, r.m, "the guest's old cookie", old, retailhttp.Session{Token: token})
	if cart, err := r.s.Cart(context.Background(), token); err != nil || !cmp.Equal(cart, map[string]int{"itemX": 1}) {
		r.t.Errorf("guest's Cart after the failed login = %v, %v; want map[itemX:1]", cart, err)
	}
	for _, key := range []string{"retailhttp:cookie", "retailhttp:signed-until"} {
		if v, ok, err := r.s.Value(context.Background(), token, key); ok || err != nil {
			r.t.Errorf("guest's Value(%q) after the failed login = %q, %v, %v; want none", key, v, ok, err)
		}
	}
	r.wantSessionCount("after the failed login", 1)
}

// wantRememberedAliceKept checks that old still names alice's session of
// rememberedAlice, with its choice of cookie: a Renew gives the
// persistent cookie of 30 days.
func wantRememberedAliceKept(r *rememberRig, old *http.Cookie) {
	r.t.Helper()
	wantSession(r.t, r.m, "alice's old cookie", old, retailhttp.Session{Token: r.token(old), User: "alice"})
	wantCookie(r.t, "Renew after the failed login", r.do("/renew", old), int(30*day/time.Second))
	r.wantSessionCount("after the failed login", 1)
}

func TestRenew_StoreFailureSetsNoCookieAndKeepsTheSession(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			r := newRememberRigWith(t, mode.opts)
			r.opts = retailhttp.LoginOptions{Lifetime: day, BrowserSession: true}
			c := r.do("/login?user=alice", nil)
			want := retailhttp.Session{Token: r.token(c), User: "alice"}

			r.failing.fail = map[string]bool{"RenewSession": true}
			rec := httptest.NewRecorder()
			_, err := r.m.Renew(requestContext(t, r.m, c), rec)
			r.failing.fail = nil
			wantStoreError(t, "Renew", err, rec)
			wantSession(t, r.m, "the cookie after the failed Renew", c, want)
			// The login's choice of cookie is still there.
			wantCookie(t, "Renew after the failed one", r.do("/renew", c), 0)
		})
	}
}

// Renew reads the login's choice of cookie before it moves the session:
// if that read fails, Renew fails as a failed move does, and the session
// keeps its token and its choice.
func TestRenew_FailingToReadTheCookieKindKeepsTheSession(t *testing.T) {
	for _, mode := range cookieModes {
		reads := []string{"retailhttp:cookie"}
		if mode.name == "SignedCookie" {
			// Only a signed browser-session cookie reads its signed expiry.
			reads = append(reads, "retailhttp:signed-until")
		}
		for _, read := range reads {
			t.Run(mode.name+"/"+read, func(t *testing.T) {
				r := newRememberRigWith(t, mode.opts)
				r.opts = retailhttp.LoginOptions{Lifetime: day, BrowserSession: true}
				old := r.do("/login?user=alice", nil)
				want := retailhttp.Session{Token: r.token(old), User: "alice"}

				r.failing.fail = map[string]bool{"Value": true}
				r.failing.failKey = read
				rec := httptest.NewRecorder()
				_, err := r.m.Renew(requestContext(t, r.m, old), rec)
				r.failing.fail, r.failing.failKey = nil, ""
				wantStoreError(t, "Renew", err, rec)
				wantSession(t, r.m, "the cookie after the failed Renew", old, want)
				wantCookie(t, "Renew after the failed one", r.do("/renew", old), 0)
			})
		}
	}
}

// A Logout or LogoutEverywhere that the Store failed (its context ended)
// leaves the session the request's: called again with time left, it ends
// the session, rather than answer nil for a session that is still live.
func TestSessionManager_LogoutAgainAfterAFailureEndsTheSession(t *testing.T) {
	for name, logout := range map[string]func(m *retailhttp.SessionManager, ctx context.Context, w http.ResponseWriter) error{
		"Logout": func(m *retailhttp.SessionManager, ctx context.Context, w http.ResponseWriter) error {
			return m.Logout(ctx, w)
		},
		"LogoutEverywhere": func(m *retailhttp.SessionManager, ctx context.Context, w http.ResponseWriter) error {
			_, err := m.LogoutEverywhere(ctx, w)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, _ := newStore(t)
			m := newManager(t, s, retailhttp.SessionOptions{})
			sess, c := login(t, m, "alice")
			ctx := requestContext(t, m, c)
			dead, cancel := context.WithCancel(ctx)
			cancel()
			if err := logout(m, dead, httptest.NewRecorder()); !errors.Is(err, context.Canceled) {
				t.Fatalf("%s with a cancelled context = %v, want context.Canceled", name, err)
			}
			if err := logout(m, ctx, httptest.NewRecorder()); err != nil {
				t.Fatalf("%s again = %v, want nil", name, err)
			}
			if _, ok, err := s.CheckToken(context.Background(), sess.Token); ok || err != nil {
				t.Errorf("CheckToken after %s again = %v, %v; want the session over", name, ok, err)
			}
		})
	}
}

// stallingLogoutOf is a Store whose Logout of one token stalls until its
// context ends, as a Redis node that stops answering would.
type stallingLogoutOf struct {
	retail.Store
	token string
}

func (s *stallingLogoutOf) Logout(ctx context.Context, token string) error {
	if token == s.token {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.Store.Logout(ctx, token)
}

// A LoginWith with a Lifetime over another user's session starts the new
// session first; if its deadline passes while it logs the other one out,
// it ends the new session, though its own context is over, so that no
// session of the user is left that no cookie names.
func TestSessionManager_LoginWithPastItsDeadlineLeavesNoSession(t *testing.T) {
	s, _ := newStore(t)
	f := &stallingLogoutOf{Store: s}
	m := newManager(t, f, retailhttp.SessionOptions{})
	bob, c := login(t, m, "bob")
	f.token = bob.Token
	ctx, cancel := context.WithTimeout(requestContext(t, m, c), 50*time.Millisecond)
	defer cancel()
	if _, err := m.LoginWith(ctx, httptest.NewRecorder(), "alice", retailhttp.LoginOptions{Lifetime: day, BrowserSession: true}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LoginWith = %v, want context.DeadlineExceeded", err)
	}
	eventually(t, "alice's half-made session to end", func() bool {
		infos, err := s.UserSessions(context.Background(), "alice")
		return err == nil && len(infos) == 0
	})
}

// A login that the Store refuses as invalid (a Lifetime beyond its own)
// ends nothing: not even the other user's session that the request has.
func TestSessionManager_LoginWithRefusedEndsNoSession(t *testing.T) {
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	bob, c := login(t, m, "bob")
	_, err := m.LoginWith(requestContext(t, m, c), httptest.NewRecorder(), "alice", retailhttp.LoginOptions{Lifetime: 1000 * time.Hour})
	if !errors.Is(err, retail.ErrInvalid) {
		t.Fatalf("LoginWith(alice, 1000h) = %v, want ErrInvalid", err)
	}
	if user, ok, err := s.CheckToken(context.Background(), bob.Token); user != "bob" || !ok || err != nil {
		t.Errorf("CheckToken(bob's token) after the refused login = %q, %v, %v; want bob's session", user, ok, err)
	}
	if infos, err := s.UserSessions(context.Background(), "alice"); len(infos) != 0 || err != nil {
		t.Errorf("UserSessions(alice) = %v, %v; want none", infos, err)
	}
}

// failingLogoutOf is a Store whose Logout of one token fails.
type failingLogoutOf struct {
	retail.Store
	token string
}

func (s *failingLogoutOf) Logout(ctx context.Context, token string) error {
	if token == s.token {
		return errStoreDown
	}
	return s.Store.Logout(ctx, token)
}

// A Login over another user's session whose logout fails changes nothing
// of user's sessions: it starts none, and ends none of theirs (with
// MaxSessionsPerUser, starting one first would end their oldest device).
func TestSessionManager_LoginOverAnotherUserWhoseLogoutFailsChangesNothing(t *testing.T) {
	ctx := context.Background()
	s, err := memory.New(memory.Options{Clock: retail.NewManualClock(epoch), MaxSessionsPerUser: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f := &failingLogoutOf{Store: s}
	m := newManager(t, f, retailhttp.SessionOptions{})
	phone, _ := login(t, m, "alice")
	bob, c := login(t, m, "bob")
	f.token = bob.Token
	if _, err := m.Login(requestContext(t, m, c), httptest.NewRecorder(), "alice"); !errors.Is(err, errStoreDown) {
		t.Fatalf("Login(alice) over bob's session whose logout fails = %v, want errStoreDown", err)
	}
	infos, err := s.UserSessions(ctx, "alice")
	if err != nil || len(infos) != 1 || infos[0].ID != retail.SessionID(phone.Token) {
		t.Errorf("UserSessions(alice) = %+v, %v; want only her phone's session", infos, err)
	}
}

// After a Logout the Store failed, the request has no session, as its
// cleared cookie says: an Ensure starts a guest session and sets its
// cookie, rather than hand back the session the visitor asked to end.
func TestSessionManager_EnsureAfterAFailedLogoutStartsAGuest(t *testing.T) {
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	sess, c := login(t, m, "alice")
	ctx := requestContext(t, m, c)
	dead, cancel := context.WithCancel(ctx)
	cancel()
	rec := httptest.NewRecorder()
	if err := m.Logout(dead, rec); err == nil {
		t.Fatal("Logout with a cancelled context = nil, want an error")
	}
	got, err := m.Ensure(ctx, rec)
	if err != nil || got.Token == sess.Token || !got.Guest() {
		t.Fatalf("Ensure after the failed Logout = %+v, %v; want a new guest session", got, err)
	}
	cookies := rec.Result().Cookies()
	if last := cookies[len(cookies)-1]; last.Value != got.Token || last.MaxAge <= 0 {
		t.Errorf("the response's last session cookie = %v, want the guest's", last)
	}
}
