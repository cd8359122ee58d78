package retailhttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
	"github.com/retailkit/retail/retailhttp"
)

// newShop returns a small shop behind m, over s, whose handlers change
// sessions as a real one would:
//
//	POST /cart?item=X          Ensure, then IncrementCart(X, 1)
//	POST /login?user=U         Login(U)
//	POST /renew                Renew
//	POST /logout               Logout
//	POST /logout-everywhere    LogoutEverywhere; the body is the count
//
// A handler that fails answers 500 with the error.
func newShop(m *retailhttp.SessionManager, s retail.Carts) http.Handler {
	mux := http.NewServeMux()
	fail := func(w http.ResponseWriter, err error) { http.Error(w, err.Error(), http.StatusInternalServerError) }
	mux.HandleFunc("POST /cart", func(w http.ResponseWriter, r *http.Request) {
		sess, err := m.Ensure(r.Context(), w)
		if err != nil {
			fail(w, err)
			return
		}
		if _, err := s.IncrementCart(r.Context(), sess.Token, r.FormValue("item"), 1); err != nil {
			fail(w, err)
			return
		}
		http.Redirect(w, r, "/cart", http.StatusSeeOther)
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		if _, err := m.Login(r.Context(), w, r.FormValue("user")); err != nil {
			fail(w, err)
			return
		}
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})
	mux.HandleFunc("POST /renew", func(w http.ResponseWriter, r *http.Request) {
		if _, err := m.Renew(r.Context(), w); err != nil {
			fail(w, err)
			return
		}
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})
	mux.HandleFunc("POST /logout", func(w http.ResponseWriter, r *http.Request) {
		if err := m.Logout(r.Context(), w); err != nil {
			fail(w, err)
			return
		}
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})
	mux.HandleFunc("POST /logout-everywhere", func(w http.ResponseWriter, r *http.Request) {
		n, err := m.LogoutEverywhere(r.Context(), w)
		if err != nil {
			fail(w, err)
			return
		}
		fmt.Fprint(w, n)
	})
	return m.Handler(mux)
}

