package conformance

import (
	"context"
	"errors"

	"github.com/retailkit/retail"
)

// The input rules, ended contexts, Close and the wrapping of errors belong
// to retail.NewStore, the front door every backend's Store goes through;
// package retail tests them, case by case, over a fake driver. The suite
// only checks that the store under test has that front door.
var frontDoorTests = []behaviour{
	{name: "FrontDoor", test: testFrontDoor},
}

// testFrontDoor checks one of each thing retail.NewStore does: an invalid
// argument and a canceled context are refused with its errors and write
// nothing, a driver's statuses become its errors, calls after Close fail
// with ErrClosed, and Close is idempotent.
func testFrontDoor(h *harness) {
	seed(h)
	before := h.state()

	const invalid = `UpdateToken("tok-a", "mallory", "item\n3")`
	err := h.s.UpdateToken(h.ctx, "tok-a", "mallory", "item\n3")
	var ie *retail.InputError
	if !errors.As(err, &ie) || ie.Op != "UpdateToken" || ie.Arg != "item" {
		h.t.Errorf(`%s = %v, want retail.NewStore's *retail.InputError{Op: "UpdateToken", Arg: "item"}`, invalid, err)
	}

	const canceled = `UpdateToken("tok-a", "mallory", "item-3") with a canceled context`
	ctx, cancel := context.WithCancel(h.ctx)
	cancel()
	err = h.s.UpdateToken(ctx, "tok-a", "mallory", "item-3")
	wantOpError(h, canceled, err, "UpdateToken", context.Canceled)

	// The driver reports a missing session or a taken token as a status;
	// the front door turns it into the Store's error.
	const noSession = `SetValue("tok-new", "flash", "x")`
	err = h.s.SetValue(h.ctx, "tok-new", "flash", []byte("x"))
	wantOpError(h, noSession, err, "SetValue", retail.ErrNoSession)
	const taken = `RenewSession("tok-a", "tok-b", "")`
	_, err = h.s.RenewSession(h.ctx, "tok-a", "tok-b", "")
	if !errors.As(err, &ie) || ie.Op != "RenewSession" || ie.Arg != "newToken" {
		h.t.Errorf(`%s = %v, want retail.NewStore's *retail.InputError{Op: "RenewSession", Arg: "newToken"}`, taken, err)
	}
	h.wantUnchanged(before, invalid+", "+canceled+", "+noSession+" and "+taken)

	if err := h.s.Close(); err != nil {
		h.t.Fatalf("Close() = %v, want nil", err)
	}
	_, err = h.s.SessionCount(h.ctx)
	wantOpError(h, "SessionCount() after Close", err, "SessionCount", retail.ErrClosed)
	err = h.s.UpdateToken(h.ctx, "tok-a", "alice", "item-1")
	wantOpError(h, `UpdateToken("tok-a", "alice", "item-1") after Close`, err, "UpdateToken", retail.ErrClosed)
	if err := h.s.Close(); err != nil {
		h.t.Errorf("second Close() = %v, want nil", err)
	}
}

// wantOpError fails the test unless err is retail.NewStore's *retail.OpError
// for op, matching target.
func wantOpError(h *harness, call string, err error, op string, target error) {
	h.t.Helper()
	var oe *retail.OpError
	if !errors.Is(err, target) || !errors.As(err, &oe) || oe.Op != op {
		h.t.Errorf("%s = %v, want retail.NewStore's *retail.OpError{Op: %q} matching %v", call, err, op, target)
	}
}
