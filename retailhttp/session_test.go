package retailhttp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
	"github.com/retailkit/retail/retailhttp"
)

// countingStore counts the session lookups and writes the middleware
// makes.
type countingStore struct {
	retail.Store
	checks, refreshes, updates, countViews atomic.Int64
}

func (s *countingStore) CheckToken(ctx context.Context, token string) (string, bool, error) {
	s.checks.Add(1)
	return s.Store.CheckToken(ctx, token)
}

func (s *countingStore) RefreshSession(ctx context.Context, token, item string) (string, bool, error) {
	s.refreshes.Add(1)
	return s.Store.RefreshSession(ctx, token, item)
}

func (s *countingStore) UpdateToken(ctx context.Context, token, user, item string) error {
	s.updates.Add(1)
	return s.Store.UpdateToken(ctx, token, user, item)
}

func (s *countingStore) CountView(ctx context.Context, item string) error {
	s.countViews.Add(1)
	return s.Store.CountView(ctx, item)
}

// cookieModes are the two kinds of session cookie, as options on a clock.
var cookieModes = []struct {
	name string
	opts func(clock retail.Clock) retailhttp.SessionOptions
}{
	{"TokenCookie", func(clock retail.Clock) retailhttp.SessionOptions {
		return retailhttp.SessionOptions{Clock: clock}
	}},
	{"SignedCookie", func(clock retail.Clock) retailhttp.SessionOptions {
		return retailhttp.SessionOptions{Clock: clock, SigningKeys: [][]byte{key(1)}}
	}},
}

func newManager(t *testing.T, s retailhttp.SessionStore, opts retailhttp.SessionOptions) *retailhttp.SessionManager {
	t.Helper()
	m, err := retailhttp.NewSessionManager(s, opts)
	if err != nil {
		t.Fatalf("NewSessionManager = %v", err)
	}
	return m
}

// visit is what a handler behind the middleware saw and what the response
// said.
type visit struct {
	session retailhttp.Session
	ok      bool
	resp    *http.Response
}

// get sends a GET for target with cookies through m to a handler that
// records the session it sees.
func get(m *retailhttp.SessionManager, target string, cookies ...*http.Cookie) visit {
	return send(m, httptest.NewRequest(http.MethodGet, target, nil), cookies...)
}

// send sends req with cookies through m to a handler that records the
// session it sees.
func send(m *retailhttp.SessionManager, req *http.Request, cookies ...*http.Cookie) visit {
	var v visit
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v.session, v.ok = retailhttp.SessionFrom(r.Context())
	}))
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	v.resp = rec.Result()
	return v
}

// requestContext returns the context that m's Handler passes on for a
// POST with cookies: the context a handler behind it calls m's methods
// with.
func requestContext(t *testing.T, m *retailhttp.SessionManager, cookies ...*http.Cookie) context.Context {
	t.Helper()
	var ctx context.Context
	h := m.Handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { ctx = r.Context() }))
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	h.ServeHTTP(httptest.NewRecorder(), req)
	if ctx == nil {
		t.Fatalf("the Handler did not pass the request on")
	}
	return ctx
}

// login logs user in through m from a request with cookies, as a handler
// would, and returns the session and the cookie it set.
func login(t *testing.T, m *retailhttp.SessionManager, user string, cookies ...*http.Cookie) (retailhttp.Session, *http.Cookie) {
	t.Helper()
	return loginIn(t, m, requestContext(t, m, cookies...), user)
}

// loginIn logs user in through m with the context of a request, and
// returns the session and the cookie it set.
func loginIn(t *testing.T, m *retailhttp.SessionManager, ctx context.Context, user string) (retailhttp.Session, *http.Cookie) {
	t.Helper()
	rec := httptest.NewRecorder()
	s, err := m.Login(ctx, rec, user)
	if err != nil {
		t.Fatalf("Login(%q) = %v", user, err)
	}
	return s, sessionCookie(t, rec.Result())
}

// sessionCookie returns the session cookie resp sets, failing the test if
// it sets none.
func sessionCookie(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == retailhttp.DefaultSessionCookie && c.MaxAge > 0 {
			return c
		}
	}
	t.Fatalf("response sets no %s cookie; Set-Cookie: %q", retailhttp.DefaultSessionCookie, resp.Header["Set-Cookie"])
	return nil
}