// post sends a POST for target with cookies to h, and fails the test
// unless the handler succeeded.
func post(t *testing.T, h http.Handler, target string, cookies ...*http.Cookie) *http.Response {
	t.Helper()
	resp := postAny(h, target, cookies...)
	if err := succeeded(target, resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

// postAny is post for goroutines other than the test's, which must not
// fail the test: it returns the response, whatever its status.
func postAny(h http.Handler, target string, cookies ...*http.Cookie) *http.Response {
	req := httptest.NewRequest(http.MethodPost, target, nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// succeeded returns an error unless resp, to a POST of target, reports
// success.
func succeeded(target string, resp *http.Response) error {
	if resp.StatusCode < 400 {
		return nil
	}
	body, _ := io.ReadAll(resp.Body)
	return fmt.Errorf("POST %s = %d %q, want success", target, resp.StatusCode, body)
}

// wantNoSession fails the test unless a request with c has no session and
// its response clears c.
func wantNoSession(t *testing.T, m *retailhttp.SessionManager, what string, c *http.Cookie) {
	t.Helper()
	v := get(m, "/", c)
	if v.ok {
		t.Errorf("%s: request has session %+v, want none", what, v.session)
	}
	if !isCleared(v.resp) {
		t.Errorf("%s: response does not clear the cookie; Set-Cookie: %q", what, v.resp.Header["Set-Cookie"])
	}
}

// wantSession fails the test unless a request with c has session want.
func wantSession(t *testing.T, m *retailhttp.SessionManager, what string, c *http.Cookie, want retailhttp.Session) {
	t.Helper()
	if v := get(m, "/", c); !v.ok || v.session != want {
		t.Errorf("%s: request has session %+v, %v, want %+v, true", what, v.session, v.ok, want)
	}
}

// gatedStore holds the next RefreshSession, once armed, until the test
// releases it: a request that has read its cookie but not yet reached the
// Store.
type gatedStore struct {
	retail.Store
	gate atomic.Pointer[gate]
}

type gate struct{ entered, release chan struct{} }

// arm makes the next RefreshSession wait for release, after closing the
// returned gate's entered.
func (s *gatedStore) arm() *gate {
	g := &gate{entered: make(chan struct{}), release: make(chan struct{})}
	s.gate.Store(g)
	return g
}

func (s *gatedStore) RefreshSession(ctx context.Context, token, item string) (string, bool, error) {
	if g := s.gate.Swap(nil); g != nil {
		close(g.entered)
		select {
		case <-g.release:
		case <-time.After(waitLimit):
			return "", false, errors.New("gatedStore: never released")
		}
	}
	return s.Store.RefreshSession(ctx, token, item)
}

// wait waits for ch to be closed, failing the test after waitLimit.
func wait(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("still waiting after %v for %s", waitLimit, what)
	}
}

func TestSessionManager_LogoutHoldsAgainstARequestInFlight(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			ms, clock := newStore(t)
			s := &gatedStore{Store: ms}
			m := newManager(t, s, mode.opts(clock))
			shop := newShop(m, s)
			sess, c := login(t, m, "alice")

			// A request reads the cookie; before it reaches the Store, the
			// user logs out.
			g := s.arm()
			done := make(chan visit)
			go func() { done <- get(m, "/?item=itemX", c) }()
			wait(t, "the request to reach the Store", g.entered)
			if resp := post(t, shop, "/logout", c); !isCleared(resp) {
				t.Errorf("POST /logout does not clear the cookie")
			}
			close(g.release)
			var v visit
			select {
			case v = <-done:
			case <-time.After(waitLimit):
				t.Fatalf("request still running %v after its release", waitLimit)
			}
			if v.ok {
				t.Errorf("request in flight during logout: session %+v, want none", v.session)
			}
			if n, _ := s.SessionCount(ctx); n != 0 {
				t.Errorf("SessionCount after the request in flight = %d, want 0: it re-created the session", n)
			}
			if recent, _ := s.RecentItems(ctx, sess.Token); len(recent) != 0 {
				t.Errorf("RecentItems(logged-out token) = %v, want none", recent)
			}
			wantNoSession(t, m, "old cookie replayed after logout", c)
			if n, _ := s.SessionCount(ctx); n != 0 {
				t.Errorf("SessionCount after the replay = %d, want 0", n)
			}
		})
	}
}

func TestSessionManager_LogoutHoldsAgainstAHandlerInFlight(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			s, clock := newStore(t)
			m := newManager(t, s, mode.opts(clock))
			shop := newShop(m, s)
			_, c := login(t, m, "alice")

			// A request passed the session check and is in its handler
			// when the user logs out; then it tries to write.
			inHandler, release := make(chan struct{}), make(chan struct{})
			var ensureErr, cartErr, valueErr error
			slow := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(inHandler)
				<-release
				var sess retailhttp.Session
				sess, ensureErr = m.Ensure(r.Context(), w)
				_, cartErr = s.IncrementCart(r.Context(), sess.Token, "itemX", 1)
				valueErr = s.SetValue(r.Context(), sess.Token, "flash", []byte("added"))
			}))
			done := make(chan struct{})
			go func() {
				defer close(done)
				req := httptest.NewRequest(http.MethodPost, "/cart", nil)
				req.AddCookie(c)
				slow.ServeHTTP(httptest.NewRecorder(), req)
			}()
			wait(t, "the request to reach its handler", inHandler)
			post(t, shop, "/logout", c)
			close(release)
			wait(t, "the request to end", done)

			if ensureErr != nil {
				t.Errorf("Ensure in the request in flight = %v, want its session", ensureErr)
			}
			for call, err := range map[string]error{"IncrementCart": cartErr, "SetValue": valueErr} {
				if !errors.Is(err, retail.ErrNoSession) {
					t.Errorf("%s after the logout = %v, want %v", call, err, retail.ErrNoSession)
				}
			}
			if n, _ := s.SessionCount(ctx); n != 0 {
				t.Errorf("SessionCount = %d, want 0: the request in flight re-created the session", n)
			}
			wantNoSession(t, m, "old cookie replayed after logout", c)
		})
	}
}

