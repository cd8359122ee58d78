package conformance

import (
	"fmt"
	"strings"

	"github.com/retailkit/retail"
)

// loginValueTests pin the values a login sets with its session
// (SessionOptions.Values): StartSessionFor creates the session holding
// them, RenewSessionFor moves the session holding the old one's values
// with them applied, and a login whose values break the rules, or would
// overfill the session, writes nothing.
var loginValueTests = []behaviour{
	{name: "LoginValues_StartHoldsThem", test: testLoginValuesStart},
	{name: "LoginValues_StartCopiesThem", test: testLoginValuesStartCopies},
	{name: "LoginValues_RenewReplacesDeletesAndCopiesTheRest", test: testLoginValuesRenew},
	{name: "LoginValues_RenewMayFillTheSession", test: testLoginValuesRenewFills},
	{name: "LoginValues_RenewThatOverfillsWritesNothing", test: testLoginValuesRenewOverfills},
	{name: "LoginValues_InvalidWritesNothing", test: testLoginValuesInvalid},
	{name: "LoginValues_RenewWithoutSessionWritesNothing", test: testLoginValuesRenewWithoutSession},
	{name: "LoginValues_RenewToLiveTokenWritesNothing", test: testLoginValuesRenewToLiveToken},
}

// startWith starts token's session of user holding values.
func (h *harness) startWith(token, user string, values map[string][]byte) {
	h.t.Helper()
	created, err := h.s.StartSessionFor(h.ctx, token, user, retail.SessionOptions{Values: values})
	if err != nil || !created {
		h.t.Fatalf("StartSessionFor(%q, %q, Values %q) = %v, %v, want true, nil", token, user, values, created, err)
	}
}

// renewWith renews token's session to newToken as a login of user that
// sets values.
func (h *harness) renewWith(token, newToken, user string, values map[string][]byte) {
	h.t.Helper()
	ok, err := h.s.RenewSessionFor(h.ctx, token, newToken, user, retail.SessionOptions{Values: values})
	if err != nil || !ok {
		h.t.Fatalf("RenewSessionFor(%q, %q, %q, Values %q) = %v, %v, want true, nil", token, newToken, user, values, ok, err)
	}
}

// wantEmptyValue asserts that token's session holds the empty value under
// key: not a miss, and not nil.
func (h *harness) wantEmptyValue(token, key string) {
	h.t.Helper()
	if v, ok := h.value(token, key); !ok || v == nil || len(v) != 0 {
		h.t.Errorf("Value(%q, %q) = %#v, %v, want []byte{}, true", token, key, v, ok)
	}
}

func testLoginValuesStart(h *harness) {
	h.startWith("tok-1", "alice", map[string][]byte{"flash": []byte("Welcome back."), "step": {}, "csrf": nil})
	h.wantUser("tok-1", "alice")
	h.wantValue("tok-1", "flash", "Welcome back.")
	h.wantEmptyValue("tok-1", "step")
	h.wantNoValue("tok-1", "csrf") // a nil value sets nothing
	// A guest's session holds them too, and they are values as any other.
	h.startWith("tok-2", "", map[string][]byte{"flash": []byte("hi")})
	h.wantValue("tok-2", "flash", "hi")
	v, ok, err := h.s.PopValue(h.ctx, "tok-2", "flash")
	if err != nil || !ok || string(v) != "hi" {
		h.t.Errorf(`PopValue("tok-2", "flash") = %q, %v, %v, want "hi", true, nil`, v, ok, err)
	}
	h.wantNoValue("tok-2", "flash")
	// As many values as a session holds, each as long as a value may be.
	full := make(map[string][]byte)
	for _, key := range seq("key", retail.MaxSessionValues) {
		full[key] = []byte(strings.Repeat(key[len(key)-1:], retail.MaxValueSize))
	}
	full["csrf"] = nil
	h.startWith("tok-3", "bob", full)
	for key, v := range full {
		if got, ok := h.value("tok-3", key); ok != (v != nil) || string(got) != string(v) {
			h.t.Errorf("Value(%q, %q) = <%d bytes>, %v, want <%d bytes>, %v", "tok-3", key, len(got), ok, len(v), v != nil)
		}
	}
	err = h.s.SetValue(h.ctx, "tok-3", "one-too-many", []byte("x"))
	h.wantErr(`SetValue("tok-3", "one-too-many", "x") in a session started full`, err, retail.ErrInvalid)
}