// isCleared reports whether resp tells the browser to drop the session
// cookie.
func isCleared(resp *http.Response) bool {
	for _, c := range resp.Cookies() {
		if c.Name == retailhttp.DefaultSessionCookie && c.MaxAge < 0 {
			return true
		}
	}
	return false
}

// topItems returns the n most viewed items of s, failing the test on an
// error.
func topItems(t *testing.T, s retail.Views, n int) []retail.ItemViews {
	t.Helper()
	items, err := s.TopItems(context.Background(), n)
	if err != nil {
		t.Fatalf("TopItems(%d) = %v", n, err)
	}
	return items
}

func TestSessionManager_AnonymousVisitorHasNoSessionButViewsCount(t *testing.T) {
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	const n = 5
	for range n {
		v := get(m, "/?item=itemX")
		if v.ok {
			t.Errorf("SessionFrom(anonymous request) = %+v, true, want no session", v.session)
		}
		if got := v.resp.Header["Set-Cookie"]; len(got) != 0 {
			t.Errorf("anonymous response Set-Cookie = %q, want none", got)
		}
	}
	get(m, "/cart") // views no item
	if n, _ := s.SessionCount(context.Background()); n != 0 {
		t.Errorf("SessionCount after anonymous visits = %d, want 0: page views must not create sessions", n)
	}
	if diff := cmp.Diff([]retail.ItemViews{{Item: "itemX", Views: n}}, topItems(t, s, 10)); diff != "" {
		t.Errorf("TopItems after %d anonymous views of itemX mismatch (-want +got):\n%s", n, diff)
	}
}

func TestSessionManager_CountViewOptionKeepsBotsOut(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{CountView: func(r *http.Request) bool { return !retailhttp.LikelyBot(r) }})
	request := func(ua string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/?item=itemX", nil)
		r.Header.Set("User-Agent", ua)
		return r
	}
	const browser = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
	const crawler = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	for range 3 {
		send(m, request(crawler))
		send(m, request(""))
	}
	send(m, request(browser))
	send(m, request(browser))
	if diff := cmp.Diff([]retail.ItemViews{{Item: "itemX", Views: 2}}, topItems(t, s, 10)); diff != "" {
		t.Errorf("TopItems after 2 browser and 6 crawler views mismatch (-want +got):\n%s", diff)
	}

	// With a session, a refused view is neither counted nor recent.
	sess, c := login(t, m, "alice")
	if v := send(m, request(crawler), c); !v.ok {
		t.Fatalf("crawler request with alice's cookie: no session, want alice's")
	}
	if recent, _ := s.RecentItems(ctx, sess.Token); len(recent) != 0 {
		t.Errorf("RecentItems after a refused view = %v, want none", recent)
	}
	send(m, request(browser), c)
	if recent, _ := s.RecentItems(ctx, sess.Token); !cmp.Equal(recent, []string{"itemX"}) {
		t.Errorf("RecentItems after a browser view = %v, want [itemX]", recent)
	}
	if diff := cmp.Diff([]retail.ItemViews{{Item: "itemX", Views: 3}}, topItems(t, s, 10)); diff != "" {
		t.Errorf("TopItems after alice's views mismatch (-want +got):\n%s", diff)
	}
}

func TestSessionManager_LoginSetsATokenCookie(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	sess, c := login(t, m, "alice")

	if len(sess.Token) != retailhttp.TokenLen || strings.Trim(sess.Token, "0123456789abcdef") != "" {
		t.Errorf("Login token = %q, want %d lowercase hex digits", sess.Token, retailhttp.TokenLen)
	}
	if sess.User != "alice" || sess.Guest() {
		t.Errorf("Login session User, Guest() = %q, %v, want alice, false", sess.User, sess.Guest())
	}
	want := http.Cookie{
		Name: retailhttp.DefaultSessionCookie, Value: sess.Token, Path: "/",
		MaxAge: int(retail.DefaultLifetime / time.Second), HttpOnly: true, SameSite: http.SameSiteLaxMode,
	}
	got := http.Cookie{Name: c.Name, Value: c.Value, Path: c.Path, MaxAge: c.MaxAge, HttpOnly: c.HttpOnly, Secure: c.Secure, SameSite: c.SameSite}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Login cookie mismatch (-want +got):\n%s", diff)
	}
	if user, ok, err := s.CheckToken(ctx, sess.Token); user != "alice" || !ok || err != nil {
		t.Errorf("CheckToken(login token) = %q, %v, %v, want %q, true, nil", user, ok, err, "alice")
	}
}

