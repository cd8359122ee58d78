// Package conformance is the executable form of the [retail.Store] contract.
// Every backend must pass [Run] unchanged; [Benchmark] measures it on a
// realistic population.
//
// A backend's test file is a few lines:
//
//	func newStore(tb testing.TB, clock retail.Clock, cfg conformance.Config) retail.Store {
//		s, err := memory.New(memory.Options{
//			Clock:       clock,
//			IdleTimeout: cfg.IdleTimeout,
//			Lifetime:    cfg.Lifetime,
//			TouchEvery:  cfg.TouchEvery,
//			// and the backend's MaxSessionsPerUser from cfg.MaxSessionsPerUser
//		})
//		if err != nil {
//			tb.Fatalf("memory.New() = %v", err)
//		}
//		return s
//	}
//
//	func TestConformance(t *testing.T) { conformance.Run(t, newStore) }
//
//	func BenchmarkStore(b *testing.B) { conformance.Benchmark(b, newStore) }
//
// Run is a flat list of subtests, one a behaviour, each with a fresh store
// and a fresh [retail.ManualClock], so a failure names the behaviour that
// broke and time moves only when a subtest moves it. The behaviours about
// expiry and TouchEvery run again under other session times (see
// [Config]), some of them not whole milliseconds, in subtests named after
// them: ShortTimes/Expiry_IdleSessionEndsAtIdleTimeout, and so on.
//
// The suite tests what a backend does, not what every Store does alike: the
// input rules, contexts that have ended, calls after Close and the wrapping
// of errors are the work of [retail.NewStore], through which every backend
// makes its Store, and are tested case by case in package retail. The suite
// keeps one behaviour, FrontDoor, that shows the store under test was made
// by retail.NewStore.
//
// Run the suite under the race detector (go test -race). Several behaviours
// are concurrent, and a data race in a backend breaks the contract in ways
// no assertion can see reliably; only the race detector reports them. The
// concurrent behaviours are built so that a correct store passes however
// its calls interleave; run them more than once (-count) to give a racy
// store more chances to interleave badly. Each race runs a fixed number
// of trials, which [RunWith] can change (see [Options]).
//
// Each subtest has a watchdog: if it does not finish in time (60 s, or the
// duration in the RETAIL_CONFORMANCE_TIMEOUT environment variable) the test
// binary panics with the name of the subtest, so a backend that hangs fails
// instead of stalling the run.
package conformance

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"testing"
	"time"

	"github.com/retailkit/retail"
)

// Factory returns a new, empty Store that reads time from clock and has the
// session times of cfg: the suite moves its clock by them to test expiry.
// The suite calls it once per subtest and closes the store when the subtest
// ends (Close is idempotent, so the factory may also register its own
// cleanup). A subtest whose store has sessions or counted views from the
// start fails at once, saying that the store is not empty.
//
// On a server that others use, or that an earlier run left keys on, give
// each store a keyspace of its own and delete it afterwards:
// [github.com/retailkit/retail/backend/rueidisbackend/rueidistest.Factory]
// does that on Redis.
type Factory func(tb testing.TB, clock retail.Clock, cfg Config) retail.Store

// Config is the session times a Factory gives the Store it makes, as the
// options of the same names: every backend has them, and resolves them
// alike (see [retail.DefaultIdleTimeout]): in whole milliseconds, rounded
// up. The suite expects a session to live exactly the rounded times, so a
// Factory passes the fields on unchanged.
//
// Most behaviours run with the retail package's defaults
// ([retail.DefaultIdleTimeout], [retail.DefaultLifetime],
// [retail.DefaultTouchEvery]); those about expiry and TouchEvery run with
// other times too, the shortest an IdleTimeout of 1.5 ms (2 ms once
// rounded).
type Config struct {
	IdleTimeout time.Duration
	Lifetime    time.Duration
	TouchEvery  time.Duration

	// MaxSessionsPerUser is the backend's option of that name: 0 except
	// where the suite tests the limit.
	MaxSessionsPerUser int
}

// defaultConfig is the retail package's default session times.
var defaultConfig = Config{
	IdleTimeout: retail.DefaultIdleTimeout,
	Lifetime:    retail.DefaultLifetime,
	TouchEvery:  retail.DefaultTouchEvery,
}

// otherTimes are the session times under which Run runs the behaviours
// about expiry and TouchEvery again: short, and not whole milliseconds, so
// that a backend that rounds them otherwise than the others fails.
var otherTimes = []struct {
	name string
	cfg  Config
	// touch is whether the Touch behaviours run too: they need a
	// TouchEvery of 3 ms or more, to visit within it and tell a write
	// from none by the last-seen time.
	touch bool
}{
	// 2 ms, 21 ms and 1 ms once rounded: TouchEvery is half the idle
	// timeout, the most it may be.
	{"ShortTimes", Config{IdleTimeout: 1500 * time.Microsecond, Lifetime: 20500 * time.Microsecond, TouchEvery: 500 * time.Microsecond}, false},
	// 7 ms, 41 ms and 3 ms once rounded: room for visits within
	// TouchEvery.
	{"FractionalTimes", Config{IdleTimeout: 6500 * time.Microsecond, Lifetime: 40500 * time.Microsecond, TouchEvery: 2500 * time.Microsecond}, true},
}

// start is where every subtest's clock starts: a fixed instant at the
// millisecond resolution Stores read time at.
var start = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

const (
	defaultTimeout = 60 * time.Second
	timeoutEnv     = "RETAIL_CONFORMANCE_TIMEOUT"
)

// behaviour is one subtest of Run, with its own store.
type behaviour struct {
	name string
	test func(h *harness)
}