func TestSessionManager_LoginKeepsTheGuestsCartAndRecentItems(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			s, clock := newStore(t)
			m := newManager(t, s, mode.opts(clock))
			shop := newShop(m, s)

			if v := get(m, "/?item=itemA"); v.ok || len(v.resp.Cookies()) != 0 {
				t.Fatalf("page view without a session: session %v, cookies %v, want neither", v.ok, v.resp.Cookies())
			}
			guestCookie := sessionCookie(t, post(t, shop, "/cart?item=itemB"))
			v := get(m, "/?item=itemC", guestCookie)
			if !v.ok || !v.session.Guest() {
				t.Fatalf("request with the guest cookie: session %+v, %v, want a guest session", v.session, v.ok)
			}
			guest := v.session
			post(t, shop, "/cart?item=itemB", guestCookie) // the same session: no new cookie needed
			if err := s.SetValue(ctx, guest.Token, "flash", []byte("welcome")); err != nil {
				t.Fatalf("SetValue = %v", err)
			}

			userCookie := sessionCookie(t, post(t, shop, "/login?user=alice", guestCookie))
			v = get(m, "/", userCookie)
			if !v.ok || v.session.User != "alice" || v.session.Token == guest.Token {
				t.Fatalf("request after login: session %+v, %v, want alice's under a new token", v.session, v.ok)
			}
			alice := v.session
			if cart, err := s.Cart(ctx, alice.Token); err != nil || !cmp.Equal(cart, map[string]int{"itemB": 2}) {
				t.Errorf("Cart after login = %v, %v, want map[itemB:2], nil: the guest's cart must be kept", cart, err)
			}
			if recent, err := s.RecentItems(ctx, alice.Token); err != nil || !cmp.Equal(recent, []string{"itemC"}) {
				t.Errorf("RecentItems after login = %v, %v, want [itemC], nil", recent, err)
			}
			if flash, ok, err := s.PopValue(ctx, alice.Token, "flash"); string(flash) != "welcome" || !ok || err != nil {
				t.Errorf("PopValue(flash) after login = %q, %v, %v, want %q, true, nil", flash, ok, err, "welcome")
			}
			if _, ok, _ := s.CheckToken(ctx, guest.Token); ok {
				t.Errorf("CheckToken(guest token) after login = true, want the old token dead")
			}
			wantNoSession(t, m, "guest cookie replayed after login", guestCookie)
			if n, _ := s.SessionCount(ctx); n != 1 {
				t.Errorf("SessionCount = %d, want 1", n)
			}
		})
	}
}

func TestSessionManager_LoginMovesALoggedInSessionToAFreshToken(t *testing.T) {
	ctx := context.Background()
	s, clock := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{Clock: clock})
	first, firstCookie := login(t, m, "alice")
	if err := s.AddToCart(ctx, first.Token, "itemX", 1); err != nil {
		t.Fatalf("AddToCart = %v", err)
	}
	clock.Advance(10 * time.Minute)

	// Log in again, as the same user, from a request that carries the
	// first session.
	second, secondCookie := login(t, m, "alice", firstCookie)
	if second.Token == first.Token || secondCookie.Value == firstCookie.Value {
		t.Fatalf("Login reused token %q, want a fresh one", first.Token)
	}
	wantNoSession(t, m, "first cookie after the second login", firstCookie)
	wantSession(t, m, "second cookie", secondCookie, second)
	if cart, _ := s.Cart(ctx, second.Token); !cmp.Equal(cart, map[string]int{"itemX": 1}) {
		t.Errorf("Cart after the second login = %v, want map[itemX:1]", cart)
	}
	// A login restarts the session's lifetime.
	infos, err := s.UserSessions(ctx, "alice")
	if err != nil || len(infos) != 1 || !infos[0].Created.Equal(clock.Now()) {
		t.Errorf("UserSessions(alice) = %+v, %v, want one session created now (%v)", infos, err, clock.Now())
	}
}