func TestSessionManager_SecureOptionMarksTheCookie(t *testing.T) {
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{Secure: true, CookieName: retailhttp.DefaultSessionCookie, MaxAge: time.Hour})
	_, c := login(t, m, "alice")
	if !c.Secure || c.MaxAge != 3600 {
		t.Errorf("Login cookie Secure, MaxAge = %v, %d, want true, 3600", c.Secure, c.MaxAge)
	}
}

func TestSessionManager_TokensAreUnique(t *testing.T) {
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	seen := make(map[string]bool)
	for range 1000 {
		sess, _ := login(t, m, "alice")
		if seen[sess.Token] {
			t.Fatalf("Login issued token %q twice", sess.Token)
		}
		seen[sess.Token] = true
	}
}

func TestSessionManager_PutsTheSessionInTheContextAndRecordsViews(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			ms, clock := newStore(t)
			s := &countingStore{Store: ms}
			m := newManager(t, s, mode.opts(clock))
			sess, c := login(t, m, "alice")

			targets := []string{"/?item=itemA", "/cart", "/?item=itemB", "/?item=itemA&item=itemC"}
			for _, target := range targets {
				v := get(m, target, c)
				if !v.ok || v.session != sess {
					t.Errorf("GET %s: SessionFrom = %+v, %v, want %+v, true", target, v.session, v.ok, sess)
				}
				if got := v.resp.Header["Set-Cookie"]; len(got) != 0 {
					t.Errorf("GET %s: Set-Cookie = %q, want none", target, got)
				}
			}
			recent, err := s.RecentItems(ctx, sess.Token)
			if err != nil {
				t.Fatalf("RecentItems = %v", err)
			}
			if diff := cmp.Diff([]string{"itemB", "itemA"}, recent); diff != "" {
				t.Errorf("RecentItems mismatch (-want +got):\n%s", diff)
			}
			// One Store call a request, which checks and records at once.
			got := [4]int64{s.refreshes.Load(), s.checks.Load(), s.updates.Load(), s.countViews.Load()}
			if want := [4]int64{int64(len(targets)), 0, 0, 0}; got != want {
				t.Errorf("RefreshSession, CheckToken, UpdateToken, CountView calls = %v, want %v", got, want)
			}
		})
	}
}

func TestSessionManager_ItemOptionChoosesTheViewedItem(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{Item: func(r *http.Request) string {
		if item, ok := strings.CutPrefix(r.URL.Path, "/items/"); ok {
			return item
		}
		return ""
	}})
	sess, c := login(t, m, "alice")
	get(m, "/items/itemP", c)
	get(m, "/items/"+strings.Repeat("x", retail.MaxIDLen+1), c) // breaks the input rules: no item
	get(m, "/items/itemQ")                                      // anonymous
	recent, _ := s.RecentItems(ctx, sess.Token)
	if diff := cmp.Diff([]string{"itemP"}, recent); diff != "" {
		t.Errorf("RecentItems mismatch (-want +got):\n%s", diff)
	}
	want := []retail.ItemViews{{Item: "itemP", Views: 1}, {Item: "itemQ", Views: 1}}
	if diff := cmp.Diff(want, topItems(t, s, 10)); diff != "" {
		t.Errorf("TopItems mismatch (-want +got):\n%s", diff)
	}
}

