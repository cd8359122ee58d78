package retailhttp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/internal/rules"
)

// The session middleware's settings, used where a [SessionOptions] field is
// zero.
const (
	DefaultSessionCookie = "retail_session"   // the cookie's name
	DefaultSessionPath   = "/"                // the cookie's path
	DefaultSessionMaxAge = 7 * 24 * time.Hour // how long the cookie lasts from login
)

// TokenLen is the length of the session tokens a [SessionManager] issues:
// 128 bits from crypto/rand, in lowercase hex.
const TokenLen = 32

// Session is a request's login session: the token that names it in the
// Store (its carts and recently viewed items are kept under the token) and
// the user it is logged in as.
type Session struct {
	Token string // TokenLen lowercase hex digits; a secret, like a password
	User  string // as given to Login
}

type sessionKey struct{}

// WithSession returns a copy of ctx that carries s, as
// [SessionManager.Handler] does for the requests it passes on. Tests of
// handlers can use it to fake a logged-in request.
func WithSession(ctx context.Context, s Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// SessionFrom returns the session that [SessionManager.Handler] (or
// [WithSession]) put in ctx. A visitor who has not logged in has none: ok
// is false.
func SessionFrom(ctx context.Context) (s Session, ok bool) {
	s, ok = ctx.Value(sessionKey{}).(Session)
	return s, ok
}

// SessionOptions configures a [SessionManager]. Zero fields take the
// defaults named on each.
type SessionOptions struct {
	// CookieName is the session cookie's name; DefaultSessionCookie if
	// empty.
	CookieName string

	// Path and Domain are the cookie's attributes; Path is
	// DefaultSessionPath if empty, and an empty Domain means the host
	// that set it.
	Path, Domain string

	// Secure marks the cookie Secure, so that browsers send it over HTTPS
	// only. Set it whenever the site is served over HTTPS; it is off by
	// default only so that a shop on http://127.0.0.1 works.
	Secure bool

	// MaxAge is how long the cookie lasts from login;
	// DefaultSessionMaxAge if zero; at least a second. In signed-cookie
	// mode it is also the expiry signed into the cookie. In token-cookie
	// mode the session itself lasts until Logout or until the Store's
	// cleaning removes it, whichever is first.
	MaxAge time.Duration

	// SigningKeys, if not empty, switch the manager to signed-cookie mode
	// (see [SessionManager]) with a [CookieSigner] over these keys: the
	// first signs, all verify.
	SigningKeys [][]byte

	// Item returns the item a request views, or "" if it views none; it
	// is passed to [retail.Sessions.UpdateToken]. ItemFromQuery if nil.
	// An item that breaks the input rules is treated as "".
	Item func(r *http.Request) string

	// Clock gives the time for signed cookies' expiry; retail.SystemClock
	// if nil.
	Clock retail.Clock

	// ErrorHandler answers a request whose session could not be looked up
	// because the Store failed, with the Store's error; if nil, the error
	// is logged and the request answered with 500 Internal Server Error.
	ErrorHandler func(w http.ResponseWriter, r *http.Request, err error)

	// Logger receives the errors the middleware survives; slog.Default()
	// if nil. Tokens are never logged in full: the Store's errors show at
	// most their first four bytes.
	Logger *slog.Logger
}

// SessionManager keeps login sessions in cookies over a [retail.Sessions]
// store: its Handler recognizes the session of each request, and Login and
// Logout start and end sessions.
//
// In token-cookie mode (the default) the cookie holds a random 128-bit
// token and nothing else; each request looks the user up with
// [retail.Sessions.CheckToken], so a Logout, or the Store's cleaning, ends
// the session at once everywhere.
//
// In signed-cookie mode (SessionOptions.SigningKeys set) the cookie holds
// the token and the user, signed with HMAC-SHA256 (see [CookieSigner]) with
// an expiry inside; requests are recognized without a lookup. A tampered
// or expired cookie is no session. The trade-off, as in the book's table:
// a signed cookie stays valid until it expires, so a copy of it taken
// before Logout still logs in (with a fresh, empty cart); keep MaxAge short
// where that matters, or use token cookies.
//
// In both modes the cookie is HttpOnly and SameSite=Lax, and each request
// with a session calls [retail.Sessions.UpdateToken] with the item it views
// (see SessionOptions.Item), which records the visit, the recently viewed
// items and the item's view count.
//
// Visitors who have not logged in have no session: the middleware sets no
// cookie for them, writes nothing to the Store and puts no [Session] in
// their requests, so their views are not counted. Carts need a session
// (see [retail.Carts.AddToCart]), so a shop asks visitors to log in before
// they buy. This keeps crawlers from filling the Store, and it keeps anonymous
// pages free of personal data, which is what lets the page cache share
// them (see [PageMiddlewareOptions].Skip).
//
// A SessionManager is safe for concurrent use.
type SessionManager struct {
	store  retail.Sessions
	opts   SessionOptions
	signer *CookieSigner // nil in token-cookie mode
}

// NewSessionManager returns a manager of sessions kept in s. It returns an
// error matching [retail.ErrInvalid] if s is nil or an option is out of
// range: a cookie name, path or domain that net/http would refuse, a MaxAge
// under a second, or a signing key shorter than [MinSigningKeyLen].
func NewSessionManager(s retail.Sessions, opts SessionOptions) (*SessionManager, error) {
	const op = "NewSessionManager"
	if s == nil {
		return nil, invalid(op, "store", "nil")
	}
	if opts.CookieName == "" {
		opts.CookieName = DefaultSessionCookie
	}
	if opts.Path == "" {
		opts.Path = DefaultSessionPath
	}
	if opts.MaxAge == 0 {
		opts.MaxAge = DefaultSessionMaxAge
	}
	if opts.Item == nil {
		opts.Item = ItemFromQuery
	}
	if opts.Clock == nil {
		opts.Clock = retail.SystemClock{}
	}
	for _, c := range []struct {
		arg    string
		cookie http.Cookie
	}{
		{"CookieName", http.Cookie{Name: opts.CookieName, Value: "x"}},
		{"Path", http.Cookie{Name: "x", Value: "x", Path: opts.Path}},
		{"Domain", http.Cookie{Name: "x", Value: "x", Domain: opts.Domain}},
	} {
		if err := c.cookie.Valid(); err != nil {
			return nil, invalid(op, c.arg, "refused by net/http ("+err.Error()+")")
		}
	}
	if opts.MaxAge < time.Second {
		return nil, invalid(op, "MaxAge", "shorter than a second")
	}
	m := &SessionManager{store: s, opts: opts}
	if len(opts.SigningKeys) > 0 {
		if err := checkSigningKeys(op, "SigningKeys", opts.SigningKeys); err != nil {
			return nil, err
		}
		signer, err := NewCookieSigner(opts.SigningKeys...)
		if err != nil {
			return nil, err // checked above
		}
		m.signer = signer
	}
	m.opts.SigningKeys = nil // the signer holds copies
	return m, nil
}

// Handler returns a handler that recognizes the session of each request,
// records the visit with [retail.Sessions.UpdateToken] and passes the
// request to next with the session in its context (see [SessionFrom]). A
// request without a valid session cookie is passed on without a session;
// if it carried a cookie that names no session (unknown, logged out,
// cleaned, tampered or expired), the response clears that cookie.
//
// If looking the token up fails, the request goes to the ErrorHandler
// option instead of next. If recording the visit fails, the error is
// logged and the request is served with its session: the visit and view
// are lost, not the page.
//
// A request that races with Logout of its own session may record its
// visit after the Logout and so bring the session back, empty; it is then
// cleaned like any idle session.
func (m *SessionManager) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		s, ok, stale, err := m.load(ctx, r)
		if err != nil {
			m.fail(w, r, err)
			return
		}
		if stale {
			http.SetCookie(w, m.clearCookie())
		}
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		item := m.opts.Item(r)
		if item != "" && rules.ID(item) != "" {
			item = ""
		}
		if err := m.store.UpdateToken(ctx, s.Token, s.User, item); err != nil {
			logError(ctx, m.opts.Logger, "retailhttp: recording a visit failed; serving the request anyway", err)
		}
		next.ServeHTTP(w, r.WithContext(WithSession(ctx, s)))
	})
}

