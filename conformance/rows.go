package conformance

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
)

var rowTests = []behaviour{
	{name: "Rows_UnknownRowMisses", test: testRowUnknown},
	{name: "Rows_SetThenGet", test: testRowSetGet},
	{name: "Rows_SetReplaces", test: testRowReplace},
	{name: "Rows_EmptyDataIsAHit", test: testRowEmpty},
	{name: "Rows_LimitsAccepted", test: testRowLimits},
	{name: "Rows_ReturnedBytesAreCallers", test: testRowReturnedIsCallers},
	{name: "Rows_SetRowCopiesData", test: testRowSetCopies},
	{name: "Rows_NothingDueClaimsNothing", test: testRowNothingDue},
	{name: "Rows_ScheduledRowIsDueAtOnce", test: testRowDueAtOnce},
	{name: "Rows_ScheduleTwiceClaimsOnce", test: testRowScheduleTwice},
	{name: "Rows_ClaimRespectsLimit", test: testRowClaimLimit},
	{name: "Rows_MostOverdueClaimedFirst", test: testRowMostOverdueFirst},
	{name: "Rows_OnlyDueRowsClaimed", test: testRowOnlyDue},
	{name: "Rows_ClaimedAgainEveryDelay", test: testRowEveryDelay},
	{name: "Rows_DelayRoundsUpToTheMillisecond", test: testRowDelayRoundsUp},
	{name: "Rows_RescheduleMakesRowDueNow", test: testRowReschedule},
	{name: "Rows_ScheduleDoesNotWriteCopy", test: testRowScheduleNoCopy},
	{name: "Rows_SetRowDoesNotSchedule", test: testRowSetNoSchedule},
	{name: "Rows_ClaimKeepsCachedCopy", test: testRowClaimKeepsCopy},
	{name: "Rows_UnscheduleWithZeroDelay", test: func(h *harness) { testRowUnschedule(h, 0) }},
	{name: "Rows_UnscheduleWithNegativeDelay", test: func(h *harness) { testRowUnschedule(h, -1) }},
	{name: "Rows_UnscheduleBeforeFirstClaim", test: testRowUnscheduleUnclaimed},
	{name: "Rows_UnscheduleNeverScheduledRowDeletesCopy", test: testRowUnscheduleNeverScheduled},
	{name: "Rows_UnscheduleLeavesOtherRows", test: testRowUnscheduleOthers},
	{name: "Rows_ScheduleAgainAfterUnschedule", test: testRowScheduleAgain},
	{name: "Rows_ConcurrentClaimersNeverShareARow", test: testRowConcurrentClaimers},
	{name: "Rows_SetScheduledRowStoresAScheduledRow", test: testRowSetScheduled},
	{name: "Rows_SetScheduledRowAfterUnscheduleStoresNothing", test: testRowSetScheduledUnscheduled},
	{name: "Rows_SetScheduledRowBeforeTheUnschedulingClaim", test: testRowSetScheduledBeforeClaim},
	{name: "Rows_SetScheduledRowAfterScheduleAgain", test: testRowSetScheduledAgain},
	{name: "Rows_ClaimDeletesEveryCopyItUnschedulesWhateverTheLimit", test: testRowUnscheduleManyLimitOne},
	{name: "Rows_RowCacherDoesNotCacheARowUnscheduledWhileLoading", test: testRowCacherUnscheduledWhileLoading},
}

// testBookRowCaching is the book's row-caching scenario.
func testBookRowCaching(h *harness) {
	const row = "row-1"
	const v1, v2 = `{"id":1,"data":"first"}`, `{"id":1,"data":"second"}`
	h.schedule(row, 5*time.Second)
	h.wantClaim(10, row)
	h.setRow(row, []byte(v1))
	h.wantRow(row, v1)

	h.wantDueAfter(5*time.Second, row)
	h.setRow(row, []byte(v2))
	h.wantRow(row, v2)

	h.schedule(row, -1)
	h.clock.Advance(5 * time.Second)
	h.wantClaim(10)
	h.wantNoRow(row)
}

func testRowUnknown(h *harness) {
	data, ok, err := h.s.Row(h.ctx, "row-1")
	if ok || err != nil {
		h.t.Errorf(`Row("row-1") = %q, %v, %v, want a miss: false, nil`, data, ok, err)
	}
}