func TestSessionManager_EndedSessionIsNoSessionAndClearsTheCookie(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			s, clock := newStore(t)
			m := newManager(t, s, mode.opts(clock))
			sess, c := login(t, m, "alice")
			if err := s.Logout(ctx, sess.Token); err != nil { // e.g. on another server
				t.Fatalf("Logout = %v", err)
			}
			v := get(m, "/?item=itemX", c)
			if v.ok {
				t.Errorf("SessionFrom(ended session) = %+v, true, want no session", v.session)
			}
			if !isCleared(v.resp) {
				t.Errorf("response to an ended session's cookie does not clear it; Set-Cookie: %q", v.resp.Header["Set-Cookie"])
			}
			if n, _ := s.SessionCount(ctx); n != 0 {
				t.Errorf("SessionCount = %d, want 0: an ended session must not come back", n)
			}
			// The view is counted as an anonymous one.
			if diff := cmp.Diff([]retail.ItemViews{{Item: "itemX", Views: 1}}, topItems(t, s, 10)); diff != "" {
				t.Errorf("TopItems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// A browser sends every cookie of the name that the request matches, one
// with a longer Path first: a cookie planted by a sibling subdomain or for
// a deeper path comes before the site's own. The first that names a live
// session is the request's, and the response clears nothing, which would
// delete the site's live cookie and leave the planted one.
func TestSessionManager_PlantedCookieBeforeTheSessionsOwnIsPassedOver(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			s, clock := newStore(t)
			m := newManager(t, s, mode.opts(clock))
			ended, endedCookie := login(t, m, "mallory")
			if err := s.Logout(ctx, ended.Token); err != nil {
				t.Fatalf("Logout = %v", err)
			}
			sess, c := login(t, m, "alice")
			for _, planted := range []string{"junk", endedCookie.Value} {
				req := httptest.NewRequest(http.MethodGet, "/cart", nil)
				req.Header.Set("Cookie", c.Name+"="+planted+"; "+c.Name+"="+c.Value)
				v := send(m, req)
				if !v.ok || v.session != sess {
					t.Errorf("planted %q first: SessionFrom = %+v, %v, want alice's session", planted, v.session, v.ok)
				}
				if isCleared(v.resp) {
					t.Errorf("planted %q first: the response clears the session cookie (Set-Cookie %q)", planted, v.resp.Header["Set-Cookie"])
				}
			}
		})
	}
}

// Only a few of a request's session cookies are looked up, the site's own
// among them; if more were sent, none is cleared, as one not looked at may
// be live.
func TestSessionManager_SessionCookiesAreLookedUpAFewAtMost(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			ms, clock := newStore(t)
			s := &countingStore{Store: ms}
			m := newManager(t, s, mode.opts(clock))
			var ended []string
			for _, user := range []string{"u1", "u2", "u3"} {
				sess, c := login(t, m, user)
				if err := s.Logout(ctx, sess.Token); err != nil {
					t.Fatalf("Logout = %v", err)
				}
				ended = append(ended, c.Name+"="+c.Value)
			}
			_, c := login(t, m, "alice")
			live := c.Name + "=" + c.Value
			for _, tc := range []struct {
				cookies       []string
				want, cleared bool
				lookups       int64
			}{
				{ended[:2], false, true, 2},
				{append(slices.Clone(ended[:2]), c.Name+"=x", live), true, false, 3},
				{append(slices.Clone(ended[:1]), ended[0], ended[1], live), true, false, 3},
				// Past three, the first two and the last, the site's own:
				// a browser sends the cookie with the shortest path last.
				{append(slices.Clone(ended), live), true, false, 3},
				{[]string{ended[0], ended[1], live, ended[2]}, false, false, 3},
				// Of many cookies, a few are examined, and the last.
				{append(slices.Repeat([]string{c.Name + "=x"}, 40), live), true, false, 1},
			} {
				s.refreshes.Store(0)
				req := httptest.NewRequest(http.MethodGet, "/", nil)
				req.Header.Set("Cookie", strings.Join(tc.cookies, "; "))
				v := send(m, req)
				if v.ok != tc.want || isCleared(v.resp) != tc.cleared || s.refreshes.Load() != tc.lookups {
					t.Errorf("%d cookies: session %v, cleared %v, %d lookups; want %v, %v, %d",
						len(tc.cookies), v.ok, isCleared(v.resp), s.refreshes.Load(), tc.want, tc.cleared, tc.lookups)
				}
			}
		})
	}
}

