package retailhttp_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
	"github.com/retailkit/retail/retailhttp"
)

const day = 24 * time.Hour

// rememberRig is a shop whose Store keeps sessions up to 30 days, with a
// login that chooses its cookie and lifetime as LoginOptions say. Its
// manager reaches the Store through failing, so a test can break calls.
type rememberRig struct {
	t       *testing.T
	clock   *retail.ManualClock
	s       retail.Store
	failing *failingStore // over s: what the manager uses
	m       *retailhttp.SessionManager
	h       http.Handler
	opts    retailhttp.LoginOptions // of the next login
}

// newRememberRig returns a rememberRig in token-cookie mode.
func newRememberRig(t *testing.T) *rememberRig { return newRememberRigWith(t, cookieModes[0].opts) }

// newRememberRigWith returns a rememberRig whose manager has the options
// mode gives on the rig's clock (see cookieModes).
func newRememberRigWith(t *testing.T, mode func(retail.Clock) retailhttp.SessionOptions) *rememberRig {
	clock := retail.NewManualClock(epoch)
	s, err := memory.New(memory.Options{Clock: clock, IdleTimeout: 30 * day, Lifetime: 30 * day})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r := &rememberRig{t: t, clock: clock, s: s, failing: &failingStore{Store: s}}
	r.m = newManager(t, r.failing, mode(clock))
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, req *http.Request) {
		if _, err := r.m.LoginWith(req.Context(), w, req.FormValue("user"), r.opts); err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, retail.ErrInvalid) {
				code = http.StatusBadRequest
			}
			http.Error(w, err.Error(), code)
		}
	})
	mux.HandleFunc("POST /renew", func(w http.ResponseWriter, req *http.Request) {
		if _, err := r.m.Renew(req.Context(), w); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	r.h = r.m.Handler(mux)
	return r
}

// do posts target with c (if not nil) and returns the session cookie the
// response sets, failing the test if it sets none.
func (r *rememberRig) do(target string, c *http.Cookie) *http.Cookie {
	r.t.Helper()
	return setCookie(r.t, post(r.t, r.h, target, cookies(c)...))
}

// setCookie returns the session cookie resp sets, persistent or not,
// failing the test if it sets none.
func setCookie(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == retailhttp.DefaultSessionCookie && c.Value != "" {
			return c
		}
	}
	t.Fatalf("response sets no %s cookie; Set-Cookie: %q", retailhttp.DefaultSessionCookie, resp.Header["Set-Cookie"])
	return nil
}

func cookies(c *http.Cookie) []*http.Cookie {
	if c == nil {
		return nil
	}
	return []*http.Cookie{c}
}

// wantCookie checks a cookie's Max-Age (0: none, a browser-session cookie)
// and that it sets no Expires.
func wantCookie(t *testing.T, what string, c *http.Cookie, maxAge int) {
	t.Helper()
	if c.MaxAge != maxAge || !c.Expires.IsZero() {
		t.Errorf("%s: cookie Max-Age %d, Expires %v; want Max-Age %d and no Expires", what, c.MaxAge, c.Expires, maxAge)
	}
}

func TestLoginWith_BrowserSessionCookieAndOwnLifetime(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			r := newRememberRigWith(t, mode.opts)
			r.opts = retailhttp.LoginOptions{Lifetime: day, BrowserSession: true}
			c := r.do("/login?user=alice", nil)
			wantCookie(t, "LoginWith(BrowserSession)", c, 0)
			token := get(r.m, "/", c).session.Token
			wantSession(t, r.m, "after the login", c, retailhttp.Session{Token: token, User: "alice"})

			// Renew keeps the kind of cookie and the session's lifetime,
			// and so does a second Renew.
			for i := range 2 {
				r.clock.Advance(time.Hour)
				c = r.do("/renew", c)
				wantCookie(t, fmt.Sprintf("Renew %d of a browser-session login", i+1), c, 0)
			}
			token = get(r.m, "/", c).session.Token
			r.clock.Set(epoch.Add(day - time.Millisecond))
			wantSession(t, r.m, "a millisecond before its lifetime", c, retailhttp.Session{Token: token, User: "alice"})
			r.clock.Set(epoch.Add(day))
			wantNoSession(t, r.m, "at its lifetime", c)
		})
	}
}

