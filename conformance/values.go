package conformance

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/retailkit/retail"
)

var valueTests = []behaviour{
	{name: "Values_SetThenGet", test: testValueSetGet},
	{name: "Values_SetReplaces", test: testValueReplace},
	{name: "Values_EmptyValueRoundTrips", test: testValueEmpty},
	{name: "Values_KeysAreDistinct", test: testValueKeysDistinct},
	{name: "Values_PerSession", test: testValuePerSession},
	{name: "Values_PopReturnsAndDeletes", test: testValuePop},
	{name: "Values_DeleteRemoves", test: testValueDelete},
	{name: "Values_NoSessionRejected", test: testValueNoSession},
	{name: "Values_LimitPerSession", test: testValueLimit},
	{name: "Values_MaxSizeAccepted", test: testValueMaxSize},
	{name: "Values_GoneAfterLogout", test: testValueGoneAfterLogout},
	{name: "Values_GoneAfterExpiry", test: testValueGoneAfterExpiry},
	{name: "Values_GoneAfterCleaning", test: testValueGoneAfterCleaning},
	{name: "Values_ConcurrentPopGetsItOnce", test: testValueConcurrentPop},
	{name: "Values_ReturnedBytesAreCallers", test: testValueReturnedIsCallers},
	{name: "Values_SetValueCopiesValue", test: testValueSetCopies},
}

func testValueSetGet(h *harness) {
	h.start("tok-1", "alice")
	h.setValue("tok-1", "flash", []byte("Saved."))
	h.wantValue("tok-1", "flash", "Saved.")
	h.wantNoValue("tok-1", "step")
	// Values are not a visit, nor views.
	h.wantRecent("tok-1")
	h.wantTop(10)
}

func testValueReplace(h *harness) {
	h.start("tok-1", "alice")
	h.setValue("tok-1", "flash", []byte("first, long"))
	h.setValue("tok-1", "flash", []byte("2nd"))
	h.wantValue("tok-1", "flash", "2nd")
}

func testValueEmpty(h *harness) {
	h.start("tok-1", "alice")
	for _, empty := range [][]byte{{}, nil} {
		h.setValue("tok-1", "flash", empty)
		v, ok := h.value("tok-1", "flash")
		if !ok || v == nil || len(v) != 0 {
			h.t.Errorf(`Value("tok-1", "flash") after SetValue of %#v = %#v, %v, want []byte{}, true`, empty, v, ok)
		}
		v, ok, err := h.s.PopValue(h.ctx, "tok-1", "flash")
		if err != nil || !ok || v == nil || len(v) != 0 {
			h.t.Errorf(`PopValue("tok-1", "flash") of an empty value = %#v, %v, %v, want []byte{}, true, nil`, v, ok, err)
		}
		h.wantNoValue("tok-1", "flash")
	}
}

func testValueKeysDistinct(h *harness) {
	keys := []string{"a", "a:b", "a:", ":a", "{a}", "A", "a ", "ü", "\xff", "*", "flash"}
	h.start("tok-1", "alice")
	for _, key := range keys {
		h.setValue("tok-1", key, []byte("value of "+key))
	}
	for _, key := range keys {
		h.wantValue("tok-1", key, "value of "+key)
	}
	// Value keys and the session's other data do not collide.
	h.addToCart("tok-1", "flash", 1)
	h.wantRefresh("tok-1", "flash", "alice")
	h.wantValue("tok-1", "flash", "value of flash")
	h.wantCart("tok-1", map[string]int{"flash": 1})
}

func testValuePerSession(h *harness) {
	h.start("tok-1", "alice")
	h.start("tok-2", "alice")
	h.setValue("tok-1", "flash", []byte("one"))
	h.setValue("tok-2", "flash", []byte("two"))
	h.wantValue("tok-1", "flash", "one")
	h.wantValue("tok-2", "flash", "two")
	h.logout("tok-1")
	h.wantValue("tok-2", "flash", "two")
}

