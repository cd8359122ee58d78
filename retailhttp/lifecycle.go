package retailhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/internal/rules"
)

// errTokenTaken is returned if a freshly drawn token already names a
// session: with 128 random bits it does not happen unless the Store is
// shared with something that makes tokens of its own.
var errTokenTaken = errors.New("retailhttp: a new token already names a session")

// noSession returns the error of op called without a live session.
func noSession(op string) error {
	return fmt.Errorf("retailhttp: SessionManager.%s: %w", op, retail.ErrNoSession)
}

// noHandler returns the error of op called with a context that did not
// come from the manager's Handler.
func noHandler(op string) error {
	return fmt.Errorf("retailhttp: SessionManager.%s: %w", op, ErrNoHandler)
}

type sessionKey struct{}

// requestSession is the session state of one request: the session it came
// with, which SessionFrom reports, and its current session, which Ensure,
// Login, Renew and Logout read and replace. mu makes those calls of one
// request run one at a time.
type requestSession struct {
	m *SessionManager // whose Handler made it; nil if WithSession did

	came   Session
	cameOK bool

	mu    sync.Mutex
	cur   Session
	curOK bool
	// ending is the session a Logout or LogoutEverywhere of the request
	// failed to end: no longer the request's (its cookie is cleared), but
	// a Logout or LogoutEverywhere again ends it.
	ending Session
}

// WithSession returns a copy of ctx that carries s, as
// [SessionManager.Handler] does for the requests it passes on with a
// session. Tests of handlers can use it to fake such a request: the
// methods of every SessionManager accept the context as their Handler's.
func WithSession(ctx context.Context, s Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, &requestSession{came: s, cameOK: true, cur: s, curOK: true})
}

// SessionFrom returns the session that [SessionManager.Handler] (or
// [WithSession]) put in ctx: the live session the request came with, a
// guest's or a logged-in user's (see [Session.Guest]). A visitor without
// one has none: ok is false.
//
// It keeps reporting that session for the whole request: Ensure, Login,
// Renew and Logout return or end sessions but do not change it, so a
// handler that calls them typically redirects, and the next request sees
// the new session.
func SessionFrom(ctx context.Context) (s Session, ok bool) {
	rs, _ := ctx.Value(sessionKey{}).(*requestSession)
	if rs == nil {
		return Session{}, false
	}
	return rs.came, rs.cameOK
}

// request returns the request state that m's Handler, or WithSession, put
// in ctx, or the error of op matching ErrNoHandler if there is none.
func (m *SessionManager) request(ctx context.Context, op string) (*requestSession, error) {
	rs, _ := ctx.Value(sessionKey{}).(*requestSession)
	if rs == nil || rs.m != nil && rs.m != m {
		return nil, noHandler(op)
	}
	return rs, nil
}

