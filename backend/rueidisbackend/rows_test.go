package rueidisbackend_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// The row calls of several steps (see SetScheduledRow and ClaimDueRows in
// rows.go), with something else happening between the steps: another
// process unscheduling the row, a caller giving up, a failed delete. Each
// test ends with what the book promises: an unscheduled row has no copy.

// TestRows_AClaimBetweenTheStepsOfSetScheduledRowLeavesNoCopy unschedules
// and claims a row from another Store right after SetScheduledRow's SET,
// and right after its read of the schedule.
func TestRows_AClaimBetweenTheStepsOfSetScheduledRowLeavesNoCopy(t *testing.T) {
	for _, step := range []string{"SET", "ZSCORE"} {
		t.Run("after"+step, func(t *testing.T) {
			eachRig(t, func(t *testing.T, r *rowsRig) {
				r.claimed()
				r.c.after(step, func() {
					r.scheduleFrom(r.other, 0)
					if _, err := r.other.ClaimDueRows(bg, 10); err != nil {
						t.Error(err)
					}
				})
				// Unscheduled before its read of the schedule, the row is
				// not stored; after it, it was, and the claim deletes it.
				stored, err := r.s.SetScheduledRow(bg, r.row, []byte(`{"v":1}`))
				if err != nil || stored != (step == "ZSCORE") {
					t.Fatalf("SetScheduledRow = %v, %v, want %v, nil", stored, err, step == "ZSCORE")
				}
				if !r.c.ran() {
					t.Fatalf("no %s was sent", step)
				}
				r.wantNoCopy()
				r.wantNoRow()
			})
		})
	}
}

// TestRows_ASetScheduledRowThatFailsAfterItsSetLeavesNoCopy gives up on a
// SetScheduledRow of a row already unscheduled once its SET is answered:
// the copy it stored must still go, and before Close returns if the Store
// is closed at once.
func TestRows_ASetScheduledRowThatFailsAfterItsSetLeavesNoCopy(t *testing.T) {
	for _, closing := range []bool{false, true} {
		t.Run(fmt.Sprintf("closing=%v", closing), func(t *testing.T) {
			eachRig(t, func(t *testing.T, r *rowsRig) {
				r.claimed()
				r.schedule(0)
				r.wantClaim()
				ctx, cancel := context.WithCancel(bg)
				r.c.after("SET", cancel)
				if _, err := r.s.SetScheduledRow(ctx, r.row, []byte(`{"v":1}`)); !errors.Is(err, context.Canceled) {
					t.Fatalf("SetScheduledRow with its context cancelled after the SET = %v, want context.Canceled", err)
				}
				if closing {
					r.s.Close()
					r.wantNoCopy()
					return
				}
				rueidisbackend.WaitCleanups(r.s)
				r.wantNoCopy()
				r.wantNoRow()
			})
		})
	}
}

// TestRows_AFailedSetScheduledRowWhoseDeleteFailsLeavesTheCopyToAClaim
// gives up on a SetScheduledRow of a row already unscheduled once its SET
// is answered, and fails the delete that follows it: a later claim must
// delete the copy.
func TestRows_AFailedSetScheduledRowWhoseDeleteFailsLeavesTheCopyToAClaim(t *testing.T) {
	eachRig(t, func(t *testing.T, r *rowsRig) {
		r.claimed()
		r.schedule(0)
		r.wantClaim()
		ctx, cancel := context.WithCancel(bg)
		r.c.after("SET", func() {
			cancel()
			r.c.failDel(r.key)
		})
		if _, err := r.s.SetScheduledRow(ctx, r.row, []byte(`{"v":1}`)); !errors.Is(err, context.Canceled) {
			t.Fatalf("SetScheduledRow with its context cancelled after the SET = %v, want context.Canceled", err)
		}
		r.s.Close() // waits for the delete that fails
		if !r.copied() {
			t.Fatal("the copy went though its delete failed")
		}
		if got, err := r.other.ClaimDueRows(bg, 10); err != nil || len(got) != 0 {
			t.Fatalf("ClaimDueRows = %q, %v, want none, nil", got, err)
		}
		r.wantNoCopy()
	})
}