// A login as someone else, from a browser where alice is logged in, must
// not hand alice's cart and values to bob: alice is logged out and bob
// starts afresh.
func TestSessionManager_LoginAsAnotherUserStartsAfresh(t *testing.T) {
	ctx := context.Background()
	s, clock := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{Clock: clock})
	alice, aliceCookie := login(t, m, "alice")
	if err := s.AddToCart(ctx, alice.Token, "itemX", 1); err != nil {
		t.Fatalf("AddToCart = %v", err)
	}
	if err := s.SetValue(ctx, alice.Token, "address", []byte("alice's")); err != nil {
		t.Fatalf("SetValue = %v", err)
	}
	bob, bobCookie := login(t, m, "bob", aliceCookie)
	wantSession(t, m, "bob's cookie", bobCookie, bob)
	wantNoSession(t, m, "alice's cookie after bob logged in", aliceCookie)
	if cart, err := s.Cart(ctx, bob.Token); err != nil || len(cart) != 0 {
		t.Errorf("bob's cart = %v, %v, want empty: alice's cart is not bob's", cart, err)
	}
	if val, ok, err := s.Value(ctx, bob.Token, "address"); ok || err != nil {
		t.Errorf("bob's Value(address) = %q, %v, %v, want none", val, ok, err)
	}
	if infos, err := s.UserSessions(ctx, "alice"); err != nil || len(infos) != 0 {
		t.Errorf("UserSessions(alice) = %+v, %v, want none", infos, err)
	}
}

func TestSessionManager_LoginAfterTheSessionEndedStartsANewOne(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	old, _ := login(t, m, "alice")
	if err := s.Logout(ctx, old.Token); err != nil {
		t.Fatal(err)
	}
	sess, c := loginIn(t, m, retailhttp.WithSession(ctx, old), "alice")
	wantSession(t, m, "cookie of the new login", c, sess)
}

func TestSessionManager_RenewChangesTheTokenAndKeepsTheUser(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			s, clock := newStore(t)
			m := newManager(t, s, mode.opts(clock))
			shop := newShop(m, s)
			old, oldCookie := login(t, m, "alice")
			post(t, shop, "/cart?item=itemX", oldCookie)
			clock.Advance(10 * time.Minute)

			newCookie := sessionCookie(t, post(t, shop, "/renew", oldCookie))
			v := get(m, "/", newCookie)
			if !v.ok || v.session.User != "alice" || v.session.Token == old.Token {
				t.Fatalf("request after Renew: session %+v, %v, want alice's under a new token", v.session, v.ok)
			}
			wantNoSession(t, m, "old cookie replayed after Renew", oldCookie)
			if cart, _ := s.Cart(ctx, v.session.Token); !cmp.Equal(cart, map[string]int{"itemX": 1}) {
				t.Errorf("Cart after Renew = %v, want map[itemX:1]", cart)
			}
			// Renew keeps the lifetime: the session was created at login.
			infos, err := s.UserSessions(ctx, "alice")
			if err != nil || len(infos) != 1 || infos[0].ID != retail.SessionID(v.session.Token) || !infos[0].Created.Equal(epoch) {
				t.Errorf("UserSessions(alice) = %+v, %v, want the renewed session, created at login (%v)", infos, err, epoch)
			}
		})
	}
}

func TestSessionManager_RenewNeedsALiveSession(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	rec := httptest.NewRecorder()
	if _, err := m.Renew(requestContext(t, m), rec); !errors.Is(err, retail.ErrNoSession) {
		t.Errorf("Renew(no session) = %v, want %v", err, retail.ErrNoSession)
	}
	if got := rec.Result().Header["Set-Cookie"]; len(got) != 0 {
		t.Errorf("Renew(no session) Set-Cookie = %q, want none", got)
	}

	sess, _ := login(t, m, "alice")
	if err := s.Logout(ctx, sess.Token); err != nil {
		t.Fatal(err)
	}
	rec = httptest.NewRecorder()
	if _, err := m.Renew(retailhttp.WithSession(ctx, sess), rec); !errors.Is(err, retail.ErrNoSession) {
		t.Errorf("Renew(ended session) = %v, want %v", err, retail.ErrNoSession)
	}
	if !isCleared(rec.Result()) {
		t.Errorf("Renew(ended session) does not clear the cookie")
	}
	if n, _ := s.SessionCount(ctx); n != 0 {
		t.Errorf("SessionCount after Renew(ended session) = %d, want 0", n)
	}
}