// Options changes how [RunWith] tests a store. The zero value is what
// [Run] uses.
type Options struct {
	// RaceTrials is how many trials each race of Logout and LogoutUser
	// against another call runs; 0 means 4,000. Stores that lost these
	// races lost between 1 trial in 500 and nearly all of them, so 4,000
	// trials see a loss of 1 in 500 all but certainly (e^-8 to miss it),
	// 1,000 most of the time (e^-2). Fewer suit a store that is slow for
	// reasons of its own, where the same code also runs the full count on
	// a faster one: miniredis, which runs each Lua script in a new
	// interpreter, beside a real Redis.
	RaceTrials int
}

// Run runs the conformance suite against the stores newStore returns.
func Run(t *testing.T, newStore Factory) { RunWith(t, newStore, Options{}) }

// RunWith is Run with opts.
func RunWith(t *testing.T, newStore Factory, opts Options) {
	if opts.RaceTrials < 0 {
		t.Fatalf("Options.RaceTrials = %d, want 0 (the default) or more", opts.RaceTrials)
	}
	trials := cmp.Or(opts.RaceTrials, raceTrials)
	timeout := defaultTimeout
	if v := os.Getenv(timeoutEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration such as 2m", timeoutEnv, v)
		}
		timeout = d
	}
	su := &suite{newStore: newStore, timeout: timeout, cfg: defaultConfig, trials: trials}
	groups := [][]behaviour{
		bookTests, sessionTests, lifecycleTests, expiryTests, lifetimeTests, labelTests, loginValueTests, userTests,
		valueTests, cleaningTests, cartTests, pageTests, rowTests, viewTests,
		frontDoorTests, logoutTests, logoutUserTests, touchTests, concurrencyTests, workerTests,
	}
	for _, group := range groups {
		for _, b := range group {
			su.run(t, b)
		}
	}
	limited := defaultConfig
	limited.MaxSessionsPerUser = sessionLimit
	t.Run("SessionLimit", func(t *testing.T) {
		su := &suite{newStore: newStore, timeout: timeout, cfg: limited, trials: trials}
		for _, b := range limitTests {
			su.run(t, b)
		}
	})
	for _, o := range otherTimes {
		su := &suite{newStore: newStore, timeout: timeout, cfg: o.cfg, trials: trials}
		t.Run(o.name, func(t *testing.T) {
			groups := [][]behaviour{expiryTests, lifetimeTests}
			if o.touch {
				groups = append(groups, touchTests)
			}
			for _, group := range groups {
				for _, b := range group {
					su.run(t, b)
				}
			}
		})
	}
}

type suite struct {
	newStore Factory
	timeout  time.Duration
	cfg      Config // the session times of the stores
	trials   int    // how many trials a race runs (Options.RaceTrials)
}

func (su *suite) run(t *testing.T, b behaviour) {
	t.Run(b.name, func(t *testing.T) { b.test(su.harness(t)) })
}

// harness is what a behaviour sees: its store, its clock, a context for every
// call, and helpers that fail the test on unexpected errors. The helpers must
// only be called from the subtest's goroutine; goroutines started by a
// behaviour call the store directly and report with t.Errorf.
type harness struct {
	t     *testing.T
	ctx   context.Context
	s     retail.Store
	clock *retail.ManualClock

	// The store's session times, as it keeps them: the Config's, rounded
	// up to whole milliseconds.
	idle, lifetime, touch time.Duration

	trials int // how many trials a race runs (Options.RaceTrials)
}

func (su *suite) harness(t *testing.T) *harness {
	watchdog(t, su.timeout)
	clock := retail.NewManualClock(start)
	s := su.newStore(t, clock, su.cfg)
	if s == nil {
		t.Fatal("Factory returned a nil Store")
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close() = %v, want nil", err)
		}
	})
	checkEmpty(t, t.Context(), s)
	return &harness{
		t: t, ctx: t.Context(), s: s, clock: clock,
		idle:     ceilMillis(su.cfg.IdleTimeout),
		lifetime: ceilMillis(su.cfg.Lifetime),
		touch:    ceilMillis(su.cfg.TouchEvery),
		trials:   su.trials,
	}
}

// checkEmpty fails tb at once if s holds data where a look costs little:
// sessions, or counted views. Every behaviour expects an empty store, so a
// Factory that returns one holding data (a shared server's keys, an earlier
// run's) would otherwise fail behaviour after behaviour in ways that read
// like bugs of the backend.
func checkEmpty(tb testing.TB, ctx context.Context, s retail.Store) {
	tb.Helper()
	sessions, err := s.SessionCount(ctx)
	if err != nil {
		tb.Fatalf("SessionCount() on the store the Factory returned = %v, want nil error", err)
	}
	top, err := s.TopItems(ctx, 3)
	if err != nil {
		tb.Fatalf("TopItems(3) on the store the Factory returned = %v, want nil error", err)
	}
	if sessions != 0 || len(top) != 0 {
		tb.Fatalf("the Factory returned a store that is not empty: %d sessions, most viewed items %v; "+
			"it must return a new, empty Store each time (on a shared Redis, under a key prefix of its own: "+
			"see package rueidistest)", sessions, top)
	}
}

// ceilMillis rounds d up to whole milliseconds, as every Store keeps its
// session times.
func ceilMillis(d time.Duration) time.Duration {
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}

// watchdog panics if t has not finished within timeout. It is registered
// before the store, so it also covers the store's Close.
func watchdog(t *testing.T, timeout time.Duration) {
	name := t.Name()
	timer := time.AfterFunc(timeout, func() {
		// Every goroutine's stack, to show where the backend is stuck.
		debug.SetTraceback("all")
		panic(fmt.Sprintf("conformance: %s did not finish within %v: the backend hung", name, timeout))
	})
	t.Cleanup(func() { timer.Stop() })
}