// Ensure returns the request's session, starting a guest session if it has
// none: [retail.Sessions.StartSession] with a new token and no user (or
// [retail.Sessions.StartSessionFor] with SessionOptions.GuestLifetime),
// and the session cookie set on w. A handler calls it before the first action
// that needs state, such as adding to a cart or storing a value:
//
//	s, err := sessions.Ensure(r.Context(), w)
//	if err != nil { ... }
//	_, err = store.IncrementCart(r.Context(), s.Token, item, 1)
//
// The request's session is the one it came with (see [SessionFrom]), or
// the one an earlier Ensure, Login or Renew of the same request returned:
// calling Ensure twice in a request that went through Handler starts at
// most one session. Ensure does not ask the Store again about a session
// the request came with; if a concurrent Logout has ended it since, the
// Store's calls with its token fail with an error matching
// [retail.ErrNoSession], and nothing brings it back.
//
// Ensure must be called before the response's header is written, with the
// context of a request that m's Handler passed on; with any other, it
// returns an error matching [ErrNoHandler] and starts no session. If the
// Store fails, its error is returned as the Store returned it, and no
// cookie is set; a GuestLifetime longer than the Store's lifetime is such
// a failure, of every Ensure that starts a session (an error matching
// [retail.ErrInvalid]).
func (m *SessionManager) Ensure(ctx context.Context, w http.ResponseWriter) (Session, error) {
	rs, err := m.request(ctx, "Ensure")
	if err != nil {
		return Session{}, err
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.curOK {
		return rs.cur, nil
	}
	s := Session{Token: newToken()}
	life := m.opts.MaxAge // the cookie's, which lasts no longer than the session
	if g := m.opts.GuestLifetime; g > 0 {
		life = min(life, g)
	}
	value, err := m.cookieValueUntil(s, m.opts.Clock.Now().Add(life))
	if err != nil {
		return Session{}, err
	}
	if err := m.startFor(ctx, s, retail.SessionOptions{Lifetime: m.opts.GuestLifetime}); err != nil {
		return Session{}, err
	}
	rs.cur, rs.curOK = s, true
	sendCookie(w, m.cookie(value, max(int(life/time.Second), 1)))
	return s, nil
}

// Login logs the request's session in as user and sets the new session
// cookie on w. A guest's session, or user's own, moves to a new token with
// [retail.Sessions.RenewSessionFor]: its cart, recently viewed items and
// values are kept, its lifetime starts again, and the old token names no
// session once Login returns. A session of another user is logged out
// instead (its cart is that user's), and a request without a session, or
// whose session has ended since it began, gets a new one
// ([retail.Sessions.StartSessionFor]). The token is always new, never the one
// the request came with, so a token planted in a visitor's browser before
// login never becomes a logged-in session (no session fixation).
//
// Values with a security meaning (a CSRF token, a "password confirmed"
// mark) must be set anew after Login: a guest session's values come along,
// and whoever planted a guest cookie in the browser may know them.
//
// The request's session is the one it came with (see [SessionFrom]), or
// the one an earlier Ensure, Login or Renew of the same request returned.
// Login must be called before the response's header is written, with the
// context of a request that m's Handler passed on, and ctx keeps the old
// session: a handler typically redirects after it. It returns an error
// matching [ErrNoHandler] for any other context, one matching
// [retail.ErrInvalid] if user breaks the input rules
// (1..[retail.MaxUserLen] bytes of valid UTF-8), and the Store's error as
// the Store returned it if the Store fails; then no cookie is set, and the
// old session is unchanged, unless it was another user's, which is logged
// out first (for a LoginWith with a Lifetime, right after the new session
// starts, which is ended again if that logout fails). One more exception:
// with [retail.StoreOptions].MaxSessionsPerUser, a login whose check of
// the limit fails has moved the session already, and the Store ends it
// (see there), cart and values with it. LoginWith records
// its choice of cookie in the session in the same call of the Store that
// moves or starts it ([retail.SessionOptions].Values): a login that fails
// leaves the old session's records as they were, and one that moves the
// session has nothing left to do that could fail.
func (m *SessionManager) Login(ctx context.Context, w http.ResponseWriter, user string) (Session, error) {
	return m.LoginWith(ctx, w, user, LoginOptions{})
}

// LoginOptions are the choices an application makes at a login, such as
// from a "remember me" checkbox (see [SessionManager.LoginWith]). The zero
// value is [SessionManager.Login]'s: a persistent cookie of
// SessionOptions.MaxAge and the Store's session lifetime.
type LoginOptions struct {
	// Lifetime, if not zero, gives the session a lifetime of its own
	// ([retail.Sessions.StartSessionFor], [retail.Sessions.RenewSessionFor]):
	// it ends that long after the login, and a persistent cookie lasts as
	// long. It must be positive and at most the Store's lifetime, which
	// bounds every session; otherwise LoginWith returns an error matching
	// [retail.ErrInvalid] and logs nothing in.
	Lifetime time.Duration

	// BrowserSession makes the cookie a browser-session cookie, with no
	// Max-Age or Expires: the browser drops it when it ends the session
	// (usually when it closes). The session itself still ends by the
	// Store's clock. Without it the cookie is persistent.
	BrowserSession bool

	// Label, if not empty, names the session on a "your devices" page
	// ([retail.SessionOptions], [retail.Sessions.UserSessions]), such as
	// "Firefox on Linux" from the request's User-Agent. It must be at most
	// retail.MaxLabelLen bytes of printable UTF-8; otherwise LoginWith
	// returns an error matching [retail.ErrInvalid] and logs nothing in.
	// Without one, a login that renews the session keeps its label.
	Label string
}

// cookieKey is the session value under which LoginWith records a login's
// cookie when it is not Login's, so that Renew sets the same kind, expiring
// when the login's did: browserKind for a browser-session cookie, or the
// Unix ms at which a persistent one expires (in signed-cookie mode, the
// expiry signed into it). It counts against retail.MaxSessionValues.
const cookieKey = "retailhttp:cookie"

// browserKind is cookieKey's record of a browser-session cookie.
const browserKind = "session"

// signedUntilKey is the session value under which LoginWith records, in
// signed-cookie mode, the expiry signed into a browser-session cookie, the
// Unix ms, so that Renew signs the same: it has no Max-Age to keep it. It
// is a value of its own, so that cookieKey's records read the same to
// every version (a Renew by one that does not know it signs MaxAge from
// the Renew, as before); a later login of another kind drops it.
const signedUntilKey = "retailhttp:signed-until"

// LoginWith is [SessionManager.Login] with the choices opts makes: a
// browser-session or a persistent cookie, and the session's own lifetime,
// say 30 days for "remember me" and a day otherwise, on a Store whose
// Lifetime option allows 30 days (the default, a day, refuses the longer
// one with an error matching [retail.ErrInvalid]; see
// SessionOptions.GuestLifetime for the guests' sessions):
//
//	opts := retailhttp.LoginOptions{Lifetime: 24 * time.Hour, BrowserSession: true}
//	if r.FormValue("remember") != "" {
//		opts = retailhttp.LoginOptions{Lifetime: 30 * 24 * time.Hour}
//	}
//	_, err := sessions.LoginWith(r.Context(), w, user, opts)
//
// The choices hold until the next login: Renew keeps the session's
// lifetime and sets a cookie of the same kind, expiring when the login's
// did: a persistent one by its Max-Age, and in signed-cookie mode either
// kind by the expiry signed into it. LoginWith with a Lifetime or
// BrowserSession records them in a session value (one of
// retail.MaxSessionValues; two for a browser-session cookie in
// signed-cookie mode); a login without either drops them. A session that
// holds MaxSessionValues other values has no room for them: such a login
// returns an error matching [retail.ErrInvalid] and changes nothing.
func (m *SessionManager) LoginWith(ctx context.Context, w http.ResponseWriter, user string, opts LoginOptions) (Session, error) {
	rs, err := m.request(ctx, "Login")
	if err != nil {
		return Session{}, err
	}
	if why := rules.User(user); why != "" {
		return Session{}, invalid("SessionManager.Login", "user", why)
	}
	if opts.Lifetime < 0 {
		return Session{}, invalid("SessionManager.Login", "Lifetime", "negative")
	}
	if why := rules.Label(opts.Label); why != "" {
		return Session{}, invalid("SessionManager.Login", "Label", why)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	s := Session{Token: newToken(), User: user}
	maxAge := m.opts.MaxAge
	if opts.Lifetime != 0 {
		maxAge = opts.Lifetime
	}
	expires := m.opts.Clock.Now().Add(maxAge)
	value, err := m.cookieValueUntil(s, expires)
	if err != nil {
		return Session{}, err
	}
	// The choice of cookie is recorded in the session by the call that
	// starts or moves it: a login that fails leaves the old session's
	// records as they were, and once the old token names no session
	// nothing is left to fail.
	sopts := retail.SessionOptions{Lifetime: opts.Lifetime, Label: opts.Label, Values: m.loginRecords(opts, expires)}
	renewed, started := false, false
	switch {
	case rs.curOK && rs.cur.User != "" && rs.cur.User != user:
		// Another user's session: what it holds is theirs, not user's.
		// With a Lifetime, which only the Store can check against its own,
		// the new session comes first, so that a login the Store refuses
		// ends nothing; otherwise the other user's session goes first, so
		// that a failure to end it leaves user's sessions as they were.
		if opts.Lifetime != 0 {
			if err := m.startFor(ctx, s, sopts); err != nil {
				return Session{}, err
			}
			started = true
		}
		if err := m.store.Logout(ctx, rs.cur.Token); err != nil {
			if started {
				m.endLogin(ctx, s.Token)
			}
			return Session{}, err
		}
		// It is over whatever happens next.
		rs.cur, rs.curOK = Session{}, false
	case rs.curOK:
		// A guest's session, or user's own. If it has ended since the
		// request began (a concurrent login of it moved it first, a
		// Logout), renewed is false: the login starts a new one, as for a
		// request without one.
		renewed, err = m.store.RenewSessionFor(ctx, rs.cur.Token, s.Token, user, sopts)
		if err != nil {
			return Session{}, err
		}
	}
	if !renewed && !started {
		if err := m.startFor(ctx, s, sopts); err != nil {
			return Session{}, err
		}
	}
	rs.cur, rs.curOK = s, true
	if opts.BrowserSession {
		sendCookie(w, m.cookie(value, 0))
	} else {
		// At least a second: a Max-Age of 0 would make it a browser-session
		// cookie.
		sendCookie(w, m.cookie(value, max(int(maxAge/time.Second), 1)))
	}
	return s, nil
}

// loginRecords returns the session values in which a login with opts,
// whose cookie expires at expires, records its choice of cookie (see
// cookieKey and signedUntilKey): nil for a record it drops, so that no
// earlier login's stands.
func (m *SessionManager) loginRecords(opts LoginOptions, expires time.Time) map[string][]byte {
	records := map[string][]byte{cookieKey: nil, signedUntilKey: nil}
	switch {
	case opts.BrowserSession:
		records[cookieKey] = []byte(browserKind)
		if m.signer != nil {
			records[signedUntilKey] = instantValue(expires)
		}
	case opts.Lifetime != 0:
		records[cookieKey] = instantValue(expires)
	}
	return records
}

// endLogin ends the session of token, which a login that failed after
// creating it would leave logged in with no cookie naming it. The failure
// may be ctx's deadline, so the Logout runs under ctx's values only, for
// cleanupTimeout at most, and is waited for only while ctx lasts.
func (m *SessionManager) endLogin(ctx context.Context, token string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if err := m.store.Logout(lctx, token); err != nil && !errors.Is(err, retail.ErrClosed) {
			logError(lctx, m.opts.Logger, "retailhttp: ending a session whose login failed failed; it ends when idle", err)
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// cleanupTimeout bounds what a call that failed leaves running to clean up
// after itself.
const cleanupTimeout = 10 * time.Second

// Renew moves the request's session to a new token, keeping its user,
// lifetime, cart, recently viewed items and values
// ([retail.Sessions.RenewSession] with no user), and sets the new session
// cookie on w; the old token names no session once Renew returns. Call it
// at any change of privilege other than a login (which renews by itself),
// such as after the user confirms their password.
//
// The request's session is the one it came with (see [SessionFrom]), or
// the one an earlier Ensure, Login or Renew of the same request returned.
// Without one, or if it has ended since the request began, Renew returns
// an error matching [retail.ErrNoSession] (and clears the cookie in the
// latter case). It must be called before the response's header is
// written, with the context of a request that m's Handler passed on (with
// any other, it returns an error matching [ErrNoHandler] and writes
// nothing), and ctx keeps the old session, as with Login. If the Store
// fails, its error is returned as the Store returned it, no cookie is set,
// and the session is unchanged.
func (m *SessionManager) Renew(ctx context.Context, w http.ResponseWriter) (Session, error) {
	rs, err := m.request(ctx, "Renew")
	if err != nil {
		return Session{}, err
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if !rs.curOK {
		return Session{}, noSession("Renew")
	}
	s := Session{Token: newToken(), User: rs.cur.User}
	// The login's choice of cookie is read before the move, so that a
	// failed read leaves the session where it was.
	choice, err := m.readLoginChoice(ctx, rs.cur.Token)
	if err != nil {
		return Session{}, err
	}
	var value string
	if !choice.until.IsZero() {
		value, err = m.cookieValueUntil(s, choice.until)
	} else {
		value, err = m.cookieValue(s)
	}
	if err != nil {
		return Session{}, err
	}
	ok, err := m.store.RenewSession(ctx, rs.cur.Token, s.Token, "")
	if err != nil {
		return Session{}, err
	}
	if !ok {
		rs.cur, rs.curOK = Session{}, false
		sendCookie(w, m.clearCookie())
		return Session{}, noSession("Renew")
	}
	rs.cur = s
	switch {
	case choice.browser:
		sendCookie(w, m.cookie(value, 0))
	case !choice.until.IsZero():
		left := choice.until.Sub(m.opts.Clock.Now())
		sendCookie(w, m.cookie(value, max(int(left/time.Second), 1)))
	default:
		m.setCookie(w, value)
	}
	return s, nil
}

// loginChoice is the choice of cookie a login recorded (see cookieKey):
// a browser-session cookie or not, and the expiry the new cookie keeps,
// in its signature too, if the login chose one (zero if not), so that a
// Renew neither moves the signed bound past what LoginWith chose nor cuts
// it short.
type loginChoice struct {
	browser bool
	until   time.Time
}

// readLoginChoice reads the choice of cookie the login of token recorded. A
// session without a record, or with one this version cannot read, gets
// the default cookie.
func (m *SessionManager) readLoginChoice(ctx context.Context, token string) (loginChoice, error) {
	kind, found, err := m.store.Value(ctx, token, cookieKey)
	if err != nil || !found {
		return loginChoice{}, err
	}
	if string(kind) != browserKind {
		until, ok := parseInstant(kind)
		if !ok {
			return loginChoice{}, nil
		}
		return loginChoice{until: until}, nil
	}
	c := loginChoice{browser: true}
	if m.signer == nil {
		return c, nil
	}
	// In signed-cookie mode, the login's expiry if LoginWith recorded it,
	// else MaxAge from now.
	v, found, err := m.store.Value(ctx, token, signedUntilKey)
	if until, ok := parseInstant(v); found && ok && err == nil {
		c.until = until
	}
	return c, err
}

// instantValue and parseInstant write and read the instants LoginWith
// records as session values (see cookieKey): Unix milliseconds in decimal.
func instantValue(t time.Time) []byte { return strconv.AppendInt(nil, t.UnixMilli(), 10) }

func parseInstant(v []byte) (time.Time, bool) {
	ms, err := strconv.ParseInt(string(v), 10, 64)
	return time.UnixMilli(ms), err == nil
}

// Logout ends the request's session with [retail.Sessions.Logout],
// deleting its cart, recently viewed items and values from the Store, and
// clears the session cookie on w. Without a session it only clears the
// cookie. Once it returns nil, the session is over for every request: a
// later one with the old cookie has no session, and one that began before
// may still see it in its context, but the Store's calls with its token find
// no session, and nothing brings it back. (Another process with a
// client-side cache may still read the session as live until the cache
// hears of the change, a few milliseconds on a local network, but cannot
// write to it; see the Redis backend's docs.) It must be called before the
// response's header is written, with the context of a request that m's
// Handler passed on; with any other, it returns an error matching
// [ErrNoHandler] and neither clears the cookie nor ends a session. The
// cookie is cleared even if the Store fails, whose error is returned as
// the Store returned it; the session is then no longer the request's (as
// its cookie is cleared), but Logout again, with a context that has time
// left, ends it.
func (m *SessionManager) Logout(ctx context.Context, w http.ResponseWriter) error {
	rs, err := m.request(ctx, "Logout")
	if err != nil {
		return err
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	sendCookie(w, m.clearCookie())
	s, ok := rs.takeForLogout()
	if !ok {
		return nil
	}
	if err := m.store.Logout(ctx, s.Token); err != nil {
		rs.ending = s
		return err
	}
	return nil
}

// takeForLogout returns the session a Logout or LogoutEverywhere of the
// request ends: the request's, which it no longer is, or else one that an
// earlier such call failed to end. The caller holds rs.mu.
func (rs *requestSession) takeForLogout() (Session, bool) {
	s, ok := rs.cur, rs.curOK
	if !ok && rs.ending.Token != "" {
		s, ok = rs.ending, true
	}
	rs.cur, rs.curOK, rs.ending = Session{}, false, Session{}
	return s, ok
}

// LogoutEverywhere ends every session of the request's user, on every
// device, with [retail.Sessions.LogoutUser], clears the session cookie on
// w, and returns how many sessions it ended. For a guest session it ends
// that session, as Logout does, and returns 1; without a session it only
// clears the cookie and returns 0. It must be called before the response's
// header is written, with the context of a request that m's Handler
// passed on; with any other, it returns an error matching [ErrNoHandler]
// and neither clears the cookie nor ends a session. The cookie is cleared
// even if the Store fails, whose error is returned as the Store returned
// it; LogoutEverywhere again then ends the sessions, as with Logout.
func (m *SessionManager) LogoutEverywhere(ctx context.Context, w http.ResponseWriter) (int, error) {
	rs, err := m.request(ctx, "LogoutEverywhere")
	if err != nil {
		return 0, err
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	sendCookie(w, m.clearCookie())
	s, ok := rs.takeForLogout()
	if !ok {
		return 0, nil
	}
	n := 1
	if s.Guest() {
		err = m.store.Logout(ctx, s.Token)
	} else {
		n, err = m.store.LogoutUser(ctx, s.User)
	}
	if err != nil {
		rs.ending = s
		return 0, err
	}
	return n, nil
}

// startFor starts session s in the Store with the options given, with
// StartSession if they are its (no lifetime, label or values).
func (m *SessionManager) startFor(ctx context.Context, s Session, opts retail.SessionOptions) error {
	var created bool
	var err error
	if opts.Lifetime != 0 || opts.Label != "" || len(opts.Values) != 0 {
		created, err = m.store.StartSessionFor(ctx, s.Token, s.User, opts)
	} else {
		created, err = m.store.StartSession(ctx, s.Token, s.User)
	}
	if err != nil {
		return err
	}
	if !created {
		return errTokenTaken
	}
	return nil
}
