package retailhttp

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/internal/rules"
)

// The session middleware's settings, used where a [SessionOptions] field is
// zero.
const (
	DefaultSessionCookie = "retail_session"       // the cookie's name
	DefaultSessionPath   = "/"                    // the cookie's path
	DefaultSessionMaxAge = retail.DefaultLifetime // how long a cookie lasts from when it is set
)

// TokenLen is the length of the session tokens a [SessionManager] issues:
// 128 bits from crypto/rand, in lowercase hex.
const TokenLen = 32

// Session is a request's session: the token that names it in the Store
// (its cart, recently viewed items and values are kept under the token)
// and the user it is logged in as, or "" for a guest.
type Session struct {
	Token string // TokenLen lowercase hex digits; a secret, like a password
	User  string // as given to Login; "" for a guest (see Ensure)
}

// Guest reports whether s is a guest session: one that [SessionManager.Ensure]
// started for a visitor who has not logged in.
func (s Session) Guest() bool { return s.User == "" }

// SessionStore is the part of a [retail.Store] that a [SessionManager]
// uses: sessions, their values (where LoginWith records the login's
// cookie), and views for the visitors who have none. Every retail.Store
// is one.
type SessionStore interface {
	retail.Sessions
	retail.SessionValues
	retail.Views
}

// SessionOptions configures a [SessionManager]. Zero fields take the
// defaults named on each.
type SessionOptions struct {
	// CookieName is the session cookie's name; DefaultSessionCookie if
	// empty. On an HTTPS site, "__Host-" and a name (with Secure, Path
	// "/" and no Domain, which browsers require of such a cookie) keeps
	// other sites under the same domain from planting a session cookie
	// that the browser would send with this site's own. Of a request's
	// cookies of the name, three at most are looked up, in the order it
	// sent them (past three, the first two and the last, the site's own,
	// which a browser sends last), and the first that names a live session
	// is the request's.
	CookieName string

	// Path and Domain are the cookie's attributes; Path is
	// DefaultSessionPath if empty, and an empty Domain means the host
	// that set it.
	Path, Domain string

	// Secure marks the cookie Secure, so that browsers send it over HTTPS
	// only. Set it whenever the site is served over HTTPS; it is off by
	// default only so that a shop on http://127.0.0.1 works.
	Secure bool

	// MaxAge is how long a session cookie lasts from when it is set (at
	// Ensure, Login or Renew): its Max-Age attribute and, in signed-cookie
	// mode, the expiry signed into it. DefaultSessionMaxAge if zero; at
	// least a second. It should match the Store's session lifetime
	// (retail.DefaultLifetime unless the backend's options say otherwise):
	// the session ends at whichever comes first, so a shorter MaxAge
	// shortens sessions (but for those of a LoginWith with a Lifetime,
	// whose cookie lasts that lifetime instead), and a longer one only
	// keeps a dead cookie in the browser until its next request clears it.
	// In token-cookie mode a shorter MaxAge binds only browsers that keep
	// to it: a copy of the cookie works until the session ends in the
	// Store (see GuestLifetime and LoginOptions.Lifetime).
	MaxAge time.Duration

	// GuestLifetime, if not zero, is the lifetime of the guest sessions
	// that Ensure starts (see retail.SessionOptions.Lifetime), the Store's
	// if zero: set it when the Store's lifetime is sized for "remember me"
	// logins, longer than a guest should keep a session; the guest's
	// cookie then lasts no longer than MaxAge or GuestLifetime, whichever
	// is shorter. It must not be negative, nor longer than the Store's
	// lifetime (Ensure fails then).
	GuestLifetime time.Duration

	// SigningKeys, if not empty, switch the manager to signed-cookie mode
	// (see [SessionManager]) with a [CookieSigner] over these keys: the
	// first signs, all verify.
	SigningKeys [][]byte

	// Item returns the item a request views, or "" if it views none: it
	// is passed to [retail.Sessions.RefreshSession], or to
	// [retail.Views.CountView] for a request without a session.
	// ItemFromQuery if nil. An item that breaks the input rules is treated
	// as "". ItemFromQuery takes any "item" on any path, so that every
	// request can rank an item of its choosing and grow the views' sorted
	// set (until a [retail.ViewRescaler] trims it); a shop should return
	// only items of its catalog, from the pages that show them, as
	// examples/shop does.
	Item func(r *http.Request) string

	// CountView reports whether the item view of r counts. It is asked
	// only for requests that view an item; a request it refuses views no
	// item at all: no view is counted and, if it has a session, the item
	// is not added to its recently viewed items (the Store does both in
	// one step). Nil counts every view. Set it to keep crawlers from
	// ranking items, for instance with [LikelyBot]:
	//
	//	CountView: func(r *http.Request) bool { return !retailhttp.LikelyBot(r) },
	CountView func(r *http.Request) bool

	// Clock gives the time for signed cookies' expiry; retail.SystemClock
	// if nil. It should be the Store's clock.
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

// SessionManager keeps sessions in cookies over a [SessionStore]: its
// Handler recognizes the session of each request; [SessionManager.Ensure]
// starts a guest session when a visitor first needs state,
// [SessionManager.Login] and [SessionManager.Renew] move the session to a
// new token, and [SessionManager.Logout] and
// [SessionManager.LogoutEverywhere] end sessions.
//
// Sessions live in the Store, which ends them by its clock (an idle
// timeout and a lifetime, see [retail.Sessions]) and at Logout. Every
// request that carries a session cookie asks the Store once, with
// [retail.Sessions.RefreshSession], which records the visit and the viewed
// item and answers whether the session is live; so a Logout, a
// LogoutEverywhere or an expiry ends the session at once, in both cookie
// modes, and a request that races with a Logout never brings the session
// back.
//
// In token-cookie mode (the default) the cookie holds a random 128-bit
// token and nothing else.
//
// In signed-cookie mode (SessionOptions.SigningKeys set) the cookie holds
// the token and the user, signed with HMAC-SHA256 (see [CookieSigner])
// with an expiry: SessionOptions.MaxAge after the cookie was set. A
// tampered, foreign or expired cookie is no session and never reaches the
// Store. A valid one is still checked with the Store as above, so the
// signature is a second bound, not a replacement: the session ends at
// Logout, at the Store's expiry, or at the cookie's, whichever is first.
// The user comes from the Store; the one in the cookie is readable by the
// client (signed, not encrypted). See the package documentation for how
// this differs from the book's signed cookies.
//
// In both modes the cookie is HttpOnly and SameSite=Lax.
//
// A plain page view never creates a session: a visitor who has none gets no
// cookie, nothing is written for them but the view of the item they look
// at (see SessionOptions.CountView), and their pages can be shared by the
// page cache. A handler that needs state (adding to a cart, keeping a
// value) calls Ensure first, which starts a guest session; Login later
// keeps its cart, recently viewed items and values.
//
// Ensure, Login, Renew, Logout and LogoutEverywhere must be called with
// the context that the manager's Handler passed on (r.Context() in a
// handler behind it); with any other they write nothing and return an
// error matching [ErrNoHandler], rather than start a new session and lose
// a guest's cart.
//
// A SessionManager is safe for concurrent use.
type SessionManager struct {
	store  SessionStore
	opts   SessionOptions
	signer *CookieSigner // nil in token-cookie mode
}

// NewSessionManager returns a manager of sessions kept in s. It returns an
// error matching [retail.ErrInvalid] if s is nil or an option is out of
// range: a cookie name, path or domain that net/http would refuse, a name
// whose __Host- or __Secure- prefix the other options break, a MaxAge
// under a second, a negative GuestLifetime, or a signing key shorter than
// [MinSigningKeyLen]. (A GuestLifetime longer than the Store's lifetime
// is the Store's to refuse, at Ensure.)
func NewSessionManager(s SessionStore, opts SessionOptions) (*SessionManager, error) {
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
	if why := prefixRule(opts); why != "" {
		return nil, invalid(op, "CookieName", why)
	}
	if opts.MaxAge < time.Second {
		return nil, invalid(op, "MaxAge", "shorter than a second")
	}
	if opts.GuestLifetime < 0 {
		return nil, invalid(op, "GuestLifetime", "negative")
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

// Handler returns a handler that recognizes the session of each request
// and passes the request to next with it in its context (see
// [SessionFrom]), where m's Ensure, Login, Renew, Logout and
// LogoutEverywhere find it: they must be called with that context, or a
// context derived from it. It never creates a session.
//
// A request whose cookie names a live session is recorded with one call
// of [retail.Sessions.RefreshSession] (the visit, and the item viewed, see
// SessionOptions.Item); a request with several cookies of the name (one
// planted by another site, see SessionOptions.CookieName) makes one call
// a cookie, three at most, until one names a live session. A request
// without one is passed on without a session, and the item it views, if
// any, is counted with [retail.Views.CountView] unless
// SessionOptions.CountView refuses it; if it carried a session cookie that
// names no live session (unknown, logged out, expired, cleaned, tampered
// with), the response clears that cookie, unless it carried more cookies
// than were looked up.
//
// If RefreshSession fails, the request goes to the ErrorHandler option
// instead of next. If counting an anonymous view fails, the error is
// logged and the request is served: the view is lost, not the page.
func (m *SessionManager) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		item := m.viewedItem(r)
		tokens, clear := m.cookieTokens(r)
		rs := &requestSession{m: m}
		for _, token := range tokens {
			user, ok, err := m.store.RefreshSession(ctx, token, item)
			if err != nil {
				m.fail(w, r, err)
				return
			}
			if ok {
				rs.came = Session{Token: token, User: user}
				rs.cameOK = true
				rs.cur, rs.curOK = rs.came, true
				next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, sessionKey{}, rs)))
				return
			}
		}
		if clear {
			sendCookie(w, m.clearCookie())
			w = &privateWriter{ResponseWriter: w}
		}
		if item != "" {
			if err := m.store.CountView(ctx, item); err != nil {
				logError(ctx, m.opts.Logger, "retailhttp: counting a view failed; serving the request anyway", err)
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, sessionKey{}, rs)))
	})
}

