package settings_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
	"github.com/retailkit/retail/backend/rueidisbackend"
	"github.com/retailkit/retail/internal/redistest"
)

// server is the Redis server of this test binary, started by TestMain when
// redis-server is available; nil with the reason otherwise.
var (
	server    *redistest.Server
	serverErr error
)

func TestMain(m *testing.M) {
	server, serverErr = redistest.StartServer()
	code := redistest.Main(m)
	if server != nil {
		server.Close()
	}
	os.Exit(code)
}

const ms = time.Millisecond

// sessionTimes are the session options of a backend, as each backend's
// Options spells them.
type sessionTimes struct {
	idle, lifetime, touch time.Duration
}

// backends make a Store of each backend with the given session times.
var backends = []struct {
	name string
	new  func(tb testing.TB, clock retail.Clock, st sessionTimes) retail.Store
}{
	{"memory", func(tb testing.TB, clock retail.Clock, st sessionTimes) retail.Store {
		s, err := memory.New(memory.Options{Clock: clock, IdleTimeout: st.idle, Lifetime: st.lifetime, TouchEvery: st.touch})
		if err != nil {
			tb.Fatalf("memory.New() = %v", err)
		}
		return s
	}},
	{"miniredis", func(tb testing.TB, clock retail.Clock, st sessionTimes) retail.Store {
		mr := miniredis.NewMiniRedis()
		if err := mr.Start(); err != nil {
			tb.Fatalf("miniredis: %v", err)
		}
		tb.Cleanup(mr.Close)
		return newRedisStore(tb, rueidis.ClientOption{InitAddress: []string{mr.Addr()}, DisableCache: true}, clock, st)
	}},
	{"redis", func(tb testing.TB, clock retail.Clock, st sessionTimes) retail.Store {
		if server == nil {
			if errors.Is(serverErr, redistest.ErrUnavailable) {
				redistest.Skip(tb, "no Redis server: "+serverErr.Error())
			}
			tb.Fatalf("starting a Redis server: %v", serverErr)
		}
		return newRedisStore(tb, rueidis.ClientOption{InitAddress: []string{server.Addr()}}, clock, st)
	}},
}

func newRedisStore(tb testing.TB, opt rueidis.ClientOption, clock retail.Clock, st sessionTimes) retail.Store {
	opt.ForceSingleClient = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		tb.Fatalf("rueidis.NewClient() = %v", err)
	}
	tb.Cleanup(c.Close)
	s, err := rueidisbackend.New(c, rueidisbackend.Options{
		Prefix: fmt.Sprintf("settings-%d:", time.Now().UnixNano()), Clock: clock,
		IdleTimeout: st.idle, Lifetime: st.lifetime, TouchEvery: st.touch,
	})
	if err != nil {
		tb.Fatalf("rueidisbackend.New() = %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// Every backend keeps a session exactly as long as the others, for times
// that are not whole milliseconds too: each time is rounded up to whole
// milliseconds, so a session lives 2 ms with an IdleTimeout of 1.5 ms,
// never 1 ms on one backend and 2 ms on another.
func TestSessionTimes_SameOnEveryBackend(t *testing.T) {
	const us = time.Microsecond
	for _, c := range []struct {
		name  string
		times sessionTimes
		lives time.Duration // how long a session started and left alone lives
	}{
		{"IdleTimeout1.5ms", sessionTimes{idle: 1500 * us, lifetime: time.Hour}, 2 * ms},
		{"Lifetime2.5ms", sessionTimes{idle: time.Hour, lifetime: 2500 * us}, 3 * ms},
		{"IdleTimeout2ms", sessionTimes{idle: 2 * ms, lifetime: time.Hour}, 2 * ms},
	} {
		for _, b := range backends {
			t.Run(c.name+"/"+b.name, func(t *testing.T) {
				ctx := context.Background()
				clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC))
				s := b.new(t, clock, c.times)
				if _, err := s.StartSession(ctx, "tok", "alice"); err != nil {
					t.Fatalf("StartSession() = %v", err)
				}
				clock.Advance(c.lives - ms)
				if _, ok, err := s.CheckToken(ctx, "tok"); !ok || err != nil {
					t.Errorf("CheckToken() %v after the start = _, %v, %v, want a live session (it lives %v)", c.lives-ms, ok, err, c.lives)
				}
				clock.Advance(ms)
				if _, ok, err := s.CheckToken(ctx, "tok"); ok || err != nil {
					t.Errorf("CheckToken() %v after the start = _, %v, %v, want no session (it lives %v)", c.lives, ok, err, c.lives)
				}
			})
		}
	}
}

// TouchEvery is rounded alike on every backend: with 1.5 ms, 2 ms, a visit
// 1 ms after the session's last write is not written, so the session ends
// an idle timeout after its start; one 2 ms after it is.
func TestSessionTimes_TouchEverySameOnEveryBackend(t *testing.T) {
	times := sessionTimes{idle: 5 * ms, lifetime: time.Hour, touch: 1500 * time.Microsecond}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC))
			s := b.new(t, clock, times)
			for _, token := range []string{"quiet", "touched"} {
				if _, err := s.StartSession(ctx, token, "alice"); err != nil {
					t.Fatalf("StartSession(%q) = %v", token, err)
				}
			}
			clock.Advance(ms)
			s.RefreshSession(ctx, "quiet", "") // within TouchEvery: not written
			clock.Advance(ms)
			s.RefreshSession(ctx, "touched", "") // TouchEvery after the start: written
			clock.Advance(3 * ms)                // 5 ms after the start
			if _, ok, err := s.CheckToken(ctx, "quiet"); ok || err != nil {
				t.Errorf("CheckToken(quiet) = _, %v, %v, want no session: its visit 1 ms after its start was within TouchEvery", ok, err)
			}
			if _, ok, err := s.CheckToken(ctx, "touched"); !ok || err != nil {
				t.Errorf("CheckToken(touched) = _, %v, %v, want a live session: its visit 2 ms after its start was written", ok, err)
			}
		})
	}
}