func testLoginValuesStartCopies(h *harness) {
	v := []byte("original")
	values := map[string][]byte{"flash": v}
	h.startWith("tok-1", "alice", values)
	copy(v, "CHANGED!")
	values["step"] = []byte("2")
	h.wantValue("tok-1", "flash", "original")
	h.wantNoValue("tok-1", "step")

	h.renewWith("tok-1", "tok-2", "alice", values)
	copy(v, "AGAIN!!!")
	delete(values, "step")
	h.wantValue("tok-2", "flash", "CHANGED!")
	h.wantValue("tok-2", "step", "2")
}

func testLoginValuesRenew(h *harness) {
	guestWithState(h, "tok-old") // "welcome" under "flash"
	h.setValue("tok-old", "step", []byte("2"))
	h.setValue("tok-old", "csrf", []byte("guest's"))
	h.setValue("tok-old", "theme", []byte("dark"))
	h.renewWith("tok-old", "tok-new", "alice", map[string][]byte{
		"csrf":  []byte("alice's"), // replaced
		"step":  nil,               // deleted
		"theme": {},                // replaced by the empty value
		"lang":  []byte("de"),      // added
		"gone":  nil,               // deleting what is not there does nothing
	})
	h.wantNoSession("tok-old")
	h.wantUser("tok-new", "alice")
	h.wantValue("tok-new", "flash", "welcome")
	h.wantValue("tok-new", "csrf", "alice's")
	h.wantNoValue("tok-new", "step")
	h.wantEmptyValue("tok-new", "theme")
	h.wantValue("tok-new", "lang", "de")
	h.wantNoValue("tok-new", "gone")
	h.wantRecent("tok-new", "item-b", "item-a")
	h.wantCart("tok-new", map[string]int{"item-a": 2})
	h.wantCount(1)

	// What the login deleted does not count towards the limit: the session
	// holds 4 values, and takes MaxSessionValues-4 more.
	for _, key := range seq("key", retail.MaxSessionValues-5) {
		h.setValue("tok-new", key, []byte(key))
	}
	h.setValue("tok-new", "one-more", []byte("x"))
	err := h.s.SetValue(h.ctx, "tok-new", "one-too-many", []byte("x"))
	h.wantErr(`SetValue("tok-new", "one-too-many", "x") in a full session`, err, retail.ErrInvalid)
}

// testLoginValuesRenewFills renews a full session with values that delete
// and add as many as they replace: the session stays full, and the
// deletions are counted before the additions.
func testLoginValuesRenewFills(h *harness) {
	keys := seq("key", retail.MaxSessionValues)
	h.start("tok-1", "")
	for _, key := range keys {
		h.setValue("tok-1", key, []byte(key))
	}
	h.renewWith("tok-1", "tok-2", "alice", map[string][]byte{
		keys[0]: []byte("replaced"), keys[1]: nil, keys[2]: nil, "flash": []byte("hi"), "step": {},
	})
	h.wantValue("tok-2", keys[0], "replaced")
	h.wantNoValue("tok-2", keys[1])
	h.wantNoValue("tok-2", keys[2])
	h.wantValue("tok-2", "flash", "hi")
	h.wantEmptyValue("tok-2", "step")
	for _, key := range keys[3:] {
		h.wantValue("tok-2", key, key)
	}
	err := h.s.SetValue(h.ctx, "tok-2", "one-too-many", []byte("x"))
	h.wantErr(`SetValue("tok-2", "one-too-many", "x") in a full session`, err, retail.ErrInvalid)
}

// testLoginValuesRenewOverfills renews sessions with values that would
// leave them more than MaxSessionValues: only the Store knows what the old
// session holds, and it must refuse before it writes anything.
func testLoginValuesRenewOverfills(h *harness) {
	seed(h)
	keys := seq("key", retail.MaxSessionValues-1)
	for _, key := range keys { // tok-a holds "flash" too: it is full
		h.setValue("tok-a", key, []byte(key))
	}
	before := h.state()
	for _, values := range []map[string][]byte{
		{"step": []byte("2")},
		{"step": []byte("2"), keys[0]: []byte("replaced")},
		{"step": []byte("2"), "csrf": []byte("x"), keys[0]: nil},
		{"step": []byte("2"), "gone": nil},
	} {
		call := fmt.Sprintf(`RenewSessionFor("tok-a", "tok-new", "alice", Values %q) of a full session`, values)
		ok, err := h.s.RenewSessionFor(h.ctx, "tok-a", "tok-new", "alice", retail.SessionOptions{Values: values})
		h.wantErr(call, err, retail.ErrInvalid)
		if ok {
			h.t.Errorf("%s = true, want false", call)
		}
		h.wantStateAsBefore(before, call)
		for _, key := range keys {
			h.wantValue("tok-a", key, key)
		}
	}
	h.wantUnchanged(before, "RenewSessionFor with Values that overfill the session")
}