// Without its Handler a manager cannot know the request's session: its
// calls must fail and write nothing, not start a new session (a guest's
// cart would be lost) nor end or move a session that another manager's
// Handler found.
func TestSessionManager_RefusesAContextItsHandlerDidNotPassOn(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	other := newManager(t, s, retailhttp.SessionOptions{}) // same options, same Store
	alice, aliceCookie := login(t, other, "alice")
	var nested context.Context // through m's Handler, then other's
	h := m.Handler(other.Handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { nested = r.Context() })))
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	req.AddCookie(aliceCookie)
	h.ServeHTTP(httptest.NewRecorder(), req)

	contexts := []struct {
		name string
		ctx  context.Context
	}{
		{"context.Background()", ctx},
		{"another manager's Handler", requestContext(t, other, aliceCookie)},
		{"another manager's Handler inside this one's", nested},
	}
	calls := []struct {
		name string
		call func(context.Context, http.ResponseWriter) error
	}{
		{"Ensure", func(ctx context.Context, w http.ResponseWriter) error { _, err := m.Ensure(ctx, w); return err }},
		{"Login", func(ctx context.Context, w http.ResponseWriter) error { _, err := m.Login(ctx, w, "bob"); return err }},
		{"Renew", func(ctx context.Context, w http.ResponseWriter) error { _, err := m.Renew(ctx, w); return err }},
		{"Logout", func(ctx context.Context, w http.ResponseWriter) error { return m.Logout(ctx, w) }},
		{"LogoutEverywhere", func(ctx context.Context, w http.ResponseWriter) error {
			_, err := m.LogoutEverywhere(ctx, w)
			return err
		}},
	}
	for _, c := range contexts {
		for _, call := range calls {
			rec := httptest.NewRecorder()
			if err := call.call(c.ctx, rec); !errors.Is(err, retailhttp.ErrNoHandler) {
				t.Errorf("%s with %s = %v, want an error matching %v", call.name, c.name, err, retailhttp.ErrNoHandler)
			}
			if got := rec.Result().Header["Set-Cookie"]; len(got) != 0 {
				t.Errorf("%s with %s: Set-Cookie = %q, want none", call.name, c.name, got)
			}
			if n, err := s.SessionCount(ctx); n != 1 || err != nil {
				t.Errorf("%s with %s: SessionCount = %d, %v, want 1 (alice's), nil", call.name, c.name, n, err)
			}
			if user, ok, err := s.CheckToken(ctx, alice.Token); user != "alice" || !ok || err != nil {
				t.Errorf("%s with %s: CheckToken(alice's token) = %q, %v, %v, want alice's session untouched", call.name, c.name, user, ok, err)
			}
		}
	}
}

func TestSessionManager_EnsureStartsOneGuestSessionPerRequest(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	var first, second retailhttp.Session
	var errs [2]error
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first, errs[0] = m.Ensure(r.Context(), w)
		second, errs[1] = m.Ensure(r.Context(), w)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/cart", nil))
	if errs != [2]error{} || first != second || !first.Guest() || first.Token == "" {
		t.Fatalf("Ensure twice in a request = %+v, %+v, %v, want one guest session twice", first, second, errs)
	}
	if got := rec.Result().Header["Set-Cookie"]; len(got) != 1 {
		t.Errorf("Set-Cookie after Ensure twice = %q, want one cookie", got)
	}
	c := sessionCookie(t, rec.Result())
	if user, ok, err := s.CheckToken(ctx, first.Token); user != "" || !ok || err != nil {
		t.Errorf("CheckToken(guest token) = %q, %v, %v, want \"\", true, nil", user, ok, err)
	}
	if n, _ := s.SessionCount(ctx); n != 1 {
		t.Errorf("SessionCount = %d, want 1", n)
	}

	// With a session, Ensure returns it and sets no cookie.
	var again retailhttp.Session
	h = m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		again, errs[0] = m.Ensure(r.Context(), w)
	}))
	req := httptest.NewRequest(http.MethodPost, "/cart", nil)
	req.AddCookie(c)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if errs[0] != nil || again != first {
		t.Errorf("Ensure with the guest cookie = %+v, %v, want %+v", again, errs[0], first)
	}
	if got := rec.Result().Header["Set-Cookie"]; len(got) != 0 {
		t.Errorf("Ensure with a session Set-Cookie = %q, want none", got)
	}
}