// TestRows_AClaimWhoseDeleteFailedLeavesTheCopyToTheNext fails the delete
// of an unscheduled row's copy: the claim still returns the rows it
// claimed, and the next claim deletes the copy.
func TestRows_AClaimWhoseDeleteFailedLeavesTheCopyToTheNext(t *testing.T) {
	eachRig(t, func(t *testing.T, r *rowsRig) {
		r.claimed()
		r.store(`{"v":1}`)
		r.schedule(0)
		r.scheduleRow("other-row", time.Hour)
		r.c.failDel(r.key)
		r.wantClaim("other-row")
		if !r.copied() {
			t.Fatal("the copy went though its delete failed")
		}
		r.wantClaim()
		r.wantNoCopy()
	})
}

// TestRows_ARowScheduledAgainKeepsItsNewCopy schedules a row again after
// a claim failed to delete its copy, and stores it: the next claim must
// not delete the new copy.
func TestRows_ARowScheduledAgainKeepsItsNewCopy(t *testing.T) {
	eachRig(t, func(t *testing.T, r *rowsRig) {
		r.claimed()
		r.store(`{"v":1}`)
		r.schedule(0)
		r.c.failDel(r.key)
		r.wantClaim()
		r.schedule(time.Hour)
		r.store(`{"v":2}`)
		r.wantClaim(r.row)
		if !r.copied() {
			t.Fatal("a claim deleted the copy of a row scheduled again")
		}
	})
}

// TestRows_AClaimDoesNotClearAnotherClaimsDrop runs, between a claim's
// delete of an unscheduled row's copy and its clearing of the row from
// dropped, everything that makes another claim drop the row again (it is
// scheduled, claimed, stored and unscheduled) with that claim's delete
// failing: the first claim must leave the row to later ones.
func TestRows_AClaimDoesNotClearAnotherClaimsDrop(t *testing.T) {
	eachRig(t, func(t *testing.T, r *rowsRig) {
		r.claimed()
		r.store(`{"v":1}`)
		r.schedule(0)
		r.c.after("DEL", func() {
			r.scheduleFrom(r.other, time.Hour)
			if got, err := r.other.ClaimDueRows(bg, 10); err != nil || !slices.Equal(got, []string{r.row}) {
				t.Errorf("the other Store's ClaimDueRows = %q, %v, want %q", got, err, r.row)
			}
			if stored, err := r.other.SetScheduledRow(bg, r.row, []byte(`{"v":2}`)); !stored || err != nil {
				t.Errorf("the other Store's SetScheduledRow = %v, %v, want true, nil", stored, err)
			}
			r.scheduleFrom(r.other, 0)
			r.c.failDel(r.key)
			r.wantClaim()
		})
		r.wantClaim()
		if !r.c.ran() {
			t.Fatal("no DEL was sent")
		}
		r.wantClaim()
		r.wantNoCopy()
	})
}

// TestRows_ACopyThatCannotBeDeletedLosesNoClaims fails every delete of one
// unscheduled row's copy: the claims of other rows go on.
func TestRows_ACopyThatCannotBeDeletedLosesNoClaims(t *testing.T) {
	eachRig(t, func(t *testing.T, r *rowsRig) {
		r.schedule(0)
		r.c.failDel(r.key)
		r.c.failDelAlways()
		r.wantClaim()
		for i := range 3 {
			row := fmt.Sprintf("good-%d", i)
			r.scheduleRow(row, time.Hour)
			r.wantClaim(row)
		}
	})
}

// rowsRig is a Store on a client that can step in between commands,
// another Store on the same keys, and a row.
type rowsRig struct {
	t        *testing.T
	c        *steppingClient
	raw      rueidis.Client
	s, other *rueidisbackend.Store
	row, key string
}

// eachRig runs test on each target (see forEachTarget), on a rig of its
// own.
func eachRig(t *testing.T, test func(t *testing.T, r *rowsRig)) {
	forEachTarget(t, func(t *testing.T, tg target) { test(t, newRowsRig(t, tg)) })
}

func newRowsRig(t *testing.T, tg target) *rowsRig {
	raw, prefix := tg.client(t, rueidis.ClientOption{})
	c := &steppingClient{Client: raw}
	return &rowsRig{
		t: t, c: c, raw: raw,
		s:     mustNew(t, c, rueidisbackend.Options{Prefix: prefix}),
		other: mustNew(t, raw, rueidisbackend.Options{Prefix: prefix}),
		row:   "row-1", key: prefix + "row:row-1",
	}
}

