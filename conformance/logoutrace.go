package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/retailkit/retail"
)

// A logout holds: once Logout returns, only StartSession and UpdateToken can
// give the token a session again, whatever ran concurrently. A store that
// checks that a session exists and then writes to it in two steps loses
// this race: a Logout between the steps leaves a session (or half of one)
// that the user logged out of. UpdateToken is create-or-refresh and may
// bring a session back; it is not raced here.

// raceTrials is how many times each call races a Logout (or LogoutUser)
// unless Options.RaceTrials says otherwise: always all of them. Stores that
// lost these races lost between 1 in 500 and nearly every trial of them
// (measured on the versions that did), so 4,000 trials see the loss.
const raceTrials = 4_000

// logoutBatch trials run at once, so that a networked store pipelines them;
// every trial of a batch has its own token.
const logoutBatch = 16

var logoutTests = []behaviour{
	{name: "Logout_HoldsAgainstConcurrentRefreshSession", test: logoutHolds(0)},
	{name: "Logout_HoldsAgainstConcurrentAddToCart", test: logoutHolds(1)},
	{name: "Logout_HoldsAgainstConcurrentIncrementCart", test: logoutHolds(2)},
	{name: "Logout_HoldsAgainstConcurrentSetValue", test: logoutHolds(3)},
}

// logoutRacer is a call raced against Logout. It reports whether it found
// the session (ran before the Logout), and errors other than ErrNoSession.
type logoutRacer struct {
	name string
	call func(ctx context.Context, s retail.Store, token string) (found bool, err error)
}

// noSession turns a write's error into found, err: ErrNoSession is a miss.
func noSession(err error) (bool, error) {
	if errors.Is(err, retail.ErrNoSession) {
		return false, nil
	}
	return err == nil, err
}

var logoutRacers = []logoutRacer{
	{"RefreshSession", func(ctx context.Context, s retail.Store, token string) (bool, error) {
		_, ok, err := s.RefreshSession(ctx, token, "item-x")
		return ok, err
	}},
	{"AddToCart", func(ctx context.Context, s retail.Store, token string) (bool, error) {
		return noSession(s.AddToCart(ctx, token, "item-x", 2))
	}},
	{"IncrementCart", func(ctx context.Context, s retail.Store, token string) (bool, error) {
		_, err := s.IncrementCart(ctx, token, "item-x", 1)
		return noSession(err)
	}},
	{"SetValue", func(ctx context.Context, s retail.Store, token string) (bool, error) {
		return noSession(s.SetValue(ctx, token, "flash", []byte("x")))
	}},
}

// logoutHolds races logoutRacers[i] against Logout, h.trials times, on
// fresh tokens in one store. After both calls of a trial return, the token
// must have no session, cart or value and the user no listed session, and
// once a batch is done the store must hold no session, before and after a
// cleaning pass that may remove everything: nothing was left half there.
func logoutHolds(i int) func(h *harness) {
	return func(h *harness) { raceLogout(h, h.t, logoutRacers[i]) }
}

