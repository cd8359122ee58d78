package main

// Session middleware per HTTP request, served in-process through
// net/http/httptest (no sockets), each library set up for the same
// sessions: an idle timeout of 30 minutes and a lifetime of 24 hours.
//
//	retail: retailhttp.SessionManager over retail's Store (client-side
//	        caching on): RefreshSession on each request, which within the
//	        touch interval is answered from the client-side cache.
//	scs:    alexedwards/scs/v2 LoadAndSave over redisstore (a redigo pool):
//	        GET of the session's gob blob; with an idle timeout every request
//	        re-encodes it and stores it (MULTI SET PEXPIREAT EXEC) and sets
//	        the cookie again.
//
// The handler reads the session's user and answers; POST /login starts a
// session as each library's documentation says to.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/alexedwards/scs/redisstore"
	scs "github.com/alexedwards/scs/v2"
	redigo "github.com/gomodule/redigo/redis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/retailhttp"
)

const (
	nameHTTPRetail = "retail SessionManager"
	nameHTTPSCS    = "scs/v2 + redisstore"
)

// webShop is a session middleware around the benchmark's handler.
type webShop struct {
	name, cookie string
	h            http.Handler
	// user returns the user of token's stored session, ok false if none.
	user func(ctx context.Context, token string) (user string, ok bool, err error)
	// load stores logged-in sessions 0..n-1 of the population.
	load func(ctx context.Context, n int) error
}

// wantHeader carries the user the driver expects, so that every measured
// request is checked too.
const wantHeader = "X-Want-User"

// page answers GET / for user, "" meaning no session.
func page(w http.ResponseWriter, r *http.Request, user string) {
	switch want := r.Header.Get(wantHeader); {
	case user == "":
		http.Error(w, "no session", http.StatusUnauthorized)
	case want != "" && user != want:
		http.Error(w, "wrong user "+user, http.StatusInternalServerError)
	default:
		io.WriteString(w, "hello "+user)
	}
}

func (b *bench) retailWeb(prefix string) (*webShop, error) {
	s, err := b.retail(prefix, true)
	if err != nil {
		return nil, err
	}
	m, err := retailhttp.NewSessionManager(s, retailhttp.SessionOptions{})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		if _, err := m.Login(r.Context(), w, r.FormValue("user")); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		sess, _ := retailhttp.SessionFrom(r.Context())
		page(w, r, sess.User)
	})
	return &webShop{
		name: nameHTTPRetail, cookie: retailhttp.DefaultSessionCookie, h: m.Handler(mux), user: s.CheckToken,
		load: func(ctx context.Context, n int) error {
			return parallel(n, b.cfg.conc, func(i int) error {
				_, err := s.StartSession(ctx, b.pop.tokens[i], b.pop.users[i])
				return err
			})
		},
	}, nil
}

// scsWeb returns scs over redisstore, or an error on a cluster: redigo has
// no cluster client, so redisstore cannot run there.
func (b *bench) scsWeb(prefix string) (*webShop, error) {
	if b.srv.cluster {
		return nil, errors.New("n/a on a cluster: redisstore takes a redigo pool, which has no cluster client")
	}
	addr := b.srv.addrs[0]
	// Sized to the callers, so that no request waits for or dials a
	// connection in the steady state.
	pool := &redigo.Pool{
		MaxIdle: b.cfg.conc, MaxActive: b.cfg.conc, Wait: true, IdleTimeout: 240 * time.Second,
		DialContext: func(ctx context.Context) (redigo.Conn, error) { return redigo.DialContext(ctx, "tcp", addr) },
	}
	b.onClose(func() { pool.Close() })
	store := redisstore.NewWithPrefix(pool, prefix)
	sm := scs.New()
	sm.Store, sm.Lifetime, sm.IdleTimeout = store, retail.DefaultLifetime, retail.DefaultIdleTimeout
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		if err := sm.RenewToken(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		sm.Put(r.Context(), "user", r.FormValue("user"))
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		page(w, r, sm.GetString(r.Context(), "user"))
	})
	return &webShop{
		name: nameHTTPSCS, cookie: sm.Cookie.Name, h: sm.LoadAndSave(mux),
		user: func(_ context.Context, token string) (string, bool, error) {
			blob, ok, err := store.Find(token)
			if err != nil || !ok {
				return "", false, err
			}
			_, values, err := sm.Codec.Decode(blob)
			user, _ := values["user"].(string)
			return user, err == nil, err
		},
		load: func(_ context.Context, n int) error {
			return parallel(n, b.cfg.conc, func(i int) error {
				// What a login handler's Put and LoadAndSave's Commit store.
				deadline := time.Now().Add(sm.Lifetime).UTC()
				blob, err := sm.Codec.Encode(deadline, map[string]any{"user": b.pop.users[i]})
				if err != nil {
					return err
				}
				return store.Commit(b.pop.tokens[i], blob, deadline)
			})
		},
	}, nil
}

// request serves one request through s with token in its session cookie
// ("" for none) and the user the handler must see ("" for no check).
func (s *webShop) request(method, target, token, want string) *http.Response {
	req := httptest.NewRequest(method, target, nil)
	if token != "" {
		req.AddCookie(&http.Cookie{Name: s.cookie, Value: token})
	}
	if want != "" {
		req.Header.Set(wantHeader, want)
	}
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, req)
	return rec.Result()
}

// get is one measured request: session i's GET /.
func (s *webShop) get(pop *population, i int) error {
	resp := s.request(http.MethodGet, "/", pop.tokens[i], pop.users[i])
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET / = %d %s", resp.StatusCode, body)
	}
	return nil
}