// load returns the session named by r's cookie. stale reports a cookie
// that names no session.
func (m *SessionManager) load(ctx context.Context, r *http.Request) (s Session, ok, stale bool, err error) {
	c, err := r.Cookie(m.opts.CookieName)
	if err != nil {
		return Session{}, false, false, nil // no cookie
	}
	if m.signer != nil {
		data, ok := m.signer.Verify(m.opts.CookieName, c.Value, m.opts.Clock.Now())
		if !ok {
			return Session{}, false, true, nil
		}
		s, ok := decodeSignedSession(data)
		return s, ok, !ok, nil
	}
	if !isToken(c.Value) {
		// Not a token this manager issued: no need to ask the Store.
		return Session{}, false, true, nil
	}
	user, ok, err := m.store.CheckToken(ctx, c.Value)
	if err != nil {
		return Session{}, false, false, err
	}
	if !ok {
		return Session{}, false, true, nil
	}
	return Session{Token: c.Value, User: user}, true, false, nil
}

// Login starts a session for user: it issues a new token, records it in
// the Store and sets the session cookie on w. The token is always new,
// never the one the request came with, so a token planted in a visitor's
// browser before login never becomes a logged-in session (no session
// fixation). If ctx carries a session (see [SessionFrom]), that session is
// ended, with its cart and recently viewed items.
//
// Login must be called before the response's header is written, and ctx
// keeps the old session: a handler typically redirects after it. It
// returns an error matching [retail.ErrInvalid] if user breaks the input
// rules (1..[retail.MaxUserLen] bytes of valid UTF-8), and the Store's
// error as the Store returned it if recording the session fails; then no
// cookie is set.
func (m *SessionManager) Login(ctx context.Context, w http.ResponseWriter, user string) (Session, error) {
	if why := rules.User(user); why != "" {
		return Session{}, invalid("SessionManager.Login", "user", why)
	}
	s := Session{Token: newToken(), User: user}
	value := s.Token
	if m.signer != nil {
		// The user rule keeps the value far below MaxCookieLen, so Sign
		// cannot fail here; its error is returned all the same.
		var err error
		value, err = m.signer.Sign(m.opts.CookieName, encodeSignedSession(s), m.opts.Clock.Now().Add(m.opts.MaxAge))
		if err != nil {
			return Session{}, err
		}
	}
	if err := m.store.UpdateToken(ctx, s.Token, s.User, ""); err != nil {
		return Session{}, err
	}
	if old, ok := SessionFrom(ctx); ok {
		if err := m.store.Logout(ctx, old.Token); err != nil {
			// The new session stands; the old one will be cleaned.
			logError(ctx, m.opts.Logger, "retailhttp: ending the session replaced by a login failed", err)
		}
	}
	http.SetCookie(w, m.cookie(value, int(m.opts.MaxAge/time.Second)))
	return s, nil
}

