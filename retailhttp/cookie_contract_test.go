package retailhttp_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/retailhttp"
)

// A signed value is a fixed string: no other string, however it encodes
// the same bytes, may verify (the format has no room for line breaks).
func TestCookieSigner_VerifyRejectsLineBreaksInAValue(t *testing.T) {
	s := newSigner(t, key(1))
	v := sign(t, s, "session", "alice", epoch.Add(time.Hour))
	payload, mac, _ := strings.Cut(v, ".")
	for _, tampered := range []string{
		payload[:4] + "\n" + payload[4:] + "." + mac,
		payload + "." + mac[:10] + "\r\n" + mac[10:],
		payload + "\n." + mac,
		payload + "." + mac + "\n",
		"\r" + v,
	} {
		if data, ok := s.Verify("session", tampered, epoch); ok {
			t.Errorf("Verify(%q) = %q, true, want false: only %q verifies", tampered, data, v)
		}
	}
}

// A persistent login cookie stays persistent: a Lifetime under a second
// must not drop its Max-Age and make it a browser-session cookie.
func TestLoginWith_SubSecondLifetimeKeepsAPersistentCookie(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			s, clock := newStore(t)
			m := newManager(t, s, mode.opts(clock))
			ctx := requestContext(t, m)
			rec := httptest.NewRecorder()
			if _, err := m.LoginWith(ctx, rec, "alice", retailhttp.LoginOptions{Lifetime: 1500 * time.Millisecond / 3}); err != nil {
				t.Fatalf("LoginWith(Lifetime 500ms) = %v", err)
			}
			var got *http.Cookie
			for _, c := range rec.Result().Cookies() {
				if c.Name == retailhttp.DefaultSessionCookie {
					got = c
				}
			}
			if got == nil {
				t.Fatalf("no session cookie; Set-Cookie %q", rec.Result().Header["Set-Cookie"])
			}
			if got.MaxAge <= 0 && got.Expires.IsZero() {
				t.Errorf("persistent login cookie %q has neither Max-Age nor Expires: a browser-session cookie", rec.Result().Header["Set-Cookie"])
			}
		})
	}
}

// --- What held (these pass on the current code). ---

// The Store, not the signed cookie, names the user; and a validly signed
// cookie stops working at Logout, LogoutEverywhere and Renew.
func TestSignedCookie_UserAndLivenessComeFromTheStore(t *testing.T) {
	s, clock := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{SigningKeys: [][]byte{key(1)}, Clock: clock})
	signer := newSigner(t, key(1))
	sess, c := login(t, m, "alice")

	// A cookie signed with the key, naming alice's token but mallory.
	forged, err := signer.Sign(retailhttp.DefaultSessionCookie, []byte(sess.Token+"mallory"), epoch.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	fc := &http.Cookie{Name: retailhttp.DefaultSessionCookie, Value: forged}
	if v := get(m, "/", fc); !v.ok || v.session.User != "alice" {
		t.Errorf("cookie naming mallory on alice's token: %+v %v, want alice", v.session, v.ok)
	}
	// A signed cookie for a token the Store does not know is no session.
	unknown, _ := signer.Sign(retailhttp.DefaultSessionCookie, []byte(strings.Repeat("a", 32)+"alice"), epoch.Add(time.Hour))
	wantNoSession(t, m, "signed cookie of an unknown token", &http.Cookie{Name: retailhttp.DefaultSessionCookie, Value: unknown})

	// Renew: the old signed cookie dies.
	rctx := requestContext(t, m, c)
	rec := httptest.NewRecorder()
	if _, err := m.Renew(rctx, rec); err != nil {
		t.Fatal(err)
	}
	wantNoSession(t, m, "signed cookie after Renew", c)
	c2 := sessionCookie(t, rec.Result())

	// Logout: the renewed signed cookie dies too.
	lctx := requestContext(t, m, c2)
	if err := m.Logout(lctx, httptest.NewRecorder()); err != nil {
		t.Fatal(err)
	}
	wantNoSession(t, m, "signed cookie after Logout", c2)

	// LogoutEverywhere ends another device's signed cookie.
	_, d1 := login(t, m, "bob")
	_, d2 := login(t, m, "bob")
	if _, err := m.LogoutEverywhere(requestContext(t, m, d1), httptest.NewRecorder()); err != nil {
		t.Fatal(err)
	}
	wantNoSession(t, m, "other device after LogoutEverywhere", d2)
}

// A signed session cookie of one name is not a session under another name,
// even with the same keys and Store.
func TestSignedCookie_NameIsBound(t *testing.T) {
	s, clock := newStore(t)
	a := newManager(t, s, retailhttp.SessionOptions{SigningKeys: [][]byte{key(1)}, Clock: clock})
	b := newManager(t, s, retailhttp.SessionOptions{SigningKeys: [][]byte{key(1)}, Clock: clock, CookieName: "admin"})
	_, c := login(t, a, "alice")
	renamed := &http.Cookie{Name: "admin", Value: c.Value}
	if v := get(b, "/", renamed); v.ok {
		t.Errorf("cookie of retail_session replayed as admin: session %+v", v.session)
	}
}