// Past the lookup limit, the site's own cookie, sent last, is still looked
// up: a handler's Ensure (an add to cart) finds its session rather than
// starting a guest session whose cookie would replace it.
func TestSessionManager_EnsureBehindPlantedCookiesFindsTheSession(t *testing.T) {
	ctx := context.Background()
	s, clock := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{Clock: clock})
	var cookies []string
	for _, user := range []string{"u1", "u2", "u3", "u4"} {
		sess, c := login(t, m, user)
		if err := s.Logout(ctx, sess.Token); err != nil {
			t.Fatal(err)
		}
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	alice, c := login(t, m, "alice")
	cookies = append(cookies, c.Name+"="+c.Value)
	var got retailhttp.Session
	var err error
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, err = m.Ensure(r.Context(), w)
	}))
	req := httptest.NewRequest(http.MethodPost, "/cart", nil)
	req.Header.Set("Cookie", strings.Join(cookies, "; "))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got != alice || err != nil || len(rec.Result().Cookies()) != 0 {
		t.Errorf("Ensure behind four ended cookies = %+v, %v, setting %v; want alice's session and no cookie", got, err, rec.Result().Cookies())
	}
}

func TestSessionManager_MalformedCookieIsNotLookedUp(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			ms, clock := newStore(t)
			s := &countingStore{Store: ms}
			m := newManager(t, s, mode.opts(clock))
			for _, value := range []string{"x", strings.Repeat("A", retailhttp.TokenLen), strings.Repeat("0", retailhttp.TokenLen+1), "../../etc", strings.Repeat("0", retailhttp.TokenLen) + ".AAAA"} {
				v := get(m, "/", &http.Cookie{Name: retailhttp.DefaultSessionCookie, Value: value})
				if v.ok || !isCleared(v.resp) {
					t.Errorf("cookie %q: session %v, cleared %v, want no session, cleared", value, v.ok, isCleared(v.resp))
				}
			}
			if got := s.refreshes.Load() + s.checks.Load(); got != 0 {
				t.Errorf("Store lookups = %d, want 0", got)
			}
		})
	}
}

func TestSessionManager_StoreFailureGoesToTheErrorHandler(t *testing.T) {
	s, _ := newStore(t)
	var handled error
	m := newManager(t, s, retailhttp.SessionOptions{ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
		handled = err
		w.WriteHeader(http.StatusServiceUnavailable)
	}})
	_, c := login(t, m, "alice")
	s.Close()
	v := get(m, "/", c)
	if !errors.Is(handled, retail.ErrClosed) || v.resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("request with a closed store: ErrorHandler got %v, status %d, want %v, %d", handled, v.resp.StatusCode, retail.ErrClosed, http.StatusServiceUnavailable)
	}
	if _, ok := handled.(*retail.OpError); !ok {
		t.Errorf("ErrorHandler got %T %q, want the Store's *retail.OpError as the Store returned it", handled, handled)
	}

	quiet := newManager(t, s, retailhttp.SessionOptions{Logger: (&logRecorder{}).Logger()})
	if v := get(quiet, "/", c); v.resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("default ErrorHandler status = %d, want %d", v.resp.StatusCode, http.StatusInternalServerError)
	}
}

func TestSessionManager_FailedAnonymousViewIsLoggedAndServed(t *testing.T) {
	s, _ := newStore(t)
	logs := &logRecorder{}
	m := newManager(t, s, retailhttp.SessionOptions{Logger: logs.Logger()})
	s.Close()
	served := false
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served = true }))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/?item=itemX", nil))
	if !served || !strings.Contains(logs.String(), "counting a view failed") {
		t.Errorf("anonymous view with a closed store: served %v, log %q, want served and the failure logged", served, logs.String())
	}
}