func testValuePop(h *harness) {
	h.start("tok-1", "alice")
	h.setValue("tok-1", "flash", []byte("Saved."))
	h.setValue("tok-1", "step", []byte("2"))
	v, ok, err := h.s.PopValue(h.ctx, "tok-1", "flash")
	if err != nil || !ok || string(v) != "Saved." {
		h.t.Errorf(`PopValue("tok-1", "flash") = %q, %v, %v, want "Saved.", true, nil`, v, ok, err)
	}
	h.wantNoValue("tok-1", "flash")
	if v, ok, err := h.s.PopValue(h.ctx, "tok-1", "flash"); ok || err != nil {
		h.t.Errorf(`second PopValue("tok-1", "flash") = %q, %v, %v, want a miss: false, nil`, v, ok, err)
	}
	h.wantValue("tok-1", "step", "2")
	if v, ok, err := h.s.PopValue(h.ctx, "never-seen", "flash"); ok || err != nil {
		h.t.Errorf(`PopValue("never-seen", "flash") = %q, %v, %v, want a miss: false, nil`, v, ok, err)
	}
	h.wantCount(1)
}

func testValueDelete(h *harness) {
	h.start("tok-1", "alice")
	h.setValue("tok-1", "flash", []byte("Saved."))
	h.setValue("tok-1", "step", []byte("2"))
	for range 2 {
		if err := h.s.DeleteValue(h.ctx, "tok-1", "flash"); err != nil {
			h.t.Errorf(`DeleteValue("tok-1", "flash") = %v, want nil`, err)
		}
		h.wantNoValue("tok-1", "flash")
	}
	h.wantValue("tok-1", "step", "2")
	if err := h.s.DeleteValue(h.ctx, "never-seen", "flash"); err != nil {
		h.t.Errorf(`DeleteValue("never-seen", "flash") = %v, want nil`, err)
	}
	h.wantNoSession("never-seen")
	h.wantCount(1)
}

func testValueNoSession(h *harness) {
	h.start("tok-gone", "alice")
	h.setValue("tok-gone", "flash", []byte("old"))
	h.logout("tok-gone")
	for _, token := range []string{"never-seen", "tok-gone"} {
		err := h.s.SetValue(h.ctx, token, "flash", []byte("new"))
		h.wantErr(fmt.Sprintf(`SetValue(%q, "flash", "new")`, token), err, retail.ErrNoSession)
		// The failed call did not create a session, nor a value a later
		// session could see.
		h.wantNoSession(token)
		h.start(token, "")
		h.wantNoValue(token, "flash")
	}
}

func testValueLimit(h *harness) {
	h.start("tok-1", "alice")
	h.start("tok-2", "alice")
	keys := seq("key", retail.MaxSessionValues)
	for _, key := range keys {
		h.setValue("tok-1", key, []byte(key))
	}
	err := h.s.SetValue(h.ctx, "tok-1", "one-too-many", []byte("x"))
	h.wantErr(`SetValue("tok-1", "one-too-many", "x") in a full session`, err, retail.ErrInvalid)
	h.wantNoValue("tok-1", "one-too-many")
	for _, key := range keys {
		h.wantValue("tok-1", key, key)
	}
	// Replacing a value of a full session is not a new value.
	h.setValue("tok-1", keys[0], []byte("replaced"))
	h.wantValue("tok-1", keys[0], "replaced")
	// The limit is per session.
	h.setValue("tok-2", "one-too-many", []byte("x"))
	// Making room makes room.
	if err := h.s.DeleteValue(h.ctx, "tok-1", keys[1]); err != nil {
		h.t.Fatalf("DeleteValue(%q, %q) = %v, want nil", "tok-1", keys[1], err)
	}
	h.setValue("tok-1", "one-too-many", []byte("x"))
	h.wantValue("tok-1", "one-too-many", "x")
	err = h.s.SetValue(h.ctx, "tok-1", keys[1], []byte("back"))
	h.wantErr(fmt.Sprintf(`SetValue("tok-1", %q, "back") in a full session`, keys[1]), err, retail.ErrInvalid)
}

