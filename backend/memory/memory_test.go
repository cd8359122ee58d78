package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
	"github.com/retailkit/retail/conformance"
)

func newStore(tb testing.TB, clock retail.Clock, cfg conformance.Config) retail.Store {
	s, err := memory.New(memory.Options{
		Clock: clock, IdleTimeout: cfg.IdleTimeout, Lifetime: cfg.Lifetime, TouchEvery: cfg.TouchEvery,
		MaxSessionsPerUser: cfg.MaxSessionsPerUser,
	})
	if err != nil {
		tb.Fatalf("memory.New() = %v", err)
	}
	return s
}

func BenchmarkStore(b *testing.B) { conformance.Benchmark(b, newStore) }

func TestConformance(t *testing.T) { conformance.Run(t, newStore) }

func TestNew_RejectsOptionsOutOfRange(t *testing.T) {
	for _, c := range []struct {
		name string
		opts memory.Options
		arg  string
	}{
		{"RecentLimitNegative", memory.Options{RecentLimit: -1}, "RecentLimit"},
		{"MaxSessionsPerUserNegative", memory.Options{MaxSessionsPerUser: -1}, "MaxSessionsPerUser"},
		{"IdleTimeoutNegative", memory.Options{IdleTimeout: -time.Minute}, "IdleTimeout"},
		{"IdleTimeoutBelowMin", memory.Options{IdleTimeout: retail.MinDuration - 1}, "IdleTimeout"},
		{"IdleTimeoutAboveMax", memory.Options{IdleTimeout: retail.MaxSessionTime + 1}, "IdleTimeout"},
		{"LifetimeNegative", memory.Options{Lifetime: -time.Hour}, "Lifetime"},
		{"LifetimeBelowMin", memory.Options{Lifetime: retail.MinDuration - 1}, "Lifetime"},
		{"LifetimeAboveMax", memory.Options{Lifetime: retail.MaxSessionTime + 1}, "Lifetime"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := memory.New(c.opts)
			var ie *retail.InputError
			if !errors.As(err, &ie) || !errors.Is(err, retail.ErrInvalid) || ie.Op != "memory.New" || ie.Arg != c.arg {
				t.Errorf("memory.New(%+v) = %v, %v, want an *InputError for memory.New, %s", c.opts, s, err, c.arg)
			}
		})
	}
}