func TestSessionManager_IdleSessionExpires(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			s, clock := newStore(t)
			m := newManager(t, s, mode.opts(clock))
			sess, c := login(t, m, "alice")

			clock.Advance(retail.DefaultIdleTimeout - time.Millisecond)
			wantSession(t, m, "1 ms before the idle timeout", c, sess) // refreshes it
			clock.Advance(retail.DefaultIdleTimeout - time.Millisecond)
			wantSession(t, m, "1 ms before the idle timeout after a refresh", c, sess)
			clock.Advance(retail.DefaultIdleTimeout)
			wantNoSession(t, m, "at the idle timeout", c)
			if _, ok, _ := s.CheckToken(ctx, sess.Token); ok {
				t.Errorf("CheckToken after the idle timeout = true, want false")
			}
		})
	}
}

func TestSessionManager_SessionEndsAtItsLifetime(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			s, clock := newStore(t)
			m := newManager(t, s, mode.opts(clock))
			sess, c := login(t, m, "alice")

			// Active all day, never idle for long.
			step := retail.DefaultIdleTimeout / 2
			for clock.Now().Add(step).Before(epoch.Add(retail.DefaultLifetime)) {
				clock.Advance(step)
				if v := get(m, "/", c); !v.ok {
					t.Fatalf("no session %v after login, want one until %v", clock.Now().Sub(epoch), retail.DefaultLifetime)
				}
			}
			clock.Set(epoch.Add(retail.DefaultLifetime - time.Millisecond))
			wantSession(t, m, "1 ms before the lifetime", c, sess)
			clock.Advance(time.Millisecond)
			wantNoSession(t, m, "at the lifetime", c)
		})
	}
}

func TestSessionManager_LogoutClearsTheCookieAndTheStore(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			s, clock := newStore(t)
			m := newManager(t, s, mode.opts(clock))
			shop := newShop(m, s)
			sess, c := login(t, m, "alice")
			post(t, shop, "/cart?item=itemX", c)

			if resp := post(t, shop, "/logout", c); !isCleared(resp) {
				t.Errorf("Logout response does not clear the cookie; Set-Cookie: %q", resp.Header["Set-Cookie"])
			}
			if _, ok, _ := s.CheckToken(ctx, sess.Token); ok {
				t.Errorf("CheckToken after Logout ok = true, want false")
			}
			if cart, _ := s.Cart(ctx, sess.Token); len(cart) != 0 {
				t.Errorf("Cart after Logout = %v, want empty", cart)
			}
			wantNoSession(t, m, "old cookie replayed after logout", c)
		})
	}
}

func TestSessionManager_LogoutWithoutSessionClearsTheCookie(t *testing.T) {
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	rec := httptest.NewRecorder()
	if err := m.Logout(requestContext(t, m), rec); err != nil {
		t.Errorf("Logout(no session) = %v, want nil", err)
	}
	if !isCleared(rec.Result()) {
		t.Errorf("Logout(no session) does not clear the cookie")
	}
}

func TestSessionManager_LogoutEverywhereEndsEveryOneOfTheUsersSessions(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			s, clock := newStore(t)
			m := newManager(t, s, mode.opts(clock))
			shop := newShop(m, s)
			_, laptop := login(t, m, "alice")
			_, phone := login(t, m, "alice")
			bob, bobs := login(t, m, "bob")

			resp := post(t, shop, "/logout-everywhere", phone)
			if !isCleared(resp) {
				t.Errorf("LogoutEverywhere response does not clear the cookie")
			}
			body := new(strings.Builder)
			if _, err := io.Copy(body, resp.Body); err != nil || body.String() != "2" {
				t.Errorf("LogoutEverywhere count = %q, %v, want 2", body, err)
			}
			wantNoSession(t, m, "alice's laptop", laptop)
			wantNoSession(t, m, "alice's phone", phone)
			wantSession(t, m, "bob's cookie", bobs, bob)
			if infos, err := s.UserSessions(ctx, "alice"); len(infos) != 0 || err != nil {
				t.Errorf("UserSessions(alice) = %+v, %v, want none", infos, err)
			}
		})
	}
}