// claimed schedules the row every hour and claims it, as a RowCacher does
// before it loads the row.
func (r *rowsRig) claimed() {
	r.t.Helper()
	r.schedule(time.Hour)
	r.wantClaim(r.row)
}

func (r *rowsRig) schedule(delay time.Duration) { r.t.Helper(); r.scheduleFrom(r.s, delay) }

func (r *rowsRig) scheduleFrom(s retail.Store, delay time.Duration) {
	r.t.Helper()
	if err := s.ScheduleRowCache(bg, r.row, delay); err != nil {
		r.t.Fatalf("ScheduleRowCache(%v) = %v", delay, err)
	}
}

func (r *rowsRig) scheduleRow(row string, delay time.Duration) {
	r.t.Helper()
	if err := r.s.ScheduleRowCache(bg, row, delay); err != nil {
		r.t.Fatalf("ScheduleRowCache(%q, %v) = %v", row, delay, err)
	}
}

// store stores data as the row's copy, which must be stored.
func (r *rowsRig) store(data string) {
	r.t.Helper()
	if stored, err := r.s.SetScheduledRow(bg, r.row, []byte(data)); !stored || err != nil {
		r.t.Fatalf("SetScheduledRow of a scheduled row = %v, %v, want true, nil", stored, err)
	}
}

func (r *rowsRig) wantClaim(want ...string) {
	r.t.Helper()
	got, err := r.s.ClaimDueRows(bg, 10)
	if err != nil || !slices.Equal(got, want) {
		r.t.Fatalf("ClaimDueRows = %q, %v, want %q, nil", got, err, want)
	}
}

// copied reports whether the server holds a copy of the row.
func (r *rowsRig) copied() bool {
	r.t.Helper()
	err := r.raw.Do(bg, r.raw.B().Get().Key(r.key).Build()).Error()
	if err != nil && !rueidis.IsRedisNil(err) {
		r.t.Fatal(err)
	}
	return err == nil
}

// wantNoRow checks that the Store's Row, through its client-side cache,
// finds no copy either.
func (r *rowsRig) wantNoRow() {
	r.t.Helper()
	if data, ok, err := r.s.Row(bg, r.row); ok || err != nil {
		r.t.Fatalf("Row = %q, %v, %v, want a miss", data, ok, err)
	}
}

func (r *rowsRig) wantNoCopy() {
	r.t.Helper()
	if r.copied() {
		r.t.Fatal("the server holds a copy of the unscheduled row")
	}
}

var errInjected = errors.New("injected failure")

// steppingClient runs a hook once, after the first command it names has
// been answered, and answers a DEL of a key it names with errInjected,
// once or always, instead of sending it.
type steppingClient struct {
	rueidis.Client
	mu      sync.Mutex
	name    string
	hook    func()
	hooked  bool
	del     string
	delKeep bool
}

func (c *steppingClient) after(name string, hook func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.name, c.hook, c.hooked = name, hook, false
}

func (c *steppingClient) ran() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hooked
}

func (c *steppingClient) failDel(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.del, c.delKeep = key, false
}

func (c *steppingClient) failDelAlways() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.delKeep = true
}

func (c *steppingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	args := cmd.Commands() // rueidis reuses them once cmd is sent
	name := args[0]
	c.mu.Lock()
	fail := c.del != "" && len(args) == 2 && args[0] == "DEL" && args[1] == c.del
	if fail && !c.delKeep {
		c.del = ""
	}
	c.mu.Unlock()
	if fail {
		return rueidis.NewResult(rueidis.RedisMessage{}, errInjected)
	}
	res := c.Client.Do(ctx, cmd)
	c.mu.Lock()
	var hook func()
	if !c.hooked && c.hook != nil && name == c.name {
		hook, c.hooked = c.hook, true
	}
	c.mu.Unlock()
	if hook != nil {
		hook()
	}
	return res
}

// DoMulti sends each command on its own, so that Do sees them.
func (c *steppingClient) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	out := make([]rueidis.RedisResult, len(cmds))
	for i, cmd := range cmds {
		out[i] = c.Do(ctx, cmd)
	}
	return out
}