// Logout ends the session in ctx (see [SessionFrom]), deleting its cart
// and recently viewed items from the Store, and clears the session cookie
// on w. Without a session in ctx it only clears the cookie. It must be
// called before the response's header is written. The cookie is cleared
// even if the Store fails, whose error is returned as the Store returned
// it.
func (m *SessionManager) Logout(ctx context.Context, w http.ResponseWriter) error {
	http.SetCookie(w, m.clearCookie())
	s, ok := SessionFrom(ctx)
	if !ok {
		return nil
	}
	return m.store.Logout(ctx, s.Token)
}

// ItemFromQuery is the default [SessionOptions].Item: the "item" query
// parameter of GET and HEAD requests, as in the book's item pages
// (/?item=itemX), or "" if there is not exactly one.
func ItemFromQuery(r *http.Request) string {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return ""
	}
	items := r.URL.Query()["item"]
	if len(items) != 1 {
		return ""
	}
	return items[0]
}

func (m *SessionManager) cookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     m.opts.CookieName,
		Value:    value,
		Path:     m.opts.Path,
		Domain:   m.opts.Domain,
		MaxAge:   maxAge,
		Secure:   m.opts.Secure,
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
	}
}

// clearCookie tells the browser to drop the session cookie.
func (m *SessionManager) clearCookie() *http.Cookie { return m.cookie("", -1) }

// fail answers a request whose session could not be looked up because
// the Store failed with err.
func (m *SessionManager) fail(w http.ResponseWriter, r *http.Request, err error) {
	if m.opts.ErrorHandler != nil {
		m.opts.ErrorHandler(w, r, err)
		return
	}
	logError(r.Context(), m.opts.Logger, "retailhttp: looking up a session failed", err)
	http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
}

// newToken returns TokenLen lowercase hex digits from crypto/rand, whose
// Read never fails (it crashes the program instead, since Go 1.24).
func newToken() string {
	var b [TokenLen / 2]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// isToken reports whether s has the form of a token newToken makes.
func isToken(s string) bool {
	if len(s) != TokenLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// A signed session is the token followed by the user; the token's length
// is fixed, so no separator is needed.
func encodeSignedSession(s Session) []byte {
	return append([]byte(s.Token), s.User...)
}

func decodeSignedSession(data []byte) (Session, bool) {
	if len(data) <= TokenLen {
		return Session{}, false
	}
	s := Session{Token: string(data[:TokenLen]), User: string(data[TokenLen:])}
	if !isToken(s.Token) || rules.User(s.User) != "" {
		return Session{}, false
	}
	return s, true
}
