package retailhttp_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/retailhttp"
)

// A LoginWith with options, from a request whose session ended after the
// Handler accepted it (a double-submitted login form whose other request
// moved the session first, a Logout elsewhere), starts a new session, as
// Login's documentation says.
func TestLoginWith_LoginWithOptionsAfterTheSessionEnded(t *testing.T) {
	for _, opts := range []retailhttp.LoginOptions{{}, {Lifetime: day}, {BrowserSession: true}} {
		for _, mode := range cookieModes {
			t.Run(mode.name, func(t *testing.T) {
				r := newRememberRigWith(t, mode.opts)
				old, token := r.guest()
				ctx := requestContext(t, r.m, old)
				if err := r.s.Logout(context.Background(), token); err != nil {
					t.Fatal(err)
				}
				rec := httptest.NewRecorder()
				s, err := r.m.LoginWith(ctx, rec, "alice", opts)
				if err != nil || s.User != "alice" {
					t.Fatalf("LoginWith(%+v) after the session ended = %+v, %v; want a new session of alice", opts, s, err)
				}
			})
		}
	}
}

// gatedRenew lets the first RenewSessionFor run only once a second one has
// arrived, and the second once the first is done.
type gatedRenew struct {
	retail.Store
	mu       sync.Mutex
	n        int
	second   chan struct{}
	firstRan chan struct{}
	arrived  chan struct{}
}

func (g *gatedRenew) RenewSessionFor(ctx context.Context, token, newToken, user string, opts retail.SessionOptions) (bool, error) {
	g.mu.Lock()
	g.n++
	n := g.n
	g.mu.Unlock()
	switch n {
	case 1:
		close(g.arrived)
		<-g.second
		defer close(g.firstRan)
	case 2:
		close(g.second)
		<-g.firstRan
	}
	return g.Store.RenewSessionFor(ctx, token, newToken, user, opts)
}

// Two concurrent logins of one guest session with different choices: the
// one whose move wins keeps its own choice of cookie, and the other, which
// finds the session gone, starts a new one with its own.
func TestLoginWith_ConcurrentLoginsKeepTheirOwnChoice(t *testing.T) {
	for _, mode := range cookieModes {
		t.Run(mode.name, func(t *testing.T) {
			r := newRememberRigWith(t, mode.opts)
			g := &gatedRenew{Store: r.s, second: make(chan struct{}), firstRan: make(chan struct{}), arrived: make(chan struct{})}
			r.failing.Store = g
			old, _ := r.guest()
			ctxA := requestContext(t, r.m, old)
			ctxB := requestContext(t, r.m, old)
			recA := httptest.NewRecorder()
			var sA retailhttp.Session
			var errA error
			done := make(chan struct{})
			go func() {
				defer close(done)
				sA, errA = r.m.LoginWith(ctxA, recA, "alice", retailhttp.LoginOptions{Lifetime: 30 * day}) // remember me
			}()
			<-g.arrived
			recB := httptest.NewRecorder()
			sB, errB := r.m.LoginWith(ctxB, recB, "alice", retailhttp.LoginOptions{Lifetime: day, BrowserSession: true})
			<-done
			if errA != nil || errB != nil || sA.Token == sB.Token {
				t.Fatalf("concurrent LoginWiths = %+v, %v and %+v, %v; want two sessions of alice", sA, errA, sB, errB)
			}
			for _, l := range []struct {
				name   string
				s      retailhttp.Session
				rec    *httptest.ResponseRecorder
				maxAge int
				record func(string) bool
			}{
				{"A's remember-me login", sA, recA, int(30 * day / time.Second), func(v string) bool { return v != "session" }},
				{"B's browser-session login", sB, recB, 0, func(v string) bool { return v == "session" }},
			} {
				if v, ok, err := r.s.Value(context.Background(), l.s.Token, "retailhttp:cookie"); !ok || err != nil || !l.record(string(v)) {
					t.Errorf("%s: its session's cookie record = %q, %v, %v; want its own choice", l.name, v, ok, err)
				}
				c := setCookie(t, l.rec.Result())
				wantCookie(t, l.name+"'s cookie", c, l.maxAge)
				wantCookie(t, "Renew of "+l.name, r.do("/renew", c), l.maxAge)
			}
		})
	}
}