// newTimed returns a Store with the given session times on a manual clock.
func newTimed(t *testing.T, idle, lifetime time.Duration) (retail.Store, *retail.ManualClock) {
	t.Helper()
	clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC))
	s, err := memory.New(memory.Options{Clock: clock, IdleTimeout: idle, Lifetime: lifetime})
	if err != nil {
		t.Fatalf("memory.New(IdleTimeout: %v, Lifetime: %v) = %v", idle, lifetime, err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clock
}

func wantLive(t *testing.T, s retail.Store, token string, want bool, when string) {
	t.Helper()
	if _, ok, err := s.CheckToken(context.Background(), token); ok != want || err != nil {
		t.Errorf("CheckToken(%q) %s = %v, %v, want %v, nil", token, when, ok, err, want)
	}
}

// The suite's stores have the default times; these are other ones.
func TestNew_SessionTimesAreHonoured(t *testing.T) {
	ctx := context.Background()
	s, clock := newTimed(t, 5*time.Minute, time.Hour)
	end := clock.Now().Add(time.Hour) // of both sessions' lifetime
	s.StartSession(ctx, "idle", "alice")
	s.StartSession(ctx, "busy", "bob")
	clock.Advance(5*time.Minute - time.Millisecond)
	wantLive(t, s, "idle", true, "a millisecond before the idle timeout")
	s.RefreshSession(ctx, "busy", "")
	clock.Advance(time.Millisecond)
	wantLive(t, s, "idle", false, "at the idle timeout")
	// Refreshed every 3 minutes, busy lives until its lifetime ends.
	for clock.Now().Add(3 * time.Minute).Before(end) {
		clock.Advance(3 * time.Minute)
		if _, ok, err := s.RefreshSession(ctx, "busy", ""); !ok || err != nil {
			t.Fatalf("RefreshSession(\"busy\") at %v = %v, %v, want true, nil", clock.Now(), ok, err)
		}
	}
	clock.Set(end.Add(-time.Millisecond))
	wantLive(t, s, "busy", true, "a millisecond before its lifetime ends")
	clock.Advance(time.Millisecond)
	wantLive(t, s, "busy", false, "when its lifetime ends")
}

// Times are read in whole milliseconds: a timeout between two is rounded
// up, so a session never ends before its timeout has passed.
func TestNew_SubMillisecondTimesRoundUp(t *testing.T) {
	s, clock := newTimed(t, 1500*time.Microsecond, time.Hour)
	s.StartSession(context.Background(), "tok", "")
	clock.Advance(time.Millisecond)
	wantLive(t, s, "tok", true, "1 ms into an idle timeout of 1.5 ms")
	clock.Advance(time.Millisecond)
	wantLive(t, s, "tok", false, "2 ms into an idle timeout of 1.5 ms")
}

// TestSessions_ExpiredAreDroppedOnAccess: the suite lets a backend keep an
// expired session until cleaning (SessionCount counts it); this one drops it
// at the first call that meets it, whether it expired by the idle timeout or
// by its lifetime.
func TestSessions_ExpiredAreDroppedOnAccess(t *testing.T) {
	const idle, lifetime = time.Minute, 10 * time.Minute
	calls := map[string]func(ctx context.Context, s retail.Store) error{
		"CheckToken": func(ctx context.Context, s retail.Store) error {
			_, _, err := s.CheckToken(ctx, "tok")
			return err
		},
		"RefreshSession": func(ctx context.Context, s retail.Store) error {
			_, _, err := s.RefreshSession(ctx, "tok", "item")
			return err
		},
		"RenewSession": func(ctx context.Context, s retail.Store) error {
			_, err := s.RenewSession(ctx, "tok", "new", "")
			return err
		},
		"RecentItems": func(ctx context.Context, s retail.Store) error {
			_, err := s.RecentItems(ctx, "tok")
			return err
		},
		"UserSessions": func(ctx context.Context, s retail.Store) error {
			_, err := s.UserSessions(ctx, "alice")
			return err
		},
		"SetValue": func(ctx context.Context, s retail.Store) error {
			if err := s.SetValue(ctx, "tok", "k", nil); !errors.Is(err, retail.ErrNoSession) {
				return err
			}
			return nil
		},
		"Value": func(ctx context.Context, s retail.Store) error {
			_, _, err := s.Value(ctx, "tok", "k")
			return err
		},
		"PopValue": func(ctx context.Context, s retail.Store) error {
			_, _, err := s.PopValue(ctx, "tok", "k")
			return err
		},
		"DeleteValue": func(ctx context.Context, s retail.Store) error { return s.DeleteValue(ctx, "tok", "k") },
		"AddToCart": func(ctx context.Context, s retail.Store) error {
			if err := s.AddToCart(ctx, "tok", "item", 1); !errors.Is(err, retail.ErrNoSession) {
				return err
			}
			return nil
		},
		"IncrementCart": func(ctx context.Context, s retail.Store) error {
			if _, err := s.IncrementCart(ctx, "tok", "item", 1); !errors.Is(err, retail.ErrNoSession) {
				return err
			}
			return nil
		},
		"Cart": func(ctx context.Context, s retail.Store) error {
			_, err := s.Cart(ctx, "tok")
			return err
		},
	}
	for _, expiry := range []struct {
		name string
		age  func(ctx context.Context, s retail.Store, clock *retail.ManualClock)
	}{
		{"Idle", func(ctx context.Context, s retail.Store, clock *retail.ManualClock) { clock.Advance(idle) }},
		{"Lifetime", func(ctx context.Context, s retail.Store, clock *retail.ManualClock) {
			// Refreshed every half idle timeout, it is seen 30 s before its
			// lifetime ends.
			for range lifetime/(idle/2) - 1 {
				clock.Advance(idle / 2)
				s.RefreshSession(ctx, "tok", "")
			}
			clock.Advance(idle / 2)
		}},
	} {
		for name, call := range calls {
			t.Run(expiry.name+"/"+name, func(t *testing.T) {
				ctx := context.Background()
				s, clock := newTimed(t, idle, lifetime)
				s.StartSession(ctx, "tok", "alice")
				s.AddToCart(ctx, "tok", "item", 1)
				expiry.age(ctx, s, clock)
				if n, err := s.SessionCount(ctx); n != 1 || err != nil {
					t.Fatalf("SessionCount() once expired = %d, %v, want 1, nil", n, err)
				}
				if err := call(ctx, s); err != nil {
					t.Fatalf("%s once expired = %v", name, err)
				}
				if n, err := s.SessionCount(ctx); n != 0 || err != nil {
					t.Errorf("SessionCount() after %s met the expired session = %d, %v, want 0, nil", name, n, err)
				}
			})
		}
	}
}

// TestClean_LeavesLifetimeExpiredUntilIdle: cleaning goes by last-seen
// time, so a session whose lifetime ended while it was in use stays held
// (absent to every call, but counted) until it has also been idle for the
// idle timeout, or more than keep sessions are held. No call can refresh
// it, so that is at most an idle timeout later.
func TestClean_LeavesLifetimeExpiredUntilIdle(t *testing.T) {
	ctx := context.Background()
	s, clock := newTimed(t, time.Minute, 2*time.Minute)
	s.StartSession(ctx, "tok", "")
	clock.Advance(59 * time.Second)
	s.RefreshSession(ctx, "tok", "")
	clock.Advance(59 * time.Second)
	s.RefreshSession(ctx, "tok", "")
	clock.Advance(2 * time.Second) // lifetime over, idle for 2 s
	if n, err := s.CleanSessions(ctx, 1, 100); n != 0 || err != nil {
		t.Errorf("CleanSessions(1, 100) of a session idle for 2 s = %d, %v, want 0, nil", n, err)
	}
	if n, err := s.CleanSessions(ctx, 0, 100); n != 1 || err != nil {
		t.Errorf("CleanSessions(0, 100) of one session = %d, %v, want 1, nil", n, err)
	}

	s.StartSession(ctx, "tok", "")
	clock.Advance(59 * time.Second)
	s.RefreshSession(ctx, "tok", "")
	clock.Advance(59 * time.Second)
	s.RefreshSession(ctx, "tok", "")
	clock.Advance(time.Minute) // lifetime over, idle for the idle timeout
	if n, err := s.CleanSessions(ctx, 1, 100); n != 1 || err != nil {
		t.Errorf("CleanSessions(1, 100) of a session idle for the idle timeout = %d, %v, want 1, nil", n, err)
	}
}
