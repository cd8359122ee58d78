package retail_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
)

// recordingSessions records what each cleaning pass removed, and fails the
// first failures passes.
type recordingSessions struct {
	retail.Store
	failWith error

	mu       sync.Mutex
	failures int
	removed  []int // per successful pass
}

func (s *recordingSessions) CleanSessions(ctx context.Context, keep, max int) (int, error) {
	s.mu.Lock()
	if s.failures > 0 {
		s.failures--
		s.mu.Unlock()
		return 0, s.failWith
	}
	s.mu.Unlock()
	n, err := s.Store.CleanSessions(ctx, keep, max)
	if err == nil {
		s.mu.Lock()
		s.removed = append(s.removed, n)
		s.mu.Unlock()
	}
	return n, err
}

func (s *recordingSessions) passes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.removed...)
}

// addSessions creates n sessions seen one millisecond apart, oldest first,
// and returns their tokens in that order.
func addSessions(t *testing.T, s retail.Sessions, clock *retail.ManualClock, n int) []string {
	t.Helper()
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = fmt.Sprintf("token%02d", i)
		if err := s.UpdateToken(context.Background(), tokens[i], "user", ""); err != nil {
			t.Fatalf("UpdateToken(%q) = %v", tokens[i], err)
		}
		clock.Advance(time.Millisecond)
	}
	return tokens
}

// newCleaner returns a SessionCleaner, failing the test if the options are
// refused.
func newCleaner(t *testing.T, s retail.Store, opts retail.SessionCleanerOptions) *retail.SessionCleaner {
	t.Helper()
	c, err := retail.NewSessionCleaner(s, opts)
	if err != nil {
		t.Fatalf("NewSessionCleaner(%+v) = %v", opts, err)
	}
	return c
}

func sessionCount(t *testing.T, s retail.Sessions) int {
	t.Helper()
	n, err := s.SessionCount(context.Background())
	if err != nil {
		t.Fatalf("SessionCount = %v", err)
	}
	return n
}

// liveTokens returns which of tokens still have a session.
func liveTokens(t *testing.T, s retail.Sessions, tokens []string) []string {
	t.Helper()
	var live []string
	for _, token := range tokens {
		_, ok, err := s.CheckToken(context.Background(), token)
		if err != nil {
			t.Fatalf("CheckToken(%q) = %v", token, err)
		}
		if ok {
			live = append(live, token)
		}
	}
	return live
}

func TestSessionCleaner_KeepsNewest(t *testing.T) {
	s, clock := newStore(t)
	tokens := addSessions(t, s, clock, 10)
	rec := &recordingSessions{Store: s}
	// An hour's idle: the test finishes only if passes with a backlog
	// follow each other at once.
	stop := start(t, newCleaner(t, rec, retail.SessionCleanerOptions{Keep: 3, Batch: 2, Idle: time.Hour}))
	eventually(t, "3 sessions to be left", func() bool { return sessionCount(t, s) == 3 })
	if err := stop(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}

	if diff := cmp.Diff(tokens[7:], liveTokens(t, s, tokens)); diff != "" {
		t.Errorf("live sessions mismatch (-want +got):\n%s", diff)
	}
	passes := rec.passes()
	if len(passes) < 4 {
		t.Errorf("passes = %v, want at least 4 to remove 7 sessions 2 at a time", passes)
	}
	for i, n := range passes {
		if n > 2 {
			t.Errorf("pass %d removed %d sessions, want at most Batch = 2", i+1, n)
		}
	}
}