func TestNewSessionManager_RejectsInvalidOptions(t *testing.T) {
	s, _ := newStore(t)
	for _, tc := range []struct {
		opts retailhttp.SessionOptions
		arg  string // the InputError's Arg
	}{
		{retailhttp.SessionOptions{CookieName: "bad name"}, "CookieName"},
		{retailhttp.SessionOptions{Path: "/a;b"}, "Path"},
		{retailhttp.SessionOptions{Domain: "bad domain"}, "Domain"},
		{retailhttp.SessionOptions{MaxAge: time.Millisecond}, "MaxAge"},
		{retailhttp.SessionOptions{MaxAge: -time.Hour}, "MaxAge"},
		{retailhttp.SessionOptions{GuestLifetime: -time.Hour}, "GuestLifetime"},
		{retailhttp.SessionOptions{SigningKeys: [][]byte{[]byte("short")}}, "SigningKeys[0]"},
		{retailhttp.SessionOptions{CookieName: "__Host-s"}, "CookieName"},
		{retailhttp.SessionOptions{CookieName: "__Host-s", Secure: true, Path: "/shop"}, "CookieName"},
		{retailhttp.SessionOptions{CookieName: "__Host-s", Secure: true, Domain: "shop.test"}, "CookieName"},
		{retailhttp.SessionOptions{CookieName: "__Secure-s"}, "CookieName"},
		{retailhttp.SessionOptions{CookieName: "__host-s"}, "CookieName"}, // browsers match the prefix in any case
		{retailhttp.SessionOptions{CookieName: "__SECURE-s"}, "CookieName"},
	} {
		_, err := retailhttp.NewSessionManager(s, tc.opts)
		var ie *retail.InputError
		if !errors.Is(err, retail.ErrInvalid) || !errors.As(err, &ie) || ie.Arg != tc.arg {
			t.Errorf("NewSessionManager(%+v) = %v, want an *retail.InputError on %s", tc.opts, err, tc.arg)
		}
	}
}

// A cookie name with a prefix browsers check is taken with the attributes
// they require, and its cookie works.
func TestSessionManager_PrefixedCookieNames(t *testing.T) {
	for _, opts := range []retailhttp.SessionOptions{
		{CookieName: "__Host-s", Secure: true},
		{CookieName: "__Secure-s", Secure: true, Path: "/shop", Domain: "shop.test"},
	} {
		s, _ := newStore(t)
		m := newManager(t, s, opts)
		rec := httptest.NewRecorder()
		sess, err := m.Login(requestContext(t, m), rec, "alice")
		cookies := rec.Result().Cookies()
		if err != nil || len(cookies) != 1 || cookies[0].Name != opts.CookieName || !cookies[0].Secure {
			t.Fatalf("%s: Login = %v, set %v, want a Secure cookie of that name", opts.CookieName, err, cookies)
		}
		c := cookies[0]
		if v := get(m, "https://shop.test/shop", c); !v.ok || v.session != sess {
			t.Errorf("%s: SessionFrom = %+v, %v, want alice's session", opts.CookieName, v.session, v.ok)
		}
	}
}

func TestNewSessionManager_RejectsANilStore(t *testing.T) {
	m, err := retailhttp.NewSessionManager(nil, retailhttp.SessionOptions{})
	if m != nil || !errors.Is(err, retail.ErrInvalid) {
		t.Errorf("NewSessionManager(nil) = %v, %v, want nil, an error matching %v", m, err, retail.ErrInvalid)
	}
}

func TestSessionManager_ReturnsStoreErrorsAsTheStoreReturnedThem(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	sess, _ := login(t, m, "alice")
	noSession := requestContext(t, m)
	s.Close()

	withSession := func() context.Context { return retailhttp.WithSession(ctx, sess) }
	recs := map[string]*httptest.ResponseRecorder{}
	rec := func(call string) *httptest.ResponseRecorder {
		recs[call] = httptest.NewRecorder()
		return recs[call]
	}
	_, loginErr := m.Login(noSession, rec("Login"), "bob")
	_, reloginErr := m.Login(withSession(), rec("Login with a session"), "bob")
	_, ensureErr := m.Ensure(noSession, rec("Ensure"))
	_, renewErr := m.Renew(withSession(), rec("Renew"))
	logoutErr := m.Logout(withSession(), httptest.NewRecorder())
	_, everywhereErr := m.LogoutEverywhere(withSession(), httptest.NewRecorder())
	for _, tc := range []struct {
		call string
		err  error
	}{
		{"Login", loginErr}, {"Login with a session", reloginErr}, {"Ensure", ensureErr},
		{"Renew", renewErr}, {"Logout", logoutErr}, {"LogoutEverywhere", everywhereErr},
	} {
		// Wrapped once, by the Store: the error is the Store's own.
		if _, ok := tc.err.(*retail.OpError); !ok || !errors.Is(tc.err, retail.ErrClosed) {
			t.Errorf("%s with a closed store = %T %v, want the Store's *retail.OpError matching %v", tc.call, tc.err, tc.err, retail.ErrClosed)
		}
	}
	for call, rec := range recs {
		if got := rec.Result().Header["Set-Cookie"]; len(got) != 0 {
			t.Errorf("failed %s Set-Cookie = %q, want none", call, got)
		}
	}
}

