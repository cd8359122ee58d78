package retail_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
)

// These tests pin how the Store enforces StoreOptions.MaxSessionsPerUser
// over a fake driver: which sessions a login ends, and what a login whose
// enforcement fails returns and leaves. The conformance suite pins the
// limit on every backend.

// limitedStore returns a Store that allows limit sessions a user, over a
// fake driver whose logins succeed and whose UserSessions lists sessions.
func limitedStore(t *testing.T, limit int, sessions ...driver.SessionInfo) (retail.Store, *fakeDriver) {
	t.Helper()
	d := &fakeDriver{status: driver.OK, sessions: sessions}
	s := retail.NewStoreWith(d, retail.StoreOptions{ViewFlush: -1, MaxSessionsPerUser: limit})
	t.Cleanup(func() { s.Close() })
	return s, d
}

var limitT0 = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

// alices is a session of alice under token, created and last seen the
// given milliseconds after limitT0.
func alices(token string, created, lastSeen int) driver.SessionInfo {
	return driver.SessionInfo{
		ID: retail.SessionID(token), User: "alice",
		Created:  limitT0.Add(time.Duration(created) * time.Millisecond),
		LastSeen: limitT0.Add(time.Duration(lastSeen) * time.Millisecond),
	}
}

// logouts returns the Logout calls among d's recorded calls, sorted.
func logouts(d *fakeDriver) []string {
	var out []string
	for _, c := range d.recorded() {
		if strings.HasPrefix(c, "Logout(") {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// logoutOf is a Logout call as fakeDriver records it.
func logoutOf(token string) string { return `Logout(id("` + token + `"))` }

func TestStore_SessionLimitEndsTheLeastRecentlySeen(t *testing.T) {
	// Tokens by their IDs, least first: of sessions seen and created
	// alike, those with the greater IDs go.
	byID := func(tokens ...string) []string {
		return slices.SortedFunc(slices.Values(tokens), func(a, b string) int {
			return strings.Compare(retail.SessionID(a), retail.SessionID(b))
		})
	}
	uv, uvw := byID("u", "v"), byID("u", "v", "w")
	// Each case logs alice in under token t, whose session UserSessions
	// lists with the others.
	for _, tc := range []struct {
		name     string
		limit    int
		sessions []driver.SessionInfo
		ended    []string // tokens
	}{
		{
			name: "UnderTheLimit", limit: 3,
			sessions: []driver.SessionInfo{alices("t", 9, 9), alices("u", 0, 0), alices("v", 1, 1)},
		},
		{
			name: "LeastRecentlySeen", limit: 2,
			sessions: []driver.SessionInfo{alices("t", 9, 9), alices("u", 1, 2), alices("v", 0, 3)},
			ended:    []string{"u"},
		},
		{
			// The older is the one of lesser ID, which would stay if
			// the IDs decided.
			name: "SameLastSeenOlderCreated", limit: 2,
			sessions: []driver.SessionInfo{alices("t", 9, 9), alices(uv[1], 1, 5), alices(uv[0], 0, 5)},
			ended:    uv[:1],
		},
		{
			name: "SameLastSeenAndCreatedGreaterID", limit: 2,
			sessions: []driver.SessionInfo{alices("t", 9, 9), alices("u", 0, 5), alices("v", 0, 5)},
			ended:    uv[1:],
		},
		{
			name: "SameLastSeenAndCreatedTwoOfThreeGo", limit: 2,
			sessions: []driver.SessionInfo{alices("t", 9, 9), alices("u", 0, 5), alices("v", 0, 5), alices("w", 0, 5)},
			ended:    uvw[1:],
		},
		{
			name: "NeverTheLoginsOwn", limit: 2,
			sessions: []driver.SessionInfo{alices("t", 0, 0), alices("u", 1, 5), alices("v", 1, 5)},
			ended:    uv[1:],
		},
		{
			name: "LimitOfOne", limit: 1,
			sessions: []driver.SessionInfo{alices("t", 0, 0), alices("u", 1, 5), alices("v", 2, 6)},
			ended:    []string{"u", "v"},
		},
	} {
		// The driver may list the sessions in any order: the choice is
		// the same.
		for _, order := range []string{"Listed", "Reversed"} {
			t.Run(tc.name+"/"+order, func(t *testing.T) {
				sessions := slices.Clone(tc.sessions)
				if order == "Reversed" {
					slices.Reverse(sessions)
				}
				s, d := limitedStore(t, tc.limit, sessions...)
				if created, err := s.StartSession(context.Background(), "t", "alice"); !created || err != nil {
					t.Fatalf("StartSession(t, alice) = %v, %v, want true, nil", created, err)
				}
				var want []string
				for _, token := range tc.ended {
					want = append(want, logoutOf(token))
				}
				slices.Sort(want)
				if diff := cmp.Diff(want, logouts(d)); diff != "" {
					t.Errorf("sessions the login ended (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// A guest's session, or a renewal keeping its user, is no login: the
// limit is not looked at.
func TestStore_SessionLimitIsNotAskedWithoutALogin(t *testing.T) {
	ctx := context.Background()
	s, d := limitedStore(t, 1, alices("u", 0, 0), alices("v", 1, 1))
	if created, err := s.StartSession(ctx, "t", ""); !created || err != nil {
		t.Fatalf("StartSession(t, guest) = %v, %v, want true, nil", created, err)
	}
	if ok, err := s.RenewSession(ctx, "t", "w", ""); !ok || err != nil {
		t.Fatalf("RenewSession(t, w, \"\") = %v, %v, want true, nil", ok, err)
	}
	want := []string{`StartSession(id("t"), "")`, `RenewSession(id("t"), id("w"), "")`}
	if diff := cmp.Diff(want, d.recorded()); diff != "" {
		t.Errorf("driver calls (-want +got):\n%s", diff)
	}
}

// If enforcing the limit fails, the login returns the driver's error and
// ends its own session, so that the user is left no more sessions than
// the limit, unless that Logout fails too.
func TestStore_SessionLimitFailureEndsTheLoginsSession(t *testing.T) {
	errList := &driverError{"listing failed"}
	errEnd := &driverError{"ending an older session failed"}
	errOwn := &driverError{"ending the login's session failed"}
	sessions := []driver.SessionInfo{alices("t", 9, 9), alices("u", 0, 0), alices("v", 1, 1)}
	logins := []struct {
		name, op string
		login    func(s retail.Store) (bool, error)
		sent     string // the login's own driver call
	}{
		{"StartSession", "StartSession", func(s retail.Store) (bool, error) {
			return s.StartSession(context.Background(), "t", "alice")
		}, `StartSession(id("t"), "alice")`},
		{"RenewSession", "RenewSession", func(s retail.Store) (bool, error) {
			return s.RenewSession(context.Background(), "w", "t", "alice")
		}, `RenewSession(id("w"), id("t"), "alice")`},
		{"StartSessionFor", "StartSessionFor", func(s retail.Store) (bool, error) {
			return s.StartSessionFor(context.Background(), "t", "alice", retail.SessionOptions{Lifetime: time.Hour})
		}, `StartSession(id("t"), "alice")`},
		{"RenewSessionFor", "RenewSessionFor", func(s retail.Store) (bool, error) {
			return s.RenewSessionFor(context.Background(), "w", "t", "alice", retail.SessionOptions{Label: "phone"})
		}, `RenewSession(id("w"), id("t"), "alice")`},
	}
	for _, tc := range []struct {
		name    string
		failOn  map[string]error
		wantErr error
		sent    []string // after the login's own call
	}{
		{
			name:    "UserSessionsFails",
			failOn:  map[string]error{"UserSessions": errList},
			wantErr: errList,
			sent:    []string{`UserSessions("alice")`, logoutOf("t")},
		},
		{
			name:    "EndingAnOlderSessionFails",
			failOn:  map[string]error{logoutOf("u"): errEnd},
			wantErr: errEnd,
			sent:    []string{`UserSessions("alice")`, logoutOf("u"), logoutOf("t")},
		},
		{
			// The error returned is the enforcement's, not the one of
			// ending the login's session.
			name:    "EndingTheLoginsSessionFailsToo",
			failOn:  map[string]error{logoutOf("u"): errEnd, logoutOf("t"): errOwn},
			wantErr: errEnd,
			sent:    []string{`UserSessions("alice")`, logoutOf("u"), logoutOf("t")},
		},
	} {
		for _, l := range logins {
			t.Run(tc.name+"/"+l.name, func(t *testing.T) {
				s, d := limitedStore(t, 2, sessions...)
				d.failOn = tc.failOn
				ok, err := l.login(s)
				if ok {
					t.Errorf("%s = true, want false", l.name)
				}
				var opErr *retail.OpError
				if !errors.As(err, &opErr) || opErr.Op != l.op || !errors.Is(err, tc.wantErr) {
					t.Errorf("%s = %v, want an *OpError of %s matching %v", l.name, err, l.op, tc.wantErr)
				}
				if errors.Is(err, errOwn) {
					t.Errorf("%s = %v, want the enforcement's error, not that of ending its own session", l.name, err)
				}
				want := append([]string{l.sent}, tc.sent...)
				if diff := cmp.Diff(want, d.recorded()); diff != "" {
					t.Errorf("driver calls (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// cancelingDriver cancels the login's context when the limit lists the
// user's sessions, as a client that goes away mid-login does, and records
// whether the context of each Logout had ended.
type cancelingDriver struct {
	*fakeDriver
	cancel context.CancelFunc
	logout chan bool // whether each Logout's context had ended
}

func (d *cancelingDriver) UserSessions(ctx context.Context, user string) ([]driver.SessionInfo, error) {
	d.cancel()
	return nil, ctx.Err()
}

func (d *cancelingDriver) Logout(ctx context.Context, token string) error {
	err := d.fakeDriver.Logout(ctx, token)
	d.logout <- ctx.Err() != nil
	return err
}

// A login whose context ends while the limit is enforced still ends its
// own session.
func TestStore_SessionLimitEndsTheLoginsSessionAfterItsContextEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &cancelingDriver{fakeDriver: &fakeDriver{status: driver.OK}, cancel: cancel, logout: make(chan bool, 1)}
	s := retail.NewStoreWith(d, retail.StoreOptions{ViewFlush: -1, MaxSessionsPerUser: 1})
	defer s.Close()
	if created, err := s.StartSession(ctx, "t", "alice"); created || !errors.Is(err, context.Canceled) {
		t.Errorf("StartSession(t, alice) canceled mid-login = %v, %v, want false and an error matching %v", created, err, context.Canceled)
	}
	// The call returns as its context ends; the Logout goes on.
	select {
	case ended := <-d.logout:
		if ended {
			t.Errorf("Logout's context had ended: the login's session must be ended whatever its context")
		}
	case <-time.After(waitLimit):
		t.Fatalf("the login's session was not ended within %v", waitLimit)
	}
	if want := []string{`StartSession(id("t"), "alice")`, logoutOf("t")}; !cmp.Equal(d.recorded(), want) {
		t.Errorf("driver calls = %q, want %q", d.recorded(), want)
	}
}

// stallingDriver is a Store that stalls: listing the user's sessions lasts
// until the caller's context ends, and a Logout until released.
type stallingDriver struct {
	*fakeDriver
	release chan struct{}
}

func (d *stallingDriver) UserSessions(ctx context.Context, user string) ([]driver.SessionInfo, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (d *stallingDriver) Logout(ctx context.Context, token string) error {
	<-d.release
	return d.fakeDriver.Logout(ctx, token)
}

// A login whose deadline passes while the limit is enforced returns then,
// however long the Store stalls; its session is ended once the Store
// answers.
func TestStore_SessionLimitHonoursTheLoginsDeadline(t *testing.T) {
	d := &stallingDriver{fakeDriver: &fakeDriver{status: driver.OK}, release: make(chan struct{})}
	s := retail.NewStoreWith(d, retail.StoreOptions{ViewFlush: -1, MaxSessionsPerUser: 1})
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.StartSession(ctx, "t", "alice")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("StartSession(t, alice) past its deadline = %v, want an error matching %v", err, context.DeadlineExceeded)
		}
	case <-time.After(waitLimit):
		close(d.release)
		t.Fatalf("StartSession(t, alice) did not return at its deadline while the Store stalled")
	}
	close(d.release)
	eventually(t, "the login's session to end once the Store answers", func() bool { return slices.Contains(d.recorded(), logoutOf("t")) })
}
