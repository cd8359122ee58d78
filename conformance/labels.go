package conformance

import (
	"fmt"
	"strings"
	"time"

	"github.com/retailkit/retail"
)

// labelTests pin the label a login gives a session (SessionOptions.Label):
// UserSessions returns it as given, every call keeps it but a
// RenewSessionFor that gives another, and a label that breaks its rule
// writes nothing.
var labelTests = []behaviour{
	{name: "Label_UserSessionsReturnsLabel", test: testLabelListed},
	{name: "Label_KeptUntilLoginGivesAnother", test: testLabelKept},
	{name: "Label_InvalidWritesNothing", test: testLabelInvalid},
	{name: "Label_ZeroLifetimeIsStores", test: testLabelZeroLifetime},
}

func (h *harness) startLabeled(token, user, label string) {
	h.t.Helper()
	created, err := h.s.StartSessionFor(h.ctx, token, user, retail.SessionOptions{Label: label})
	if err != nil || !created {
		h.t.Fatalf("StartSessionFor(%q, %q, Label %q) = %v, %v, want true, nil", token, user, label, created, err)
	}
}

func labeled(in retail.SessionInfo, label string) retail.SessionInfo {
	in.Label = label
	return in
}

func testLabelListed(h *harness) {
	t0 := h.now()
	h.startLabeled("tok-1", "alice", "Firefox on Linux")
	h.start("tok-2", "alice")
	h.startLabeled("tok-3", "alice", "Émilie’s iPhone 📱")
	h.wantUserSessions("alice",
		labeled(info("tok-1", "alice", t0, t0), "Firefox on Linux"),
		info("tok-2", "alice", t0, t0),
		labeled(info("tok-3", "alice", t0, t0), "Émilie’s iPhone 📱"))
	// A label of exactly MaxLabelLen bytes is accepted.
	long := strings.Repeat("x", retail.MaxLabelLen)
	h.startLabeled("tok-4", "bob", long)
	h.wantUserSessions("bob", labeled(info("tok-4", "bob", t0, t0), long))
}

func testLabelKept(h *harness) {
	h.startLabeled("tok-1", "", "Chrome on Windows")
	h.addToCart("tok-1", "item-a", 1)
	h.clock.Advance(time.Millisecond)
	t1 := h.now()
	// A login without options keeps the label.
	h.renew("tok-1", "tok-2", "alice")
	h.wantUserSessions("alice", labeled(info("tok-2", "alice", t1, t1), "Chrome on Windows"))
	// So do a renewal, a refresh and UpdateToken.
	h.clock.Advance(time.Millisecond)
	t2 := h.now()
	h.renew("tok-2", "tok-3", "")
	h.wantRefresh("tok-3", "item-b", "alice")
	if err := h.s.UpdateToken(h.ctx, "tok-3", "alice", "item-c"); err != nil {
		h.t.Fatalf(`UpdateToken("tok-3", "alice", "item-c") = %v, want nil`, err)
	}
	h.wantUserSessions("alice", labeled(info("tok-3", "alice", t1, t2), "Chrome on Windows"))
	// A login with options but no label keeps it; one with a label
	// replaces it.
	h.clock.Advance(time.Millisecond)
	t3 := h.now()
	ok, err := h.s.RenewSessionFor(h.ctx, "tok-3", "tok-4", "alice", retail.SessionOptions{Lifetime: h.ownLifetime()})
	if err != nil || !ok {
		h.t.Fatalf(`RenewSessionFor("tok-3", "tok-4", "alice", Lifetime) = %v, %v, want true, nil`, ok, err)
	}
	h.wantUserSessions("alice", labeled(info("tok-4", "alice", t3, t3), "Chrome on Windows"))
	ok, err = h.s.RenewSessionFor(h.ctx, "tok-4", "tok-5", "alice", retail.SessionOptions{Label: "Chrome on Android"})
	if err != nil || !ok {
		h.t.Fatalf(`RenewSessionFor("tok-4", "tok-5", "alice", Label) = %v, %v, want true, nil`, ok, err)
	}
	h.wantUserSessions("alice", labeled(info("tok-5", "alice", t3, t3), "Chrome on Android"))
	h.wantCart("tok-5", map[string]int{"item-a": 1})
}

func testLabelInvalid(h *harness) {
	t0 := h.now()
	h.startLabeled("tok-1", "alice", "Safari on macOS")
	bad := []string{
		strings.Repeat("x", retail.MaxLabelLen+1),
		"tab\there",
		"line\nbreak",
		"bell\x07",
		"del\x7f",
		"\xff\xfe",
		"zero\u200bwidth", // a format character, not printable
	}
	for _, label := range bad {
		opts := retail.SessionOptions{Label: label}
		created, err := h.s.StartSessionFor(h.ctx, "tok-2", "alice", opts)
		h.wantErr(fmt.Sprintf(`StartSessionFor("tok-2", "alice", Label %q)`, label), err, retail.ErrInvalid)
		if created {
			h.t.Errorf(`StartSessionFor("tok-2", "alice", Label %q) = true, want false`, label)
		}
		h.wantNoSession("tok-2")
		ok, err := h.s.RenewSessionFor(h.ctx, "tok-1", "tok-3", "alice", opts)
		h.wantErr(fmt.Sprintf(`RenewSessionFor("tok-1", "tok-3", "alice", Label %q)`, label), err, retail.ErrInvalid)
		if ok {
			h.t.Errorf(`RenewSessionFor("tok-1", "tok-3", "alice", Label %q) = true, want false`, label)
		}
		h.wantNoSession("tok-3")
	}
	h.wantUserSessions("alice", labeled(info("tok-1", "alice", t0, t0), "Safari on macOS"))
}

func testLabelZeroLifetime(h *harness) {
	t0 := h.now()
	h.startLabeled("tok-1", "alice", "Edge on Windows")
	h.wantEndAt(t0.Add(h.lifetime), h.refreshing("tok-1", "alice"), nil,
		func() { h.wantNoSession("tok-1") })
}