func testValueMaxSize(h *harness) {
	h.start("tok-1", "alice")
	v := make([]byte, retail.MaxValueSize)
	for i := range v {
		v[i] = byte(i * 7)
	}
	h.setValue("tok-1", "flash", v)
	got, ok := h.value("tok-1", "flash")
	if !ok || !bytes.Equal(got, v) {
		h.t.Errorf(`Value("tok-1", "flash") of %d bytes = %d bytes, %v, want the bytes set, true`, len(v), len(got), ok)
	}
}

func testValueGoneAfterLogout(h *harness) {
	h.start("tok-1", "alice")
	h.setValue("tok-1", "flash", []byte("old"))
	h.logout("tok-1")
	h.wantNoValue("tok-1", "flash")
	if v, ok, err := h.s.PopValue(h.ctx, "tok-1", "flash"); ok || err != nil {
		h.t.Errorf(`PopValue("tok-1", "flash") after Logout = %q, %v, %v, want a miss: false, nil`, v, ok, err)
	}
	h.start("tok-1", "alice")
	h.wantNoValue("tok-1", "flash")
}

func testValueGoneAfterExpiry(h *harness) {
	h.start("tok-1", "alice")
	h.setValue("tok-1", "flash", []byte("old"))
	h.clock.Advance(h.idle)
	h.wantNoValue("tok-1", "flash")
	if v, ok, err := h.s.PopValue(h.ctx, "tok-1", "flash"); ok || err != nil {
		h.t.Errorf(`PopValue("tok-1", "flash") after expiry = %q, %v, %v, want a miss: false, nil`, v, ok, err)
	}
	h.update("tok-1", "alice", "")
	h.wantNoValue("tok-1", "flash")
}

func testValueGoneAfterCleaning(h *harness) {
	h.start("tok-1", "alice")
	h.setValue("tok-1", "flash", []byte("old"))
	h.wantClean(0, 100, 1)
	h.wantNoValue("tok-1", "flash")
	h.start("tok-1", "alice")
	h.wantNoValue("tok-1", "flash")
}

// testValueConcurrentPop pops one value from many goroutines, round after
// round: many rounds are what give a store whose pop is two steps the
// chance to lose.
func testValueConcurrentPop(h *harness) {
	const rounds, poppers = 1000, 8
	h.start("tok-1", "alice")
	for round := range rounds {
		want := fmt.Sprintf("value %d", round)
		h.setValue("tok-1", "flash", []byte(want))
		var (
			wg    sync.WaitGroup
			ready = make(chan struct{})
			got   atomic.Int64
		)
		for range poppers {
			wg.Go(func() {
				<-ready
				v, ok, err := h.s.PopValue(h.ctx, "tok-1", "flash")
				switch {
				case err != nil:
					h.t.Errorf(`PopValue("tok-1", "flash") = %v, want nil error`, err)
				case ok && string(v) != want:
					h.t.Errorf(`PopValue("tok-1", "flash") = %q, true, want %q`, v, want)
				case ok:
					got.Add(1)
				}
			})
		}
		close(ready)
		wg.Wait()
		if n := got.Load(); n != 1 {
			h.t.Fatalf("%d concurrent PopValues of one value: %d got it, want exactly 1", poppers, n)
		}
		h.wantNoValue("tok-1", "flash")
	}
}

func testValueReturnedIsCallers(h *harness) {
	h.start("tok-1", "alice")
	h.setValue("tok-1", "flash", []byte("value"))
	got, _ := h.value("tok-1", "flash")
	if len(got) != 5 {
		h.t.Fatalf(`Value("tok-1", "flash") = %q, want "value"`, got)
	}
	copy(got, "XXXXX")
	_ = append(got[:0:cap(got)], "YYYYYYYYYY"...)
	h.wantValue("tok-1", "flash", "value")
}

func testValueSetCopies(h *harness) {
	h.start("tok-1", "alice")
	v := []byte("original")
	h.setValue("tok-1", "flash", v)
	copy(v, "CHANGED!")
	h.wantValue("tok-1", "flash", "original")
}
