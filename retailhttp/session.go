package retailhttp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"time"
)

// The session middleware's settings, used where a [SessionOptions] field is
// zero.
const (
	DefaultSessionCookie = "retail_session" // the cookie's name
	DefaultSessionPath   = "/"              // the cookie's path
	DefaultSessionMaxAge = 7 * 24 * time.Hour
)

// TokenLen is the length of the session tokens a [SessionManager] issues:
// 128 bits from crypto/rand, in lowercase hex.
const TokenLen = 32

// Session is a request's login session: the token that names it in the
// Store (its carts and recently viewed items are kept under the token) and
// the user it is logged in as.
type Session struct {
	Token string
	User  string
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
// defaults above.
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
	// is passed to [Sessions.UpdateToken]. ItemFromQuery if nil. An item
	// that breaks the input rules is treated as "".
	Item func(r *http.Request) string

	// Clock gives the time for signed cookies' expiry; SystemClock if nil.
	Clock Clock

	// ErrorHandler answers a request whose session could not be looked up
	// because the Store failed; if nil, the error is logged and the
	// request answered with 500 Internal Server Error.
	ErrorHandler func(w http.ResponseWriter, r *http.Request, err error)

	// Logger receives the errors the middleware survives; slog.Default()
	// if nil. Tokens are never logged.
	Logger *slog.Logger
}

// SessionManager keeps login sessions in cookies over a [Sessions] store:
// its Handler recognizes the session of each request, and Login and Logout
// start and end sessions.
//
// In token-cookie mode (the default) the cookie holds a random 128-bit
// token and nothing else; each request looks the user up with
// [Sessions.CheckToken], so a Logout, or the Store's cleaning, ends the
// session at once everywhere.
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
// with a session calls [Sessions.UpdateToken] with the item it views (see
// SessionOptions.Item), which records the visit, the recently viewed items
// and the item's view count.
//
// Visitors who have not logged in have no session: the middleware sets no
// cookie for them, writes nothing to the Store and puts no [Session] in
// their requests, so their views are not counted. Carts need a session
// (see [Carts.AddToCart]), so a shop asks visitors to log in before they
// buy. This keeps crawlers from filling the Store, and it keeps anonymous
// pages free of personal data, which is what lets the page cache share
// them (see [PageMiddlewareOptions].Skip).
//
// A SessionManager is safe for concurrent use.
type SessionManager struct {
	store  Sessions
	opts   SessionOptions
	signer *CookieSigner // nil in token-cookie mode
}

// NewSessionManager returns a manager of sessions kept in s. It returns an
// error matching [ErrInvalid] if opts are out of range: a cookie name that
// net/http would refuse, a MaxAge under a second, or a signing key shorter
// than [MinSigningKeyLen]. It panics if s is nil, which is a programming
// error.
func NewSessionManager(s Sessions, opts SessionOptions) (*SessionManager, error) {
	if s == nil {
		panic("retail: NewSessionManager: nil Sessions")
	}
	const op = "NewSessionManager"
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
		opts.Clock = SystemClock{}
	}
	if err := (&http.Cookie{Name: opts.CookieName, Value: "x", Path: opts.Path, Domain: opts.Domain}).Valid(); err != nil {
		return nil, invalid(op, "cookie", err.Error())
	}
	if opts.MaxAge < time.Second {
		return nil, invalid(op, "MaxAge", "shorter than a second")
	}
	m := &SessionManager{store: s, opts: opts}
	if len(opts.SigningKeys) > 0 {
		signer, err := NewCookieSigner(opts.SigningKeys...)
		if err != nil {
			return nil, err
		}
		m.signer = signer
	}
	m.opts.SigningKeys = nil // the signer holds copies
	return m, nil
}

// Handler returns a handler that recognizes the session of each request,
// records the visit with [Sessions.UpdateToken] and passes the request to
// next with the session in its context (see [SessionFrom]). A request
// without a valid session cookie is passed on without a session; if it
// carried a cookie that names no session (unknown, logged out, cleaned,
// tampered or expired), the response clears that cookie.
//
// If looking the token up fails, the request goes to the ErrorHandler
// instead of next. If recording the visit fails, the error is logged and
// the request is served with its session: the visit and view are lost,
// not the page.
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
		if item != "" && ValidateItemRank(item) != nil {
			item = ""
		}
		if err := m.store.UpdateToken(ctx, s.Token, s.User, item); err != nil && ctx.Err() == nil {
			m.logError(ctx, "retail: recording a visit failed; serving the request anyway", err)
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
// returns an error matching [ErrInvalid] if user breaks the user rule of
// [ValidateUpdateToken], and the Store's error, wrapped, if recording the
// session fails; then no cookie is set.
func (m *SessionManager) Login(ctx context.Context, w http.ResponseWriter, user string) (Session, error) {
	if err := checkUser("Login", user); err != nil {
		return Session{}, err
	}
	token, err := newToken()
	if err != nil {
		return Session{}, fmt.Errorf("retail: Login: %w", err)
	}
	s := Session{Token: token, User: user}
	value := token
	if m.signer != nil {
		value, err = m.signer.Sign(m.opts.CookieName, encodeSignedSession(s), m.opts.Clock.Now().Add(m.opts.MaxAge))
		if err != nil {
			return Session{}, err
		}
	}
	if err := m.store.UpdateToken(ctx, token, user, ""); err != nil {
		return Session{}, fmt.Errorf("retail: Login: %w", err)
	}
	if old, ok := SessionFrom(ctx); ok {
		if err := m.store.Logout(ctx, old.Token); err != nil {
			// The new session stands; the old one will be cleaned.
			m.logError(ctx, "retail: ending the session replaced by a login failed", err)
		}
	}
	http.SetCookie(w, m.cookie(value, int(m.opts.MaxAge/time.Second)))
	return s, nil
}

// Logout ends the session in ctx (see [SessionFrom]), deleting its cart
// and recently viewed items from the Store, and clears the session cookie
// on w. Without a session in ctx it only clears the cookie. It must be
// called before the response's header is written. The cookie is cleared
// even if the Store fails, whose error is returned wrapped.
func (m *SessionManager) Logout(ctx context.Context, w http.ResponseWriter) error {
	http.SetCookie(w, m.clearCookie())
	s, ok := SessionFrom(ctx)
	if !ok {
		return nil
	}
	if err := m.store.Logout(ctx, s.Token); err != nil {
		return fmt.Errorf("retail: Logout: %w", err)
	}
	return nil
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

func (m *SessionManager) fail(w http.ResponseWriter, r *http.Request, err error) {
	err = fmt.Errorf("retail: looking up a session: %w", err)
	if m.opts.ErrorHandler != nil {
		m.opts.ErrorHandler(w, r, err)
		return
	}
	if r.Context().Err() == nil {
		m.logError(r.Context(), "retail: looking up a session failed", err)
	}
	http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
}

func (m *SessionManager) logError(ctx context.Context, msg string, err error) {
	l := m.opts.Logger
	if l == nil {
		l = slog.Default()
	}
	l.LogAttrs(ctx, slog.LevelError, msg, slog.Any("err", err))
}

// newToken returns TokenLen lowercase hex digits from crypto/rand.
func newToken() (string, error) {
	var b [TokenLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
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
	if !isToken(s.Token) || checkUser("", s.User) != nil {
		return Session{}, false
	}
	return s, true
}