func TestLoginWith_RememberMeCookieIsPersistent(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			r := newRememberRigWith(t, mode.opts)
			r.opts = retailhttp.LoginOptions{Lifetime: 30 * day}
			c := r.do("/login?user=alice", nil)
			wantCookie(t, "LoginWith(30 days)", c, int(30*day/time.Second))

			// Renew sets a cookie expiring when the login's did, and so
			// does a second Renew.
			r.clock.Advance(time.Hour)
			c = r.do("/renew", c)
			wantCookie(t, "Renew of a remembered login an hour later", c, int((30*day-time.Hour)/time.Second))
			r.clock.Advance(time.Hour)
			c = r.do("/renew", c)
			wantCookie(t, "second Renew of a remembered login", c, int((30*day-2*time.Hour)/time.Second))
			token := get(r.m, "/", c).session.Token
			r.clock.Set(epoch.Add(30*day - time.Millisecond))
			wantSession(t, r.m, "a millisecond before 30 days", c, retailhttp.Session{Token: token, User: "alice"})

			// A login with Login's defaults drops the choice: Renew sets
			// the default cookie again.
			r2 := newRememberRigWith(t, mode.opts)
			r2.opts = retailhttp.LoginOptions{Lifetime: 30 * day}
			c = r2.do("/login?user=bob", nil)
			r2.opts = retailhttp.LoginOptions{}
			c = r2.do("/login?user=bob", c)
			wantCookie(t, "Login after a remembered login", c, int(retailhttp.DefaultSessionMaxAge/time.Second))
			c = r2.do("/renew", c)
			wantCookie(t, "Renew after Login", c, int(retailhttp.DefaultSessionMaxAge/time.Second))
		})
	}
}

// In signed-cookie mode the expiry is signed into the cookie too: a Renew
// of a remembered login signs the login's, not MaxAge from the Renew.
func TestLoginWith_RenewSignsTheRememberedLoginsExpiry(t *testing.T) {
	r := newRememberRigWith(t, cookieModes[1].opts)
	signer, err := retailhttp.NewCookieSigner(key(1)) // cookieModes' signing key
	if err != nil {
		t.Fatal(err)
	}
	r.opts = retailhttp.LoginOptions{Lifetime: 30 * day}
	c := r.do("/login?user=alice", nil)
	r.clock.Advance(time.Hour)
	c = r.do("/renew", c)
	end := epoch.Add(30 * day)
	if _, ok := signer.Verify(retailhttp.DefaultSessionCookie, c.Value, end.Add(-time.Millisecond)); !ok {
		t.Errorf("renewed cookie does not verify a millisecond before the login's expiry (%v)", end)
	}
	if _, ok := signer.Verify(retailhttp.DefaultSessionCookie, c.Value, end); ok {
		t.Errorf("renewed cookie still verifies at the login's expiry (%v)", end)
	}
}

func TestLoginWith_LifetimeBeyondTheStoresIsInvalid(t *testing.T) {
	r := newRememberRig(t)
	r.opts = retailhttp.LoginOptions{Lifetime: 31 * day}
	req := httptest.NewRequest(http.MethodPost, "/login?user=alice", nil)
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusBadRequest || len(rec.Result().Cookies()) != 0 {
		t.Errorf("LoginWith(31 days) over a 30-day Store: %d, Set-Cookie %q; want 400 (ErrInvalid) and no cookie", rec.Code, rec.Header()["Set-Cookie"])
	}
	if n, err := r.s.SessionCount(context.Background()); n != 0 || err != nil {
		t.Errorf("SessionCount() = %d, %v; want 0", n, err)
	}
}

// Renew, which would move the signed bound past what LoginWith chose.
func TestLoginWith_RenewSignsABrowserSessionLoginsExpiry(t *testing.T) {
	r := newRememberRigWith(t, cookieModes[1].opts) // MaxAge: a day
	signer, err := retailhttp.NewCookieSigner(key(1))
	if err != nil {
		t.Fatal(err)
	}
	r.opts = retailhttp.LoginOptions{Lifetime: 12 * time.Hour, BrowserSession: true}
	c := r.do("/login?user=alice", nil)
	r.clock.Advance(time.Hour)
	c = r.do("/renew", c)
	wantCookie(t, "Renew of a browser-session login", c, 0)
	end := epoch.Add(12 * time.Hour)
	if _, ok := signer.Verify(retailhttp.DefaultSessionCookie, c.Value, end.Add(-time.Millisecond)); !ok {
		t.Errorf("renewed cookie does not verify a millisecond before the login's expiry (%v)", end)
	}
	if _, ok := signer.Verify(retailhttp.DefaultSessionCookie, c.Value, end); ok {
		t.Errorf("renewed cookie still verifies at the login's expiry (%v): its signed expiry is MaxAge from the Renew", end)
	}
	// The Store still ends the session at the login's lifetime.
	r.clock.Set(end)
	wantNoSession(t, r.m, "at the login's lifetime", c)
}

// MaxAge from the Renew, where a persistent login keeps its Lifetime.
func TestLoginWith_RenewDoesNotCutABrowserSessionLoginShort(t *testing.T) {
	r := newRememberRigWith(t, func(clock retail.Clock) retailhttp.SessionOptions {
		return retailhttp.SessionOptions{Clock: clock, SigningKeys: [][]byte{key(1)}, MaxAge: time.Hour}
	})
	r.opts = retailhttp.LoginOptions{Lifetime: 7 * day, BrowserSession: true}
	c := r.do("/login?user=alice", nil)
	token := r.token(c)
	r.clock.Advance(2 * time.Hour)
	wantSession(t, r.m, "2 hours after a 7-day browser-session login", c, retailhttp.Session{Token: token, User: "alice"})
	c = r.do("/renew", c)
	token = r.token(c)
	r.clock.Advance(2 * time.Hour)
	wantSession(t, r.m, "2 hours after the Renew of a 7-day browser-session login", c, retailhttp.Session{Token: token, User: "alice"})
}