// viewedItem returns the item r views, "" if none or if its view does not
// count.
func (m *SessionManager) viewedItem(r *http.Request) string {
	item := m.opts.Item(r)
	if item == "" || rules.ID(item) != "" {
		return ""
	}
	if m.opts.CountView != nil && !m.opts.CountView(r) {
		return ""
	}
	return item
}

// prefixRule returns why browsers would refuse the session cookie that
// opts describe for its name's prefix (RFC 6265bis), which they match in
// any case, or "" if they would not.
func prefixRule(opts SessionOptions) string {
	switch {
	case hasPrefixFold(opts.CookieName, "__Host-") && (!opts.Secure || opts.Path != "/" || opts.Domain != ""):
		return `starts with "__Host-", which needs Secure, Path "/" and no Domain`
	case hasPrefixFold(opts.CookieName, "__Secure-") && !opts.Secure:
		return `starts with "__Secure-", which needs Secure`
	}
	return ""
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// A browser sends every cookie of the name that a request matches: one
// for a longer path first, then, among cookies of the same path, the older
// first. One planted by a sibling subdomain (Domain) or for a deeper path
// thus comes before the site's own, which has the shortest path and comes
// last. The Handler looks up maxCookieTokens of the tokens they name at
// most (past that, the first ones and the last), and examines at most
// maxSessionCookies of the cookies (past that, the first ones and the
// last).
const (
	maxCookieTokens   = 3
	maxSessionCookies = 16
)

// cookieTokens returns the tokens that r's session cookies name, to look up
// in this order; cookies this manager could not have set (malformed,
// forged, expired) are passed over without a lookup. clear is whether the
// response should clear the cookie if none of the tokens names a live
// session: r had one, and every one was looked up, so that clearing cannot
// delete a live cookie that was not.
func (m *SessionManager) cookieTokens(r *http.Request) (tokens []string, clear bool) {
	cookies := r.CookiesNamed(m.opts.CookieName)
	clear = len(cookies) > 0
	if n := len(cookies); n > maxSessionCookies {
		cookies = append(cookies[:maxSessionCookies-1:maxSessionCookies-1], cookies[n-1])
		clear = false
	}
	for _, c := range cookies {
		if token := m.cookieToken(c.Value); token != "" && !slices.Contains(tokens, token) {
			tokens = append(tokens, token)
		}
	}
	if n := len(tokens); n > maxCookieTokens {
		tokens = append(tokens[:maxCookieTokens-1:maxCookieTokens-1], tokens[n-1])
		clear = false
	}
	return tokens, clear
}

// cookieToken returns the token that a session cookie's value names, or ""
// if it is not one this manager could have set.
func (m *SessionManager) cookieToken(value string) string {
	if m.signer == nil {
		if !isToken(value) {
			return ""
		}
		return value
	}
	data, ok := m.signer.Verify(m.opts.CookieName, value, m.opts.Clock.Now())
	if !ok {
		return ""
	}
	s, ok := decodeSignedSession(data)
	if !ok {
		return ""
	}
	return s.Token
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

// setCookie sets a session cookie holding value on w, for MaxAge.
func (m *SessionManager) setCookie(w http.ResponseWriter, value string) {
	sendCookie(w, m.cookie(value, int(m.opts.MaxAge/time.Second)))
}

// cookieValue returns the value of the cookie that names s: its token, or
// in signed-cookie mode the signed token and user, expiring MaxAge from
// now. The user rule keeps a signed value far below MaxCookieLen, so it
// cannot fail; its error is returned all the same.
func (m *SessionManager) cookieValue(s Session) (string, error) {
	return m.cookieValueUntil(s, m.opts.Clock.Now().Add(m.opts.MaxAge))
}

// cookieValueUntil is cookieValue for a signed cookie expiring at expires.
func (m *SessionManager) cookieValueUntil(s Session, expires time.Time) (string, error) {
	if m.signer == nil {
		return s.Token, nil
	}
	return m.signer.Sign(m.opts.CookieName, encodeSignedSession(s), expires)
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

// A signed session is the token followed by the user, which is empty for
// a guest; the token's length is fixed, so no separator is needed.
func encodeSignedSession(s Session) []byte {
	return append([]byte(s.Token), s.User...)
}

func decodeSignedSession(data []byte) (Session, bool) {
	if len(data) < TokenLen {
		return Session{}, false
	}
	s := Session{Token: string(data[:TokenLen]), User: string(data[TokenLen:])}
	if !isToken(s.Token) || s.User != "" && rules.User(s.User) != "" {
		return Session{}, false
	}
	return s, true
}

// sendCookie sets the session cookie c on w and makes the response private
// (see private): a response that names a session, or ends one, is for its
// visitor alone, and a shared cache that kept it would hand the cookie to
// others. A handler that sets Cache-Control after this replaces it.
func sendCookie(w http.ResponseWriter, c *http.Cookie) {
	http.SetCookie(w, c)
	makePrivate(w.Header())
}

// privateWriter is the writer a handler gets on a request whose dead
// session cookie the Handler cleared before it ran: the response stays
// private whatever Cache-Control the handler sets (a favicon's public
// max-age, say), so that no shared cache hands the clearing to every
// visitor.
type privateWriter struct {
	http.ResponseWriter
	done bool
}

var (
	_ http.Flusher  = (*privateWriter)(nil)
	_ http.Hijacker = (*privateWriter)(nil)
)

func (w *privateWriter) WriteHeader(code int) {
	if code >= 200 {
		w.keepPrivate()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *privateWriter) Write(b []byte) (int, error) {
	w.keepPrivate()
	return w.ResponseWriter.Write(b)
}

// Flush flushes the underlying writer, if it can.
func (w *privateWriter) Flush() {
	w.keepPrivate()
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hijacks the underlying writer's connection, if it can: for
// handlers that assert http.Hijacker (a WebSocket upgrade).
func (w *privateWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *privateWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// keepPrivate makes the header private before it is written.
func (w *privateWriter) keepPrivate() {
	if !w.done {
		w.done = true
		makePrivate(w.Header())
	}
}