func testRowSetGet(h *harness) {
	h.setRow("row-1", []byte(`{"id":1}`))
	h.setRow("row-2", []byte(`{"id":2}`))
	h.wantRow("row-1", `{"id":1}`)
	h.wantRow("row-2", `{"id":2}`)
	h.wantNoRow("row-3")
}

func testRowReplace(h *harness) {
	h.setRow("row-1", []byte(`{"v":"first"}`))
	h.setRow("row-1", []byte(`{"v":2}`))
	h.wantRow("row-1", `{"v":2}`)
}

func testRowEmpty(h *harness) {
	h.setRow("row-1", nil)
	if data, ok := h.row("row-1"); !ok || len(data) != 0 {
		h.t.Errorf(`Row("row-1") = %q, %v, want empty, true`, data, ok)
	}
}

func testRowLimits(h *harness) {
	id := strings.Repeat("r", retail.MaxIDLen)
	data := bytes.Repeat([]byte("[0123456789abcd]"), retail.MaxRowSize/16)
	h.setRow(id, data)
	if got, ok := h.row(id); !ok || !bytes.Equal(got, data) {
		h.t.Errorf("Row(%d-byte id) = %d bytes, %v, want %d bytes, true", len(id), len(got), ok, len(data))
	}

	h.schedule("min", retail.MinDuration)
	h.schedule(id, retail.MaxRowDelay)
	h.wantClaim(10, "min", id)
	h.clock.Advance(retail.MinDuration)
	h.wantClaim(10, "min")
	h.clock.Advance(retail.MaxRowDelay - 2*retail.MinDuration)
	h.wantClaim(10, "min")
	h.clock.Advance(retail.MinDuration)
	h.wantClaim(10, "min", id)
}

func testRowReturnedIsCallers(h *harness) {
	h.setRow("row-1", []byte(`{"id":1}`))
	got, _ := h.row("row-1")
	if len(got) == 0 {
		h.t.Fatalf(`Row("row-1") = %q, want {"id":1}`, got)
	}
	copy(got, "XXXXXXXX")
	h.wantRow("row-1", `{"id":1}`)
}

func testRowSetCopies(h *harness) {
	data := []byte(`{"id":1}`)
	h.setRow("row-1", data)
	copy(data, "XXXXXXXX")
	h.wantRow("row-1", `{"id":1}`)
}

func testRowNothingDue(h *harness) {
	rows, err := h.s.ClaimDueRows(h.ctx, retail.MaxClaimRows)
	if len(rows) != 0 || err != nil {
		h.t.Errorf("ClaimDueRows(%d) = %q, %v, want empty, nil", retail.MaxClaimRows, rows, err)
	}
}

func testRowDueAtOnce(h *harness) {
	h.schedule("row-1", time.Minute)
	h.wantClaim(1, "row-1")
	h.wantClaim(10)
}

func testRowScheduleTwice(h *harness) {
	h.schedule("row-1", time.Minute)
	h.schedule("row-1", time.Minute)
	h.wantClaim(10, "row-1")
	h.wantClaim(10)
}

func testRowClaimLimit(h *harness) {
	rows := seq("row", 5)
	for _, row := range rows {
		h.schedule(row, time.Hour)
		h.clock.Advance(time.Millisecond)
	}
	var all []string
	for _, want := range []int{2, 2, 1, 0} {
		got := h.claim(2)
		if len(got) != want {
			h.t.Errorf("ClaimDueRows(2) = %q, want %d rows", got, want)
		}
		all = append(all, got...)
	}
	slices.Sort(all)
	if diff := cmp.Diff(rows, all, equateEmpty); diff != "" {
		h.t.Errorf("rows claimed by ClaimDueRows(2) until empty mismatch (-want +got):\n%s", diff)
	}
}

func testRowMostOverdueFirst(h *harness) {
	// Names in reverse order, so that name order cannot pass for age order.
	for _, row := range []string{"row-c", "row-b", "row-a"} {
		h.schedule(row, time.Hour)
		h.clock.Advance(time.Second)
	}
	h.wantClaim(1, "row-c")
	h.wantClaim(1, "row-b")
	h.wantClaim(1, "row-a")
}