// A browser-session login is recorded for Renew as every version of this
// package reads it, the bare "session", in both cookie modes: an older
// version that renews the session (a rollback, a fleet in the middle of a
// deploy) then sets a browser-session cookie too, not a persistent one.
func TestLoginWith_BrowserSessionRecordReadsTheSameToEveryVersion(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			r := newRememberRigWith(t, mode.opts)
			r.opts = retailhttp.LoginOptions{Lifetime: 12 * time.Hour, BrowserSession: true}
			c := r.do("/login?user=alice", nil)
			kind, ok, err := r.s.Value(context.Background(), r.token(c), "retailhttp:cookie")
			if err != nil || !ok || string(kind) != "session" {
				t.Errorf(`the login's cookie record = %q, %v, %v; want "session", true, nil`, kind, ok, err)
			}
		})
	}
}

// A guest session that Ensure starts lives GuestLifetime, in both cookie
// modes, where the Store's lifetime is the longer one of "remember me"
// logins; without GuestLifetime it lives the Store's.
func TestEnsure_GuestLifetime(t *testing.T) {
	for _, mode := range cookieModes {
		for _, guestLife := range []time.Duration{day, 0} {
			t.Run(fmt.Sprintf("%s/%v", mode.name, guestLife), func(t *testing.T) {
				clock := retail.NewManualClock(epoch)
				s, err := memory.New(memory.Options{Clock: clock, IdleTimeout: 30 * day, Lifetime: 30 * day})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				opts := mode.opts(clock)
				opts.MaxAge, opts.GuestLifetime = 30*day, guestLife
				m := newManager(t, s, opts)
				h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if _, err := m.Ensure(r.Context(), w); err != nil {
						http.Error(w, err.Error(), http.StatusInternalServerError)
					}
				}))
				var c *http.Cookie
				for _, got := range post(t, h, "/cart").Cookies() {
					if got.Name == retailhttp.DefaultSessionCookie {
						c = got
					}
				}
				if c == nil {
					t.Fatal("Ensure set no session cookie")
				}
				if want := int(cmp.Or(guestLife, 30*day) / time.Second); c.MaxAge != want {
					t.Errorf("the guest's cookie has Max-Age %d, want %d: as long as the session lasts", c.MaxAge, want)
				}
				clock.Advance(day - time.Minute)
				if v := get(m, "/", c); !v.ok || !v.session.Guest() {
					t.Fatalf("a guest session a minute short of a day old: %+v, %v; want it live", v.session, v.ok)
				}
				clock.Advance(2 * time.Minute)
				if v := get(m, "/", c); v.ok != (guestLife == 0) {
					t.Errorf("a guest session a minute past a day old, GuestLifetime %v: live %v; want %v", guestLife, v.ok, guestLife == 0)
				}
			})
		}
	}
}

// A GuestLifetime longer than the Store's lifetime makes Ensure fail with
// an error matching retail.ErrInvalid, and set no cookie; and a guest of a
// short GuestLifetime who logs in gets the Store's lifetime.
func TestEnsure_GuestLifetimeBeyondTheStoresAndLoginAfter(t *testing.T) {
	clock := retail.NewManualClock(epoch)
	s, err := memory.New(memory.Options{Clock: clock, IdleTimeout: 30 * day, Lifetime: 30 * day})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, guestLife := range []time.Duration{31 * day, day} {
		opts := cookieModes[0].opts(clock)
		opts.MaxAge, opts.GuestLifetime = 30*day, guestLife
		m := newManager(t, s, opts)
		var ensureErr error
		mux := http.NewServeMux()
		mux.HandleFunc("POST /cart", func(w http.ResponseWriter, r *http.Request) { _, ensureErr = m.Ensure(r.Context(), w) })
		mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
			if _, err := m.Login(r.Context(), w, "alice"); err != nil {
				t.Fatal(err)
			}
		})
		h := m.Handler(mux)
		res := post(t, h, "/cart")
		if guestLife > 30*day {
			if !errors.Is(ensureErr, retail.ErrInvalid) || len(res.Cookies()) != 0 {
				t.Errorf("Ensure with GuestLifetime %v over a Store of 30 days: %v, cookies %v; want ErrInvalid, none", guestLife, ensureErr, res.Cookies())
			}
			continue
		}
		res = post(t, h, "/login", res.Cookies()...)
		clock.Advance(2 * day)
		if v := get(m, "/", res.Cookies()[0]); !v.ok || v.session.User != "alice" {
			t.Errorf("a login of a guest with GuestLifetime a day, 2 days on: %+v, %v; want alice's", v.session, v.ok)
		}
	}
}