func TestSessionManager_SignedCookiesAreCheckedWithTheStore(t *testing.T) {
	ctx := context.Background()
	ms, clock := newStore(t)
	s := &countingStore{Store: ms}
	m := newManager(t, s, retailhttp.SessionOptions{SigningKeys: [][]byte{key(1)}, Clock: clock})
	sess, c := login(t, m, "alice")
	if c.Value == sess.Token || !strings.Contains(c.Value, ".") || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
		t.Errorf("signed Login cookie = %+v, want a signed value, HttpOnly, SameSite=Lax", c)
	}
	if c.MaxAge != int(retail.DefaultLifetime/time.Second) {
		t.Errorf("signed Login cookie MaxAge = %d, want %d (retail.DefaultLifetime)", c.MaxAge, int(retail.DefaultLifetime/time.Second))
	}
	v := get(m, "/?item=itemX", c)
	if !v.ok || v.session != sess {
		t.Errorf("SessionFrom(signed cookie) = %+v, %v, want %+v, true", v.session, v.ok, sess)
	}
	if got := [2]int64{s.refreshes.Load(), s.checks.Load()}; got != [2]int64{1, 0} {
		t.Errorf("RefreshSession, CheckToken calls = %v, want [1 0]", got)
	}
	if recent, _ := s.RecentItems(ctx, sess.Token); !cmp.Equal(recent, []string{"itemX"}) {
		t.Errorf("RecentItems = %v, want [itemX]", recent)
	}
}

func TestSessionManager_SignedCookieTamperedOrExpiredIsNoSession(t *testing.T) {
	ctx := context.Background()
	ms, clock := newStore(t)
	s := &countingStore{Store: ms}
	m := newManager(t, s, retailhttp.SessionOptions{SigningKeys: [][]byte{key(1)}, Clock: clock, MaxAge: time.Hour})
	sess, c := login(t, m, "alice")

	forged := *c
	forged.Value = c.Value[:12] + flip(c.Value[12]) + c.Value[13:]
	if v := get(m, "/", &forged); v.ok || !isCleared(v.resp) {
		t.Errorf("tampered cookie: session %v, cleared %v, want no session, cleared", v.ok, isCleared(v.resp))
	}
	other := newManager(t, s, retailhttp.SessionOptions{SigningKeys: [][]byte{key(9)}, Clock: clock})
	_, foreign := login(t, other, "mallory")
	if v := get(m, "/", foreign); v.ok {
		t.Errorf("cookie signed with an unknown key: session %+v, want none", v.session)
	}
	if got := s.refreshes.Load(); got != 0 {
		t.Errorf("RefreshSession calls for tampered and foreign cookies = %d, want 0", got)
	}

	// Keep the Store's session alive: the cookie's own expiry ends it.
	for range 2 {
		clock.Advance(25 * time.Minute)
		if v := get(m, "/", c); !v.ok {
			t.Fatalf("cookie after %v: no session, want alice", clock.Now().Sub(epoch))
		}
	}
	clock.Advance(10*time.Minute - time.Millisecond)
	if v := get(m, "/", c); !v.ok {
		t.Errorf("cookie 1 ms before expiry: no session, want alice")
	}
	clock.Advance(time.Millisecond)
	if v := get(m, "/", c); v.ok || !isCleared(v.resp) {
		t.Errorf("expired cookie: session %v, cleared %v, want no session, cleared", v.ok, isCleared(v.resp))
	}
	if _, ok, _ := s.CheckToken(ctx, sess.Token); !ok {
		t.Errorf("CheckToken(token of the expired cookie) = false, want the Store's session still live (the test needs it)")
	}
}

func TestSessionManager_SignedCookiesSurviveKeyRotation(t *testing.T) {
	s, clock := newStore(t)
	before := newManager(t, s, retailhttp.SessionOptions{SigningKeys: [][]byte{key(1)}, Clock: clock})
	after := newManager(t, s, retailhttp.SessionOptions{SigningKeys: [][]byte{key(2), key(1)}, Clock: clock})
	sess, oldCookie := login(t, before, "alice")
	if v := get(after, "/", oldCookie); !v.ok || v.session != sess {
		t.Errorf("rotated manager, old cookie: %+v, %v, want %+v, true", v.session, v.ok, sess)
	}
	_, newCookie := login(t, after, "bob")
	if v := get(before, "/", newCookie); v.ok {
		t.Errorf("old-key manager accepted a cookie signed after rotation: want the new key to sign")
	}
}