func testRowOnlyDue(h *harness) {
	h.schedule("row-a", 10*time.Second)
	h.wantClaim(10, "row-a")
	h.clock.Advance(5 * time.Second)
	h.schedule("row-b", 10*time.Second)
	h.wantClaim(10, "row-b")
	h.clock.Advance(5 * time.Second)
	h.wantClaim(10, "row-a")
	h.clock.Advance(5 * time.Second)
	h.wantClaim(10, "row-b")
}

func testRowEveryDelay(h *harness) {
	h.schedule("row-1", 5*time.Second)
	h.wantClaim(10, "row-1")
	for range 3 {
		h.wantDueAfter(5*time.Second, "row-1")
	}
	// A claim late by 2 s reschedules from the claim, not from when the
	// row was due.
	h.clock.Advance(7 * time.Second)
	h.wantClaim(10, "row-1")
	h.wantDueAfter(5*time.Second, "row-1")
}

// A claimed row is due again its delay later, not sooner, however fine
// the delay: a Store that keeps whole milliseconds rounds it up.
func testRowDelayRoundsUp(h *harness) {
	h.schedule("row-1", 1500*time.Microsecond)
	h.wantClaim(10, "row-1")
	h.clock.Advance(time.Millisecond)
	h.wantClaim(10)
	h.clock.Advance(time.Millisecond)
	h.wantClaim(10, "row-1")
}

func testRowReschedule(h *harness) {
	h.schedule("row-1", time.Hour)
	h.wantClaim(10, "row-1")
	h.clock.Advance(time.Second)
	h.wantClaim(10)
	h.schedule("row-1", 10*time.Second)
	h.wantClaim(10, "row-1")
	h.wantDueAfter(10*time.Second, "row-1")
}

func testRowScheduleNoCopy(h *harness) {
	h.schedule("row-1", time.Minute)
	h.wantNoRow("row-1")
	h.wantClaim(10, "row-1")
	h.wantNoRow("row-1")

	// Scheduling a cached row keeps its copy.
	h.setRow("row-2", []byte(`{"id":2}`))
	h.schedule("row-2", time.Minute)
	h.wantRow("row-2", `{"id":2}`)
}

func testRowSetNoSchedule(h *harness) {
	h.setRow("row-1", []byte(`{"id":1}`))
	h.wantClaim(10)
	h.clock.Advance(retail.MaxRowDelay)
	h.wantClaim(10)
	h.wantRow("row-1", `{"id":1}`)
}

func testRowClaimKeepsCopy(h *harness) {
	h.schedule("row-1", time.Minute)
	h.wantClaim(10, "row-1")
	h.setRow("row-1", []byte(`{"v":1}`))
	h.clock.Advance(time.Minute)
	h.wantClaim(10, "row-1")
	h.wantRow("row-1", `{"v":1}`)
}

// testRowUnschedule unschedules a claimed row whose next refresh is far
// off: whatever the delay, scheduling makes the row due now, so the very
// next claim deletes its copy.
func testRowUnschedule(h *harness, delay time.Duration) {
	h.schedule("row-1", time.Hour)
	h.wantClaim(10, "row-1")
	h.setRow("row-1", []byte(`{"id":1}`))
	h.schedule("row-1", delay)
	h.wantClaim(10)
	h.wantNoRow("row-1")
	for range 3 {
		h.clock.Advance(time.Hour)
		h.wantClaim(10)
	}
	h.wantNoRow("row-1")
}

func testRowUnscheduleUnclaimed(h *harness) {
	h.setRow("row-1", []byte(`{"id":1}`))
	h.schedule("row-1", 5*time.Second)
	h.schedule("row-1", 0)
	h.wantClaim(10)
	h.wantNoRow("row-1")
}

func testRowUnscheduleNeverScheduled(h *harness) {
	h.setRow("row-1", []byte(`{"id":1}`))
	h.setRow("row-2", []byte(`{"id":2}`))
	h.schedule("row-1", -1)
	h.wantClaim(10)
	h.wantNoRow("row-1")
	h.wantRow("row-2", `{"id":2}`)
}

