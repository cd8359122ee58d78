package retailhttp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
	"github.com/retailkit/retail/retailhttp"
)

// countingSessions counts the lookups and writes the middleware makes.
type countingSessions struct {
	*memory.Store
	checks, updates atomic.Int64
}

func (s *countingSessions) CheckToken(ctx context.Context, token string) (string, bool, error) {
	s.checks.Add(1)
	return s.Store.CheckToken(ctx, token)
}

func (s *countingSessions) UpdateToken(ctx context.Context, token, user, item string) error {
	s.updates.Add(1)
	return s.Store.UpdateToken(ctx, token, user, item)
}

func newManager(t *testing.T, s retail.Sessions, opts retailhttp.SessionOptions) *retailhttp.SessionManager {
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
	var v visit
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v.session, v.ok = retailhttp.SessionFrom(r.Context())
	}))
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	v.resp = rec.Result()
	return v
}

// login logs user in through m, as a handler would, and returns the
// session and the cookie it set.
func login(t *testing.T, m *retailhttp.SessionManager, ctx context.Context, user string) (retailhttp.Session, *http.Cookie) {
	t.Helper()
	rec := httptest.NewRecorder()
	s, err := m.Login(ctx, rec, user)
	if err != nil {
		t.Fatalf("Login(%q) = %v", user, err)
	}
	return s, sessionCookie(t, rec.Result())
}