// Cookie attributes: HttpOnly, SameSite=Lax, Secure, Path, Domain, Max-Age,
// and no Expires; the clearing cookie has the same Path and Domain.
func TestSessionManager_CookieAttributes(t *testing.T) {
	s, clock := newStore(t)
	m := newManager(t, s, retailhttp.SessionOptions{Clock: clock, SigningKeys: [][]byte{key(1)}, Secure: true, Path: "/shop", Domain: "example.com", MaxAge: time.Hour})
	ctx := requestContext(t, m)
	rec := httptest.NewRecorder()
	if _, err := m.Ensure(ctx, rec); err != nil {
		t.Fatal(err)
	}
	h := rec.Result().Header["Set-Cookie"]
	if len(h) != 1 {
		t.Fatalf("Set-Cookie = %q", h)
	}
	for _, want := range []string{"Path=/shop", "Domain=example.com", "Max-Age=3600", "HttpOnly", "Secure", "SameSite=Lax"} {
		if !strings.Contains(h[0], want) {
			t.Errorf("Set-Cookie %q lacks %s", h[0], want)
		}
	}
	if strings.Contains(h[0], "Expires") {
		t.Errorf("Set-Cookie %q has Expires", h[0])
	}
	rec = httptest.NewRecorder()
	if err := m.Logout(ctx, rec); err != nil {
		t.Fatal(err)
	}
	h = rec.Result().Header["Set-Cookie"]
	for _, want := range []string{"Path=/shop", "Domain=example.com", "Max-Age=0", "HttpOnly", "Secure", "SameSite=Lax"} {
		if len(h) != 1 || !strings.Contains(h[0], want) {
			t.Errorf("clearing Set-Cookie %q lacks %s", h, want)
		}
	}
}

// Invalid options all match retail.ErrInvalid.
func TestNewSessionManager_InvalidOptionsMatchErrInvalid(t *testing.T) {
	s, _ := newStore(t)
	for name, o := range map[string]retailhttp.SessionOptions{
		"name with space":  {CookieName: "a b"},
		"name with =":      {CookieName: "a=b"},
		"path with ;":      {Path: "/;x"},
		"path with ctl":    {Path: "/\n"},
		"domain bad":       {Domain: "exa mple.com"},
		"negative MaxAge":  {MaxAge: -time.Hour},
		"sub-second":       {MaxAge: time.Millisecond},
		"nil key":          {SigningKeys: [][]byte{nil}},
		"short second key": {SigningKeys: [][]byte{key(1), make([]byte, 31)}},
	} {
		if _, err := retailhttp.NewSessionManager(s, o); !errors.Is(err, retail.ErrInvalid) {
			t.Errorf("%s: NewSessionManager = %v, want ErrInvalid", name, err)
		}
	}
}

// Verify never panics and never accepts a value the signer did not make,
// for names and values of any bytes.
func FuzzCookieSigner_VerifyAcceptsOnlySignedValues(f *testing.F) {
	s, err := retailhttp.NewCookieSigner(key(1), key(2))
	if err != nil {
		f.Fatal(err)
	}
	valid, _ := s.Sign("session", []byte("alice"), epoch.Add(time.Hour))
	f.Add("session", valid)
	f.Add("", "AAAAAAAAAAA."+strings.Repeat("A", 43))
	f.Add("session", valid[:5]+"\n"+valid[5:])
	f.Fuzz(func(t *testing.T, name, v string) {
		data, ok := s.Verify(name, v, epoch)
		if ok && (name != "session" || v != valid) {
			t.Errorf("Verify(%q, %q) = %q, true", name, v, data)
		}
	})
}

// The session middleware never panics on a cookie value of any bytes, in
// either mode, and a malformed one is no session.
func FuzzSessionManager_HandlerCookie(f *testing.F) {
	f.Add("x", false)
	f.Add(strings.Repeat("a", 32), true)
	f.Fuzz(func(t *testing.T, value string, signed bool) {
		s, clock := newStore(t)
		o := retailhttp.SessionOptions{Clock: clock}
		if signed {
			o.SigningKeys = [][]byte{key(1)}
		}
		m := newManager(t, s, o)
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Cookie", retailhttp.DefaultSessionCookie+"="+value)
		if v := send(m, req); v.ok {
			t.Errorf("cookie %q: session %+v", value, v.session)
		}
	})
}

// A CookieSigner not made by NewCookieSigner has no key: it signs nothing
// and verifies nothing, and does not panic.
func TestCookieSigner_ZeroValueSignsAndVerifiesNothing(t *testing.T) {
	var zero retailhttp.CookieSigner
	if v, err := zero.Sign("c", []byte("data"), time.Now().Add(time.Hour)); !errors.Is(err, retail.ErrInvalid) {
		t.Errorf("zero CookieSigner.Sign = %q, %v, want an error matching ErrInvalid", v, err)
	}
	s, err := retailhttp.NewCookieSigner(key(1))
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Sign("c", []byte("data"), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if data, ok := zero.Verify("c", v, time.Now()); ok {
		t.Errorf("zero CookieSigner.Verify of a signed value = %q, true, want false", data)
	}
}