func testRowUnscheduleOthers(h *harness) {
	h.schedule("row-a", time.Hour)
	h.schedule("row-b", time.Hour)
	h.wantClaim(10, "row-a", "row-b")
	h.setRow("row-a", []byte(`{"id":"a"}`))
	h.setRow("row-b", []byte(`{"id":"b"}`))
	h.setRow("row-c", []byte(`{"id":"c"}`))
	h.schedule("row-a", 0)
	h.wantClaim(10)
	h.clock.Advance(time.Hour)
	h.wantClaim(10, "row-b")
	h.wantNoRow("row-a")
	h.wantRow("row-b", `{"id":"b"}`)
	h.wantRow("row-c", `{"id":"c"}`)
}

func testRowScheduleAgain(h *harness) {
	h.schedule("row-1", 5*time.Second)
	h.wantClaim(10, "row-1")
	h.schedule("row-1", -time.Second)
	h.wantClaim(10)
	h.schedule("row-1", 5*time.Second)
	h.wantClaim(10, "row-1")
	h.clock.Advance(5 * time.Second)
	h.wantClaim(10, "row-1")
}

// testRowConcurrentClaimers has eight claimers drain many due rows at once:
// within one period every row is claimed exactly once.
func testRowConcurrentClaimers(h *harness) {
	const claimers, limit = 8, 7
	rows := seq("row", 1000)
	for _, row := range rows {
		h.schedule(row, time.Hour)
	}
	claimed := make([][]string, claimers)
	var wg sync.WaitGroup
	for i := range claimers {
		wg.Go(func() {
			for {
				got, err := h.s.ClaimDueRows(h.ctx, limit)
				if err != nil {
					h.t.Errorf("ClaimDueRows(%d) = %v, want nil error", limit, err)
					return
				}
				if len(got) > limit {
					h.t.Errorf("ClaimDueRows(%d) returned %d rows", limit, len(got))
				}
				if len(got) == 0 {
					return
				}
				claimed[i] = append(claimed[i], got...)
			}
		})
	}
	wg.Wait()
	all := slices.Concat(claimed...)
	slices.Sort(all)
	if diff := cmp.Diff(rows, all, equateEmpty); diff != "" {
		h.t.Errorf("rows claimed by %d concurrent claimers mismatch (-want +got: a row twice is a double claim):\n%s", claimers, diff)
	}
	h.wantClaim(limit)
}

// setScheduledRow calls SetScheduledRow and checks whether it stored.
func (h *harness) setScheduledRow(row, data string, want bool) {
	h.t.Helper()
	stored, err := h.s.SetScheduledRow(h.ctx, row, []byte(data))
	if err != nil || stored != want {
		h.t.Fatalf("SetScheduledRow(%q) = %v, %v, want %v, nil", row, stored, err, want)
	}
}

// testRowSetScheduled stores a scheduled row, claimed or not, and leaves a
// row never scheduled without a copy, a copy SetRow stored included.
func testRowSetScheduled(h *harness) {
	h.schedule("row-1", time.Minute)
	h.setScheduledRow("row-1", `{"v":1}`, true)
	h.wantRow("row-1", `{"v":1}`)
	h.wantClaim(10, "row-1")
	h.setScheduledRow("row-1", `{"v":2}`, true)
	h.wantRow("row-1", `{"v":2}`)

	h.setRow("row-2", []byte(`{"v":1}`))
	h.setScheduledRow("row-2", `{"v":2}`, false)
	h.wantNoRow("row-2")
	h.wantClaim(10)
}

// testRowSetScheduledUnscheduled is a RowCacher's load that ends after the
// row was unscheduled and the claim that unscheduled it deleted its copy:
// the load's data is not cached again.
func testRowSetScheduledUnscheduled(h *harness) {
	h.schedule("row-1", time.Minute)
	h.wantClaim(10, "row-1")
	h.setScheduledRow("row-1", `{"v":1}`, true)
	// Another load of row-1 starts here, and while it loads:
	h.schedule("row-1", 0)
	h.wantClaim(10)
	h.wantNoRow("row-1")
	h.setScheduledRow("row-1", `{"v":2}`, false)
	h.wantNoRow("row-1")
	for range 2 {
		h.clock.Advance(time.Hour)
		h.wantClaim(10)
		h.wantNoRow("row-1")
	}
}