func sessionCookie(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == retailhttp.DefaultSessionCookie {
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

func TestSessionManager_AnonymousVisitorHasNoSession(t *testing.T) {
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	v := get(m, "/?item=itemX")
	if v.ok {
		t.Errorf("SessionFrom(anonymous request) = %+v, true, want no session", v.session)
	}
	if got := v.resp.Header["Set-Cookie"]; len(got) != 0 {
		t.Errorf("anonymous response Set-Cookie = %q, want none", got)
	}
	if n, _ := s.SessionCount(context.Background()); n != 0 {
		t.Errorf("SessionCount after an anonymous visit = %d, want 0", n)
	}
	if _, ranked, _ := s.ItemRank(context.Background(), "itemX"); ranked {
		t.Errorf("ItemRank(itemX) after an anonymous view: ranked, want no view counted")
	}
}

func TestSessionManager_LoginSetsATokenCookie(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	sess, c := login(t, m, ctx, "alice")

	if len(sess.Token) != retailhttp.TokenLen || strings.Trim(sess.Token, "0123456789abcdef") != "" {
		t.Errorf("Login token = %q, want %d lowercase hex digits", sess.Token, retailhttp.TokenLen)
	}
	want := http.Cookie{
		Name: retailhttp.DefaultSessionCookie, Value: sess.Token, Path: "/",
		MaxAge: int(retailhttp.DefaultSessionMaxAge / time.Second), HttpOnly: true, SameSite: http.SameSiteLaxMode,
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
	_, c := login(t, m, context.Background(), "alice")
	if !c.Secure || c.MaxAge != 3600 {
		t.Errorf("Login cookie Secure, MaxAge = %v, %d, want true, 3600", c.Secure, c.MaxAge)
	}
}

func TestSessionManager_LoginIssuesAFreshTokenAndEndsTheOldSession(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	first, firstCookie := login(t, m, ctx, "alice")
	if err := s.AddToCart(ctx, first.Token, "itemX", 1); err != nil {
		t.Fatalf("AddToCart = %v", err)
	}

	// Log in again from a request that carries the first session.
	v := get(m, "/", firstCookie)
	second, secondCookie := login(t, m, retailhttp.WithSession(ctx, v.session), "bob")
	if second.Token == first.Token || secondCookie.Value == firstCookie.Value {
		t.Fatalf("Login reused token %q, want a fresh one", first.Token)
	}
	if _, ok, _ := s.CheckToken(ctx, first.Token); ok {
		t.Errorf("CheckToken(replaced token) ok = true, want the old session ended")
	}
	if cart, err := s.Cart(ctx, first.Token); len(cart) != 0 || err != nil {
		t.Errorf("Cart(replaced token) = %v, %v, want empty, nil: the old cart must end with its session", cart, err)
	}
	if v := get(m, "/", secondCookie); !v.ok || v.session != second {
		t.Errorf("session after the second login = %+v, %v, want %+v, true", v.session, v.ok, second)
	}
}

func TestSessionManager_TokensAreUnique(t *testing.T) {
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	seen := make(map[string]bool)
	for range 1000 {
		sess, _ := login(t, m, context.Background(), "alice")
		if seen[sess.Token] {
			t.Fatalf("Login issued token %q twice", sess.Token)
		}
		seen[sess.Token] = true
	}
}

func TestSessionManager_PutsTheSessionInTheContextAndRecordsViews(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	sess, c := login(t, m, ctx, "alice")

	for _, target := range []string{"/?item=itemA", "/cart", "/?item=itemB", "/?item=itemA&item=itemC"} {
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
}

func TestSessionManager_ItemOptionChoosesTheViewedItem(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{Item: func(r *http.Request) string {
		item, _ := strings.CutPrefix(r.URL.Path, "/items/")
		return item
	}})
	sess, c := login(t, m, ctx, "alice")
	get(m, "/items/itemP", c)
	get(m, "/items/"+strings.Repeat("x", retail.MaxIDLen+1), c) // breaks the input rules: no item
	recent, _ := s.RecentItems(ctx, sess.Token)
	if diff := cmp.Diff([]string{"itemP"}, recent); diff != "" {
		t.Errorf("RecentItems mismatch (-want +got):\n%s", diff)
	}
}

func TestSessionManager_UnknownTokenIsNoSessionAndClearsTheCookie(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	sess, c := login(t, m, ctx, "alice")
	if err := s.Logout(ctx, sess.Token); err != nil { // e.g. cleaned
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
}

func TestSessionManager_MalformedTokenIsNotLookedUp(t *testing.T) {
	ms, _ := newStore(t)
	s := &countingSessions{Store: ms}
	m := newManager(t, s, retailhttp.SessionOptions{})
	for _, value := range []string{"x", strings.Repeat("A", retailhttp.TokenLen), strings.Repeat("0", retailhttp.TokenLen+1), "../../etc"} {
		v := get(m, "/", &http.Cookie{Name: retailhttp.DefaultSessionCookie, Value: value})
		if v.ok || !isCleared(v.resp) {
			t.Errorf("cookie %q: session %v, cleared %v, want no session, cleared", value, v.ok, isCleared(v.resp))
		}
	}
	if got := s.checks.Load(); got != 0 {
		t.Errorf("CheckToken calls = %d, want 0", got)
	}
}

func TestSessionManager_LogoutClearsTheCookieAndTheStore(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	sess, c := login(t, m, ctx, "alice")
	if err := s.AddToCart(ctx, sess.Token, "itemX", 2); err != nil {
		t.Fatalf("AddToCart = %v", err)
	}
	v := get(m, "/?item=itemX", c)

	rec := httptest.NewRecorder()
	if err := m.Logout(retailhttp.WithSession(ctx, v.session), rec); err != nil {
		t.Fatalf("Logout = %v", err)
	}
	if !isCleared(rec.Result()) {
		t.Errorf("Logout response does not clear the cookie; Set-Cookie: %q", rec.Result().Header["Set-Cookie"])
	}
	if _, ok, _ := s.CheckToken(ctx, sess.Token); ok {
		t.Errorf("CheckToken after Logout ok = true, want false")
	}
	if cart, _ := s.Cart(ctx, sess.Token); len(cart) != 0 {
		t.Errorf("Cart after Logout = %v, want empty", cart)
	}
	if v := get(m, "/", c); v.ok {
		t.Errorf("session of the old cookie after Logout = %+v, want none", v.session)
	}
}

func TestSessionManager_LogoutWithoutSessionClearsTheCookie(t *testing.T) {
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	rec := httptest.NewRecorder()
	if err := m.Logout(context.Background(), rec); err != nil {
		t.Errorf("Logout(no session) = %v, want nil", err)
	}
	if !isCleared(rec.Result()) {
		t.Errorf("Logout(no session) does not clear the cookie")
	}
}

func TestSessionManager_LoginRejectsInvalidUsers(t *testing.T) {
	s, _ := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{})
	for _, user := range []string{"", "\xff", strings.Repeat("u", retail.MaxUserLen+1)} {
		rec := httptest.NewRecorder()
		if _, err := m.Login(context.Background(), rec, user); !errors.Is(err, retail.ErrInvalid) {
			t.Errorf("Login(%.10q) = %v, want %v", user, err, retail.ErrInvalid)
		}
		if got := rec.Result().Header["Set-Cookie"]; len(got) != 0 {
			t.Errorf("Login(%.10q) Set-Cookie = %q, want none", user, got)
		}
	}
}

func TestSessionManager_StoreFailureGoesToTheErrorHandler(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	var handled error
	m := newManager(t, s, retailhttp.SessionOptions{ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
		handled = err
		w.WriteHeader(http.StatusServiceUnavailable)
	}})
	_, c := login(t, m, ctx, "alice")
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
		{retailhttp.SessionOptions{SigningKeys: [][]byte{[]byte("short")}}, "SigningKeys[0]"},
	} {
		_, err := retailhttp.NewSessionManager(s, tc.opts)
		var ie *retail.InputError
		if !errors.Is(err, retail.ErrInvalid) || !errors.As(err, &ie) || ie.Arg != tc.arg {
			t.Errorf("NewSessionManager(%+v) = %v, want an *retail.InputError on %s", tc.opts, err, tc.arg)
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
	sess, _ := login(t, m, ctx, "alice")
	s.Close()

	rec := httptest.NewRecorder()
	_, loginErr := m.Login(ctx, rec, "bob")
	logoutErr := m.Logout(retailhttp.WithSession(ctx, sess), httptest.NewRecorder())
	for _, tc := range []struct {
		call string
		err  error
	}{{"Login", loginErr}, {"Logout", logoutErr}} {
		// Wrapped once, by the Store: the error is the Store's own.
		if _, ok := tc.err.(*retail.OpError); !ok || !errors.Is(tc.err, retail.ErrClosed) {
			t.Errorf("%s with a closed store = %T %v, want the Store's *retail.OpError matching %v", tc.call, tc.err, tc.err, retail.ErrClosed)
		}
	}
	if got := rec.Result().Header["Set-Cookie"]; len(got) != 0 {
		t.Errorf("failed Login Set-Cookie = %q, want none", got)
	}
}

func TestSessionManager_SignedCookiesNeedNoLookup(t *testing.T) {
	ctx := context.Background()
	ms, clock := newStore(t)
	s := &countingSessions{Store: ms}
	m := newManager(t, s, retailhttp.SessionOptions{SigningKeys: [][]byte{key(1)}, Clock: clock})
	sess, c := login(t, m, ctx, "alice")
	if c.Value == sess.Token || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
		t.Errorf("signed Login cookie = %+v, want a signed value, HttpOnly, SameSite=Lax", c)
	}
	v := get(m, "/?item=itemX", c)
	if !v.ok || v.session != sess {
		t.Errorf("SessionFrom(signed cookie) = %+v, %v, want %+v, true", v.session, v.ok, sess)
	}
	if got := s.checks.Load(); got != 0 {
		t.Errorf("CheckToken calls = %d, want 0 in signed-cookie mode", got)
	}
	if recent, _ := s.RecentItems(ctx, sess.Token); !cmp.Equal(recent, []string{"itemX"}) {
		t.Errorf("RecentItems = %v, want [itemX]: UpdateToken must still run", recent)
	}
}

func TestSessionManager_SignedCookieTamperedOrExpiredIsNoSession(t *testing.T) {
	ctx := context.Background()
	s, clock := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{SigningKeys: [][]byte{key(1)}, Clock: clock, MaxAge: time.Hour})
	_, c := login(t, m, ctx, "alice")

	forged := *c
	forged.Value = c.Value[:12] + flip(c.Value[12]) + c.Value[13:]
	if v := get(m, "/", &forged); v.ok || !isCleared(v.resp) {
		t.Errorf("tampered cookie: session %v, cleared %v, want no session, cleared", v.ok, isCleared(v.resp))
	}
	other := newManager(t, s, retailhttp.SessionOptions{SigningKeys: [][]byte{key(9)}, Clock: clock})
	_, foreign := login(t, other, ctx, "mallory")
	if v := get(m, "/", foreign); v.ok {
		t.Errorf("cookie signed with an unknown key: session %+v, want none", v.session)
	}

	clock.Advance(time.Hour - time.Millisecond)
	if v := get(m, "/", c); !v.ok {
		t.Errorf("cookie 1 ms before expiry: no session, want alice")
	}
	clock.Advance(time.Millisecond)
	if v := get(m, "/", c); v.ok || !isCleared(v.resp) {
		t.Errorf("expired cookie: session %v, cleared %v, want no session, cleared", v.ok, isCleared(v.resp))
	}
}

func TestSessionManager_SignedCookiesSurviveKeyRotation(t *testing.T) {
	ctx := context.Background()
	s, clock := newStore(t)
	before := newManager(t, s, retailhttp.SessionOptions{SigningKeys: [][]byte{key(1)}, Clock: clock})
	after := newManager(t, s, retailhttp.SessionOptions{SigningKeys: [][]byte{key(2), key(1)}, Clock: clock})
	sess, oldCookie := login(t, before, ctx, "alice")
	if v := get(after, "/", oldCookie); !v.ok || v.session != sess {
		t.Errorf("rotated manager, old cookie: %+v, %v, want %+v, true", v.session, v.ok, sess)
	}
	_, newCookie := login(t, after, ctx, "bob")
	if v := get(before, "/", newCookie); v.ok {
		t.Errorf("old-key manager accepted a cookie signed after rotation: want the new key to sign")
	}
}

func TestSessionManager_SignedLogoutEndsTheStoreSession(t *testing.T) {
	ctx := context.Background()
	s, clock := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{SigningKeys: [][]byte{key(1)}, Clock: clock})
	sess, c := login(t, m, ctx, "alice")
	if err := s.AddToCart(ctx, sess.Token, "itemX", 1); err != nil {
		t.Fatalf("AddToCart = %v", err)
	}
	v := get(m, "/", c)
	rec := httptest.NewRecorder()
	if err := m.Logout(retailhttp.WithSession(ctx, v.session), rec); err != nil {
		t.Fatalf("Logout = %v", err)
	}
	if !isCleared(rec.Result()) {
		t.Errorf("signed Logout does not clear the cookie")
	}
	if cart, _ := s.Cart(ctx, sess.Token); len(cart) != 0 {
		t.Errorf("Cart after signed Logout = %v, want empty", cart)
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
		if s, ok := retailhttp.SessionFrom(r.Context()); ok {
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