func raceLogout(h *harness, t *testing.T, racer logoutRacer) {
	const user, big = "shopper", 1 << 20
	var (
		ctx, s      = h.ctx, h.s
		resurrected failures     // trials that left the token something
		after       atomic.Int64 // trials whose racer missed: it ran after the Logout
		leftBehind  int          // batches after which the store held sessions
	)
	// held is what the store held before the batch: 0, unless an earlier
	// batch (of this racer or another) left sessions that cleaning does
	// not remove; each batch is judged by what it adds.
	held, err := s.SessionCount(ctx)
	if err != nil {
		t.Fatalf("SessionCount() = %v, want nil error", err)
	}
	trials := inBatches(t, h.trials, func(i int) {
		token := fmt.Sprintf("%s-%05d", racer.name, i)
		if created, err := s.StartSession(ctx, token, user); err != nil || !created {
			t.Errorf("StartSession(%q, %q) = %v, %v, want true, nil", token, user, created, err)
			return
		}
		var (
			found              bool
			logoutErr, raceErr error
		)
		race(func() { logoutErr = s.Logout(ctx, token) },
			func() { found, raceErr = racer.call(ctx, s, token) })
		if logoutErr != nil || raceErr != nil {
			t.Errorf("Logout(%q) = %v and concurrent %s(%q) = %v, want nil and nil or ErrNoSession",
				token, logoutErr, racer.name, token, raceErr)
			return
		}
		if !found {
			after.Add(1)
		}
		left, err := leftOf(ctx, s, token)
		if err != nil {
			t.Error(err)
			return
		}
		if left != "" {
			resurrected.add(fmt.Sprintf("%s (%s found the session: %v)", left, racer.name, found))
		}
	}, func(b, last int) {
		n, err := s.SessionCount(ctx)
		if err != nil {
			t.Fatalf("SessionCount() = %v, want nil error", err)
		}
		infos, err := s.UserSessions(ctx, user)
		if err != nil {
			t.Fatalf("UserSessions(%q) = %v, want nil error", user, err)
		}
		removed, err := s.CleanSessions(ctx, 0, big)
		if err != nil {
			t.Fatalf("CleanSessions(0, %d) = %v, want nil error", big, err)
		}
		n2, err := s.SessionCount(ctx)
		if err != nil {
			t.Fatalf("SessionCount() = %v, want nil error", err)
		}
		if n > held || n2 > held || len(infos) != 0 {
			leftBehind++
			if leftBehind == 1 {
				t.Logf("after trials %d..%d: SessionCount() = %d, UserSessions(%q) listed %d, then CleanSessions(0, %d) = %d, "+
					"then SessionCount() = %d; want SessionCount() %d before and after cleaning, and none listed",
					b, last, n, user, len(infos), big, removed, n2, held)
			}
		}
		held = n2
	})
	if r, first := resurrected.result(); r != 0 || leftBehind != 0 {
		if first != "" {
			first = "; the first: " + first
		}
		t.Errorf("Logout did not hold against a concurrent %s: %d of %d trials resurrected the session (0 allowed), "+
			"%d of %d batches of %d left sessions that SessionCount or UserSessions saw (0 allowed)%s",
			racer.name, r, trials, leftBehind, (trials+logoutBatch-1)/logoutBatch, logoutBatch, first)
		return
	}
	t.Logf("Logout against %s: %d trials, %d ran after the Logout, 0 resurrected", racer.name, trials, after.Load())
	if after.Load() == 0 {
		t.Logf("%s never ran after a Logout in %d trials: this run could not see the race", racer.name, trials)
	}
}

// inBatches runs trial(i) for i = 0, 1, ..., logoutBatch at a time, each
// on a goroutine of its own, until n have run or the test has
// failed. After each batch it calls afterBatch,
// if not nil, on the test's goroutine with the batch's first and last
// trial. It returns how many trials ran.
func inBatches(t *testing.T, n int, trial func(i int), afterBatch func(first, last int)) int {
	trials := 0
	for b := 0; b < n && !t.Failed(); b += logoutBatch {
		last := min(b+logoutBatch, n) - 1
		var wg sync.WaitGroup
		for i := b; i <= last; i++ {
			wg.Go(func() { trial(i) })
		}
		wg.Wait()
		trials = last + 1
		if afterBatch != nil {
			afterBatch(b, last)
		}
	}
	return trials
}

// race runs a and b at once, each on a goroutine of its own that starts
// once both exist, and returns when both have returned.
func race(a, b func()) {
	var wg sync.WaitGroup
	ready := make(chan struct{})
	wg.Go(func() { <-ready; a() })
	wg.Go(func() { <-ready; b() })
	close(ready)
	wg.Wait()
}

// failures counts the trials that failed, from any goroutine, and keeps
// the description of the first one it was told of.
type failures struct {
	mu    sync.Mutex
	n     int
	first string
}

func (f *failures) add(desc string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.first = desc
	}
	f.n++
}

// result returns how many trials failed, and the first one's description.
func (f *failures) result() (int, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n, f.first
}

// leftOf describes what token still has after its Logout, or returns "".
func leftOf(ctx context.Context, s retail.Store, token string) (string, error) {
	user, ok, err := s.CheckToken(ctx, token)
	if err != nil {
		return "", fmt.Errorf("CheckToken(%q) = %w, want nil error", token, err)
	}
	if ok {
		return fmt.Sprintf("CheckToken(%q) = %q, true, want a miss", token, user), nil
	}
	c, err := s.Cart(ctx, token)
	if err != nil {
		return "", fmt.Errorf("Cart(%q) = %w, want nil error", token, err)
	}
	if len(c) != 0 {
		return fmt.Sprintf("Cart(%q) = %v, want empty", token, c), nil
	}
	v, ok, err := s.Value(ctx, token, "flash")
	if err != nil {
		return "", fmt.Errorf("Value(%q, \"flash\") = %w, want nil error", token, err)
	}
	if ok {
		return fmt.Sprintf("Value(%q, \"flash\") = %q, true, want a miss", token, v), nil
	}
	return "", nil
}