// testRowSetScheduledBeforeClaim stores a row whose unscheduling is not
// claimed yet: it is stored, and the claim deletes it.
func testRowSetScheduledBeforeClaim(h *harness) {
	h.schedule("row-1", time.Minute)
	h.wantClaim(10, "row-1")
	h.schedule("row-1", -1)
	h.setScheduledRow("row-1", `{"v":1}`, true)
	h.wantClaim(10)
	h.wantNoRow("row-1")
}

// testRowSetScheduledAgain stores a row scheduled again after a claim
// unscheduled it.
func testRowSetScheduledAgain(h *harness) {
	h.schedule("row-1", time.Minute)
	h.wantClaim(10, "row-1")
	h.schedule("row-1", 0)
	h.wantClaim(10)
	h.schedule("row-1", time.Minute)
	h.setScheduledRow("row-1", `{"v":1}`, true)
	h.wantClaim(10, "row-1")
	h.wantRow("row-1", `{"v":1}`)
}

// testRowUnscheduleManyLimitOne unschedules five rows with copies and
// claims with a limit of one: every copy goes in that claim.
func testRowUnscheduleManyLimitOne(h *harness) {
	for i := range 5 {
		row := "row-" + strconv.Itoa(i)
		h.schedule(row, time.Hour)
		h.setRow(row, []byte(`{}`))
	}
	for range 5 {
		h.claim(1)
	}
	for i := range 5 {
		h.schedule("row-"+strconv.Itoa(i), 0)
	}
	h.wantClaim(1)
	for i := range 5 {
		h.wantNoRow("row-" + strconv.Itoa(i))
	}
}

// testRowCacherUnscheduledWhileLoading runs a RowCacher whose load of a
// row blocks until the test has unscheduled the row and claimed it away:
// once the load returns, the row must not be cached again, and the
// refresh must not count.
func testRowCacherUnscheduledWhileLoading(h *harness) {
	const row = "row-1"
	loading, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	load := func(ctx context.Context, r string) (any, error) {
		once.Do(func() { close(loading) })
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return map[string]string{"row": r}, nil
	}
	s := &storesSignalled{Store: h.s, stored: make(chan bool, 1), setRow: make(chan struct{}, 1)}
	c, err := retail.NewRowCacher(s, load, retail.RowCacherOptions{Poll: time.Millisecond})
	if err != nil {
		h.t.Fatal(err)
	}
	h.schedule(row, time.Hour)
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			h.t.Errorf("RowCacher.Run = %v, want nil", err)
		}
	}()
	before := h.s.Stats().RowsRefreshed
	wait := func(what string, ch <-chan struct{}) {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			h.t.Fatalf("the RowCacher did not %s in 30 s", what)
		}
	}
	wait("load the scheduled row", loading)
	h.schedule(row, 0)
	h.wantClaim(10)
	close(release)
	select {
	case stored := <-s.stored:
		if stored {
			h.t.Error("SetScheduledRow stored a row unscheduled while it loaded")
		}
	case <-s.setRow:
		h.t.Error("the RowCacher stored the row it loaded with SetRow, which ignores the schedule")
	case <-time.After(30 * time.Second):
		h.t.Fatal("the RowCacher did not store the row it loaded in 30 s")
	}
	h.wantNoRow(row)
	if got := h.s.Stats().RowsRefreshed - before; got != 0 {
		h.t.Errorf("RowsRefreshed went up by %d for a row unscheduled while it loaded, want 0", got)
	}
}

// storesSignalled is a Store that tells, on stored, what a
// SetScheduledRow answered, and on setRow that a SetRow returned.
type storesSignalled struct {
	retail.Store
	stored chan bool
	setRow chan struct{}
}

func (s *storesSignalled) SetScheduledRow(ctx context.Context, row string, data []byte) (bool, error) {
	stored, err := s.Store.SetScheduledRow(ctx, row, data)
	select {
	case s.stored <- stored:
	case <-ctx.Done():
	}
	return stored, err
}

func (s *storesSignalled) SetRow(ctx context.Context, row string, data []byte) error {
	err := s.Store.SetRow(ctx, row, data)
	select {
	case s.setRow <- struct{}{}:
	case <-ctx.Done():
	}
	return err
}