// flip returns a base64url digit other than c.
func flip(c byte) string {
	if c == 'B' {
		return "C"
	}
	return "B"
}

func TestItemFromQuery(t *testing.T) {
	for _, tc := range []struct {
		method, target, want string
	}{
		{http.MethodGet, "/?item=itemX", "itemX"},
		{http.MethodHead, "/shop?item=itemX&a=1", "itemX"},
		{http.MethodGet, "/?item=a&item=b", ""},
		{http.MethodGet, "/?items=itemX", ""},
		{http.MethodPost, "/?item=itemX", ""},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		if got := retailhttp.ItemFromQuery(r); got != tc.want {
			t.Errorf("ItemFromQuery(%s %s) = %q, want %q", tc.method, tc.target, got, tc.want)
		}
	}
}

func ExampleSessionManager() {
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
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		// A real shop checks a password first.
		if _, err := sessions.Login(r.Context(), w, r.FormValue("user")); err != nil {
			http.Error(w, "cannot log in", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		if s, ok := retailhttp.SessionFrom(r.Context()); ok && !s.Guest() {
			fmt.Fprintf(w, "hello, %s", s.User)
			return
		}
		fmt.Fprint(w, "please log in")
	})
	handler := sessions.Handler(mux)

	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	fmt.Println(rec.Body)

	rec = httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/login?user=alice", nil))
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.AddCookie(rec.Result().Cookies()[0]) // as the browser would
	rec = httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	fmt.Println(rec.Body)

	// Output:
	// please log in
	// hello, alice
}

func TestSessionManager_SignedCookieWithForeignDataIsNoSession(t *testing.T) {
	ms, clock := newStore(t)
	s := &countingStore{Store: ms}
	m := newManager(t, s, retailhttp.SessionOptions{SigningKeys: [][]byte{key(1)}, Clock: clock})
	// Signed with the manager's key for its cookie, but not a session.
	signer := newSigner(t, key(1))
	for _, data := range []string{"", "alice", strings.Repeat("A", retailhttp.TokenLen) + "alice", strings.Repeat("0", retailhttp.TokenLen) + "\xff"} {
		value := sign(t, signer, retailhttp.DefaultSessionCookie, data, epoch.Add(time.Hour))
		v := get(m, "/", &http.Cookie{Name: retailhttp.DefaultSessionCookie, Value: value})
		if v.ok || !isCleared(v.resp) {
			t.Errorf("signed cookie of %q: session %v, cleared %v, want no session, cleared", data, v.ok, isCleared(v.resp))
		}
	}
	if got := s.refreshes.Load(); got != 0 {
		t.Errorf("RefreshSession calls = %d, want 0", got)
	}
}

// takenStore answers every StartSession and StartSessionFor as if its
// token were taken.
type takenStore struct{ retail.Store }

func (takenStore) StartSession(context.Context, string, string) (bool, error) { return false, nil }

func (takenStore) StartSessionFor(context.Context, string, string, retail.SessionOptions) (bool, error) {
	return false, nil
}

func TestSessionManager_NeverUsesATakenToken(t *testing.T) {
	ms, _ := newStore(t)
	m := newManager(t, takenStore{ms}, retailhttp.SessionOptions{})
	recs := []*httptest.ResponseRecorder{httptest.NewRecorder(), httptest.NewRecorder()}
	_, ensureErr := m.Ensure(requestContext(t, m), recs[0])
	_, loginErr := m.Login(requestContext(t, m), recs[1], "alice")
	if ensureErr == nil || loginErr == nil {
		t.Errorf("Ensure, Login with every token taken = %v, %v, want errors", ensureErr, loginErr)
	}
	for _, rec := range recs {
		if got := rec.Result().Header["Set-Cookie"]; len(got) != 0 {
			t.Errorf("Set-Cookie with every token taken = %q, want none", got)
		}
	}
}