func TestSessionCleaner_LogsAndRetriesErrors(t *testing.T) {
	s, clock := newStore(t)
	addSessions(t, s, clock, 5)
	rec := &recordingSessions{Store: s, failWith: errors.New("store hiccup"), failures: 2}
	var logs logRecorder
	stop := start(t, newCleaner(t, rec, retail.SessionCleanerOptions{
		Keep: 2, Idle: time.Millisecond, Logger: logs.Logger(),
	}))
	eventually(t, "2 sessions to be left", func() bool { return sessionCount(t, s) == 2 })
	if err := stop(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	if got := logs.String(); strings.Count(got, "store hiccup") != 2 {
		t.Errorf("log = %q, want the error logged twice", got)
	}
}

func TestSessionCleaner_ReturnsNilOnCancel(t *testing.T) {
	s, _ := newStore(t)
	rec := &recordingSessions{Store: s}
	stop := start(t, newCleaner(t, rec, retail.SessionCleanerOptions{Idle: time.Hour}))
	eventually(t, "a first pass", func() bool { return len(rec.passes()) > 0 })
	// The cleaner is now idle for an hour; canceling must end that wait.
	if err := stop(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestSessionCleaner_ReturnsErrClosed(t *testing.T) {
	s, _ := newStore(t)
	c := newCleaner(t, s, retail.SessionCleanerOptions{})
	s.Close()
	wantClosedError(t, "Run on a closed store", runToEnd(t, c), "Claim") // a cleaner asks for its turn first
}

func TestNewSessionCleaner_RejectsInvalidOptions(t *testing.T) {
	s, _ := newStore(t)
	for _, tc := range []struct {
		opts retail.SessionCleanerOptions
		arg  string
	}{
		{retail.SessionCleanerOptions{Keep: -1}, "Keep"},
		{retail.SessionCleanerOptions{Batch: -1}, "Batch"},
		{retail.SessionCleanerOptions{Idle: -time.Nanosecond}, "Idle"},
		{retail.SessionCleanerOptions{RepairEvery: -time.Second}, "RepairEvery"},
	} {
		c, err := retail.NewSessionCleaner(s, tc.opts)
		wantInputError(t, fmt.Sprintf("NewSessionCleaner(%+v)", tc.opts), err, "NewSessionCleaner", tc.arg)
		if c != nil {
			t.Errorf("NewSessionCleaner(%+v) returned a cleaner with its error", tc.opts)
		}
	}
}

func TestNewSessionCleaner_RejectsNilStore(t *testing.T) {
	c, err := retail.NewSessionCleaner(nil, retail.SessionCleanerOptions{})
	wantInputError(t, "NewSessionCleaner(nil, ...)", err, "NewSessionCleaner", "store")
	if c != nil {
		t.Errorf("NewSessionCleaner(nil, ...) returned a cleaner with its error")
	}
}

// repairCounting counts the cleaning passes and the repairs made over a
// Store, failing the first failures repairs.
type repairCounting struct {
	retail.Store
	mu       sync.Mutex
	passes   int
	repairs  int // attempts, failed ones included
	failures int
}

func (s *repairCounting) CleanSessions(ctx context.Context, keep, max int) (int, error) {
	s.mu.Lock()
	s.passes++
	s.mu.Unlock()
	return s.Store.CleanSessions(ctx, keep, max)
}

func (s *repairCounting) RepairSessions(ctx context.Context) (int, error) {
	s.mu.Lock()
	s.repairs++
	fail := s.failures > 0
	if fail {
		s.failures--
	}
	s.mu.Unlock()
	if fail {
		return 0, errors.New("node down")
	}
	return s.Store.RepairSessions(ctx)
}

func (s *repairCounting) counts() (passes, repairs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.passes, s.repairs
}

// TestSessionCleaner_RepairsOncePerPeriod runs three cleaners over one
// Store, passing every millisecond: one repair is made when they start, none
// more within the same RepairEvery period however many passes they make,
// and one when the clock enters the next period.
func TestSessionCleaner_RepairsOncePerPeriod(t *testing.T) {
	s, clock := newStore(t)
	rep := &repairCounting{Store: s}
	opts := retail.SessionCleanerOptions{Idle: time.Millisecond, RepairEvery: time.Hour, Clock: clock}
	var stops []func() error
	for range 3 {
		stops = append(stops, start(t, newCleaner(t, rep, opts)))
	}
	repairs := func() int { _, r := rep.counts(); return r }
	passes := func() int { p, _ := rep.counts(); return p }
	eventually(t, "a first repair", func() bool { return repairs() >= 1 })
	before := passes()
	eventually(t, "more passes", func() bool { clock.Advance(time.Millisecond); return passes() >= before+30 })
	if n := repairs(); n != 1 {
		t.Errorf("%d repairs by 3 cleaners within one period, want 1", n)
	}
	clock.Advance(time.Hour)
	eventually(t, "a second repair in the next period", func() bool { return repairs() == 2 })
	before = passes()
	eventually(t, "more passes", func() bool { clock.Advance(time.Millisecond); return passes() >= before+30 })
	if n := repairs(); n != 2 {
		t.Errorf("%d repairs by 3 cleaners over two periods, want 2", n)
	}
	for _, stop := range stops {
		if err := stop(); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	}
}

// TestSessionCleaner_RetriesAFailedRepair: a repair that fails is logged
// and retried a minute later, not at every pass nor only in the next period.
func TestSessionCleaner_RetriesAFailedRepair(t *testing.T) {
	s, clock := newStore(t)
	rep := &repairCounting{Store: s, failures: 1}
	var logs logRecorder
	stop := start(t, newCleaner(t, rep, retail.SessionCleanerOptions{
		Idle: time.Millisecond, RepairEvery: time.Hour, Clock: clock, Logger: logs.Logger(),
	}))
	repairs := func() int { _, r := rep.counts(); return r }
	passes := func() int { p, _ := rep.counts(); return p }
	eventually(t, "a first repair", func() bool { return repairs() == 1 })
	before := passes()
	eventually(t, "more passes", func() bool { return passes() >= before+20 })
	if n := repairs(); n != 1 {
		t.Errorf("%d repairs within a minute of a failed one, want 1", n)
	}
	clock.Advance(time.Minute)
	eventually(t, "the repair retried", func() bool { return repairs() == 2 })
	before = passes()
	eventually(t, "more passes", func() bool { return passes() >= before+20 })
	if n := repairs(); n != 2 {
		t.Errorf("%d repairs after a successful retry within the period, want 2", n)
	}
	if err := stop(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	if got := logs.String(); strings.Count(got, "node down") != 1 {
		t.Errorf("log = %q, want the failure logged once", got)
	}
}