func TestSessionManager_LogoutEverywhereOfAGuestOrNoSession(t *testing.T) {
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	shop := newShop(m, s)
	guest := sessionCookie(t, post(t, shop, "/cart?item=itemX"))
	_, alice := login(t, m, "alice")
	for _, tc := range []struct {
		what    string
		cookies []*http.Cookie
		want    int
	}{{"guest", []*http.Cookie{guest}, 1}, {"no session", nil, 0}} {
		resp := post(t, shop, "/logout-everywhere", tc.cookies...)
		var body strings.Builder
		io.Copy(&body, resp.Body)
		if body.String() != strconv.Itoa(tc.want) || !isCleared(resp) {
			t.Errorf("LogoutEverywhere(%s) = %q, cleared %v, want %d, cleared", tc.what, body.String(), isCleared(resp), tc.want)
		}
	}
	wantNoSession(t, m, "guest cookie after LogoutEverywhere", guest)
	if v := get(m, "/", alice); !v.ok {
		t.Errorf("alice's session after a guest's LogoutEverywhere: none, want hers")
	}
}

func ExampleSessionManager_Ensure() {
	store, err := memory.New(memory.Options{})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	sessions, err := retailhttp.NewSessionManager(store, retailhttp.SessionOptions{})
	if err != nil {
		panic(err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /cart", func(w http.ResponseWriter, r *http.Request) {
		s, err := sessions.Ensure(r.Context(), w) // a guest session, if need be
		if err != nil {
			http.Error(w, "cannot start a session", http.StatusInternalServerError)
			return
		}
		item := r.FormValue("item")
		if _, err := store.IncrementCart(r.Context(), s.Token, item, 1); err != nil {
			http.Error(w, "cannot add to the cart", http.StatusBadRequest)
			return
		}
		// A flash message, shown once by the next page.
		if err := store.SetValue(r.Context(), s.Token, "flash", []byte("Added "+item+".")); err != nil {
			http.Error(w, "cannot keep the message", http.StatusInternalServerError)
			return
		}
		http.Redirect(w, r, "/cart", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /cart", func(w http.ResponseWriter, r *http.Request) {
		s, ok := retailhttp.SessionFrom(r.Context())
		if !ok {
			fmt.Fprint(w, "your cart is empty")
			return
		}
		if msg, ok, err := store.PopValue(r.Context(), s.Token, "flash"); err == nil && ok {
			fmt.Fprintf(w, "%s ", msg)
		}
		cart, _ := store.Cart(r.Context(), s.Token)
		fmt.Fprintf(w, "guest: %v, cart: %v", s.Guest(), cart)
	})
	handler := sessions.Handler(mux)
	browse := func(method, target string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, nil)
		for _, c := range cookies {
			req.AddCookie(c)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec
	}

	fmt.Println(browse("GET", "/cart").Body)
	cookie := browse("POST", "/cart?item=kettle").Result().Cookies()[0]
	fmt.Println(browse("GET", "/cart", cookie).Body)
	fmt.Println(browse("GET", "/cart", cookie).Body)

	// Output:
	// your cart is empty
	// Added kettle. guest: true, cart: map[kettle:1]
	// guest: true, cart: map[kettle:1]
}

// TestSessionManager_LogoutEverywhereHoldsAgainstALoginInFlight races a
// login on one device (a guest's, with a cart, or alice logging in again)
// against "log out everywhere" on another of alice's devices, 2,000 times:
// the session the login hands out must be over too, whichever request
// reaches the store first. (The store's clock stands still, so the login
// falls in the millisecond the logout began in.)
func TestSessionManager_LogoutEverywhereHoldsAgainstALoginInFlight(t *testing.T) {
	ctx := context.Background()
	s, clock := newStore(t)
	m := newManager(t, s, cookieModes[0].opts(clock))
	shop := newShop(m, s)
	survived := 0
	for i := range 2000 {
		_, phone := login(t, m, "alice")
		var laptop *http.Cookie
		if i%2 == 0 {
			laptop = post(t, shop, "/cart?item=itemX").Cookies()[0] // a guest
		} else {
			_, laptop = login(t, m, "alice")
		}
		var (
			wg                   sync.WaitGroup
			loggedIn, everywhere *http.Response
		)
		wg.Go(func() { loggedIn = postAny(shop, "/login?user=alice", laptop) })
		wg.Go(func() { everywhere = postAny(shop, "/logout-everywhere", phone) })
		wg.Wait()
		if err := errors.Join(succeeded("/login?user=alice", loggedIn), succeeded("/logout-everywhere", everywhere)); err != nil {
			t.Fatal(err)
		}
		var fresh *http.Cookie
		for _, c := range loggedIn.Cookies() {
			if c.MaxAge >= 0 && c.Value != "" {
				fresh = c
			}
		}
		if fresh == nil {
			t.Fatalf("POST /login set no session cookie: %q", loggedIn.Header["Set-Cookie"])
		}
		if v := get(m, "/", fresh); v.ok {
			survived++
			if survived == 1 {
				t.Errorf("trial %d: the login's cookie has session %+v after log out everywhere, want none", i, v.session)
			}
		}
	}
	if survived != 0 {
		t.Errorf("%d of 2000 logins survived a concurrent log out everywhere, want 0", survived)
	}
	if infos, err := s.UserSessions(ctx, "alice"); len(infos) != 0 || err != nil {
		t.Errorf("UserSessions(alice) = %d sessions, %v, want none", len(infos), err)
	}
}

// Every response that sets or clears the session cookie is private, so that
// no shared cache keeps a cookie that names a session: Ensure's guest
// session (on a page the page cache does not handle), a login over a
// Cache-Control the handler set, and a logout.
func TestSessionManager_ResponsesThatSetTheCookieArePrivate(t *testing.T) {
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	serve := func(cookie *http.Cookie, f func(w http.ResponseWriter, r *http.Request) error) *http.Response {
		t.Helper()
		h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := f(w, r); err != nil {
				t.Error(err)
			}
		}))
		req := httptest.NewRequest(http.MethodGet, "/item?item=kettle", nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result()
	}
	guest := serve(nil, func(w http.ResponseWriter, r *http.Request) error {
		_, err := m.Ensure(r.Context(), w)
		return err
	})
	login := serve(sessionCookie(t, guest), func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Cache-Control", "public, max-age=60")
		_, err := m.Login(r.Context(), w, "alice")
		return err
	})
	logout := serve(sessionCookie(t, login), func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Add("Cache-Control", "max-age=60")
		w.Header().Add("Cache-Control", "no-store")
		return m.Logout(r.Context(), w)
	})
	for _, tt := range []struct {
		name string
		resp *http.Response
		want string
	}{
		{"Ensure", guest, "private"},
		{"Login", login, "private, max-age=60"},
		{"Logout", logout, "private, max-age=60, no-store"}, // every value the handler added holds
	} {
		if len(tt.resp.Header["Set-Cookie"]) == 0 {
			t.Errorf("%s set no cookie", tt.name)
		}
		if got := tt.resp.Header.Values("Cache-Control"); len(got) != 1 || got[0] != tt.want {
			t.Errorf("%s's response Cache-Control = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// A request with a dead session cookie gets the cookie cleared, and its
// response stays private even if the handler makes it public afterwards
// (a favicon's long max-age): a shared cache must not clear the cookie of
// every visitor it serves.
func TestSessionManager_ClearingADeadCookieKeepsTheResponsePrivate(t *testing.T) {
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["cache-control"] = []string{"public, max-age=86400"} // as net/http sends it
		w.Write([]byte("icon"))
	}))
	req := httptest.NewRequest(http.MethodGet, "/favicon.ico", nil)
	req.AddCookie(&http.Cookie{Name: retailhttp.DefaultSessionCookie, Value: "0123456789abcdef0123456789abcdef"})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	if len(resp.Header["Set-Cookie"]) == 0 {
		t.Fatal("the dead cookie was not cleared")
	}
	if got, want := resp.Header.Get("Cache-Control"), "private, max-age=86400"; got != want || resp.Header["cache-control"] != nil {
		t.Errorf("Cache-Control = %q (header %v), want %q and no other spelling", got, resp.Header, want)
	}
}