func testLoginValuesInvalid(h *harness) {
	seed(h)
	before := h.state()
	tooMany := map[string][]byte{"flash": []byte("new")}
	for _, key := range seq("key", retail.MaxSessionValues) {
		tooMany[key] = []byte(key)
	}
	for _, c := range []struct {
		name   string
		values map[string][]byte
	}{
		{"EmptyKey", map[string][]byte{"flash": []byte("new"), "": []byte("x")}},
		{"KeyTooLong", map[string][]byte{"flash": []byte("new"), strings.Repeat("k", retail.MaxIDLen+1): []byte("x")}},
		{"KeyWithControl", map[string][]byte{"csrf": []byte("new"), "a\nb": []byte("x")}},
		{"DeletedKeyInvalid", map[string][]byte{"step": []byte("new"), "a\x00b": nil}},
		{"ValueTooLarge", map[string][]byte{"csrf": []byte("new"), "step": make([]byte, retail.MaxValueSize+1)}},
		{"TooMany", tooMany},
	} {
		opts := retail.SessionOptions{Values: c.values}
		created, err := h.s.StartSessionFor(h.ctx, "tok-new", "alice", opts)
		h.wantErr(fmt.Sprintf(`StartSessionFor("tok-new", "alice", Values %s)`, c.name), err, retail.ErrInvalid)
		if created {
			h.t.Errorf(`StartSessionFor("tok-new", "alice", Values %s) = true, want false`, c.name)
		}
		ok, err := h.s.RenewSessionFor(h.ctx, "tok-a", "tok-new", "alice", opts)
		h.wantErr(fmt.Sprintf(`RenewSessionFor("tok-a", "tok-new", "alice", Values %s)`, c.name), err, retail.ErrInvalid)
		if ok {
			h.t.Errorf(`RenewSessionFor("tok-a", "tok-new", "alice", Values %s) = true, want false`, c.name)
		}
		h.wantStateAsBefore(before, "logins with invalid Values "+c.name)
	}
	h.wantUnchanged(before, "logins with invalid Values")
}

func testLoginValuesRenewWithoutSession(h *harness) {
	values := map[string][]byte{"flash": []byte("new"), "csrf": []byte("x"), "step": nil}
	renew := func(token string) {
		h.t.Helper()
		ok, err := h.s.RenewSessionFor(h.ctx, token, "tok-new", "carol", retail.SessionOptions{Values: values})
		if ok || err != nil {
			h.t.Errorf(`RenewSessionFor(%q, "tok-new", "carol", Values) = %v, %v, want false, nil`, token, ok, err)
		}
		h.wantNoSession(token)
		h.wantNoSession("tok-new")
	}
	// Expired: the Store may drop what is left of it, and writes nothing
	// else.
	h.start("tok-expired", "carol")
	h.setValue("tok-expired", "flash", []byte("carol's"))
	h.clock.Advance(h.idle)
	renew("tok-expired")
	h.wantUserSessions("carol")

	h.start("tok-gone", "carol")
	h.setValue("tok-gone", "flash", []byte("carol's"))
	h.logout("tok-gone")
	seed(h)
	before := h.state()
	for _, token := range []string{"never-seen", "tok-gone"} {
		renew(token)
	}
	h.wantUnchanged(before, "RenewSessionFor with Values of tokens without a session")
}

func testLoginValuesRenewToLiveToken(h *harness) {
	seed(h)
	before := h.state()
	values := map[string][]byte{"flash": []byte("new"), "csrf": []byte("x"), "step": nil}
	for _, c := range []struct{ token, newToken string }{{"tok-a", "tok-b"}, {"tok-guest", "tok-a"}, {"tok-b", "tok-guest"}} {
		ok, err := h.s.RenewSessionFor(h.ctx, c.token, c.newToken, "alice", retail.SessionOptions{Values: values})
		call := fmt.Sprintf(`RenewSessionFor(%q, %q, "alice", Values)`, c.token, c.newToken)
		h.wantErr(call, err, retail.ErrInvalid)
		if ok {
			h.t.Errorf("%s = true, want false", call)
		}
	}
	h.wantUnchanged(before, "RenewSessionFor with Values to live tokens")
}
