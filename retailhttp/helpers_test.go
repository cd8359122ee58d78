package retailhttp_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
)

// waitLimit bounds every wait for other goroutines to reach a point. It is
// a watchdog so that a broken middleware fails the test instead of hanging
// it, never a performance threshold.
const waitLimit = 30 * time.Second

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// newStore returns a memory Store on a manual clock, closed when the test
// ends.
func newStore(t *testing.T) (retail.Store, *retail.ManualClock) {
	t.Helper()
	clock := retail.NewManualClock(epoch)
	s, err := memory.New(memory.Options{Clock: clock})
	if err != nil {
		t.Fatalf("memory.New = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clock
}

// newRankedStore returns a fresh store and its clock, with one view of
// itemX, so that itemX is ranked and the book's rule caches its page.
func newRankedStore(t *testing.T) (retail.Store, *retail.ManualClock) {
	t.Helper()
	s, clock := newStore(t)
	view(t, s, "itemX", 1)
	return s, clock
}

// view counts times views of item, each by a session of its own.
func view(t *testing.T, s retail.Sessions, item string, times int) {
	t.Helper()
	for i := range times {
		token := fmt.Sprintf("viewer-%s-%d", item, i)
		if err := s.UpdateToken(context.Background(), token, "user", item); err != nil {
			t.Fatalf("UpdateToken(%q, %q) = %v", token, item, err)
		}
	}
}

// newPageCache returns a PageCache over s with opts, failing the test on
// an error.
func newPageCache(t *testing.T, s retail.Store, opts retail.PageCacheOptions) *retail.PageCache {
	t.Helper()
	c, err := retail.NewPageCache(s, opts)
	if err != nil {
		t.Fatalf("NewPageCache = %v", err)
	}
	return c
}

// pageCountingStore counts reads of the page cache, so a test can tell
// when concurrent requests have all missed.
type pageCountingStore struct {
	retail.Store
	pageReads atomic.Int64
}

func (s *pageCountingStore) Page(ctx context.Context, key string) ([]byte, bool, error) {
	defer s.pageReads.Add(1)
	return s.Store.Page(ctx, key)
}

// eventually polls cond every millisecond until it holds, and fails the
// test if it does not within waitLimit.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %v for %s", waitLimit, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// logRecorder collects what a middleware logs.
type logRecorder struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *logRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Write(p)
}

func (r *logRecorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

func (r *logRecorder) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(r, nil))
}

// bodyETag is the strong ETag a PageCache gives a stored page with body.
func bodyETag(body string) string {
	sum := sha256.Sum256([]byte(body))
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

// errStoreDown is what a failingStore's broken calls return.
var errStoreDown = errors.New("store down")

// failingStore passes every call to Store but those whose method name is
// in fail, which return errStoreDown and reach no Store; with failKey set,
// a failing Value fails only for that key. Tests set fail between
// requests, not during one.
type failingStore struct {
	retail.Store
	fail    map[string]bool
	failKey string
}

func (s *failingStore) StartSession(ctx context.Context, token, user string) (bool, error) {
	if s.fail["StartSession"] {
		return false, errStoreDown
	}
	return s.Store.StartSession(ctx, token, user)
}

func (s *failingStore) StartSessionFor(ctx context.Context, token, user string, opts retail.SessionOptions) (bool, error) {
	if s.fail["StartSessionFor"] {
		return false, errStoreDown
	}
	return s.Store.StartSessionFor(ctx, token, user, opts)
}

func (s *failingStore) RenewSession(ctx context.Context, token, newToken, user string) (bool, error) {
	if s.fail["RenewSession"] {
		return false, errStoreDown
	}
	return s.Store.RenewSession(ctx, token, newToken, user)
}

func (s *failingStore) RenewSessionFor(ctx context.Context, token, newToken, user string, opts retail.SessionOptions) (bool, error) {
	if s.fail["RenewSessionFor"] {
		return false, errStoreDown
	}
	return s.Store.RenewSessionFor(ctx, token, newToken, user, opts)
}

func (s *failingStore) Logout(ctx context.Context, token string) error {
	if s.fail["Logout"] {
		return errStoreDown
	}
	return s.Store.Logout(ctx, token)
}

func (s *failingStore) SetValue(ctx context.Context, token, key string, value []byte) error {
	if s.fail["SetValue"] {
		return errStoreDown
	}
	return s.Store.SetValue(ctx, token, key, value)
}

func (s *failingStore) Value(ctx context.Context, token, key string) ([]byte, bool, error) {
	if s.fail["Value"] && (s.failKey == "" || s.failKey == key) {
		return nil, false, errStoreDown
	}
	return s.Store.Value(ctx, token, key)
}

func (s *failingStore) DeleteValue(ctx context.Context, token, key string) error {
	if s.fail["DeleteValue"] {
		return errStoreDown
	}
	return s.Store.DeleteValue(ctx, token, key)
}

func (s *failingStore) SetItemPage(ctx context.Context, item, key string, body []byte, ttl time.Duration) error {
	if s.fail["SetItemPage"] {
		return errStoreDown
	}
	return s.Store.SetItemPage(ctx, item, key, body, ttl)
}
