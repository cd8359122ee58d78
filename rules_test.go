package retail_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
)

// The input rules, case by case, through retail.NewStore over a driver that
// records its calls (fakedriver_test.go): every invalid argument is refused
// with an *InputError naming the method and the argument, and never reaches
// the driver; the edges of each rule are accepted and reach it unchanged.

// invalidCall is one Store call with an argument that breaks the input
// rules: op and arg are the InputError's, desc prints the call.
type invalidCall struct {
	name string
	op   string
	arg  string
	desc string
	do   func(ctx context.Context, s retail.Store) error
}

type badValue struct{ name, value string }

// badIDs break the rule for tokens, items and row ids; badKeys the one for
// page keys; badUsers the one for users.
var (
	controls = []badValue{
		{"NUL", "a\x00b"}, {"Newline", "a\nb"}, {"CR", "a\rb"}, {"Tab", "a\tb"},
		{"Escape", "\x1b[0m"}, {"UnitSeparator", "a\x1f"}, {"DEL", "a\x7fb"},
	}
	badIDs = append([]badValue{
		{"Empty", ""}, {"TooLong", strings.Repeat("x", retail.MaxIDLen+1)},
	}, controls...)
	badKeys = append([]badValue{
		{"Empty", ""}, {"TooLong", strings.Repeat("k", retail.MaxPageKeyLen+1)},
	}, controls...)
	badUsers = []badValue{
		{"Empty", ""},
		{"TooLong", strings.Repeat("u", retail.MaxUserLen+1)},
		{"TooLongMultibyte", strings.Repeat("é", retail.MaxUserLen/2) + "x"},
		{"InvalidUTF8", "\xff"},
		{"TruncatedRune", "caf\xc3"},
		{"Surrogate", "\xed\xa0\x80"},
	}
)

// show prints an argument for desc, eliding long ones.
func show(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("<%d bytes>", len(s))
	}
	return fmt.Sprintf("%q", s)
}

func invalidCalls() []invalidCall {
	var calls []invalidCall
	add := func(name, op, arg, desc string, do func(context.Context, retail.Store) error) {
		calls = append(calls, invalidCall{name: op + "_" + name, op: op, arg: arg, desc: desc, do: do})
	}
	for _, b := range badIDs {
		v := b.value
		add("Token"+b.name, "CheckToken", "token", "CheckToken("+show(v)+")",
			func(ctx context.Context, s retail.Store) error { _, _, err := s.CheckToken(ctx, v); return err })
		add("Token"+b.name, "UpdateToken", "token", "UpdateToken("+show(v)+`, "alice", "item-3")`,
			func(ctx context.Context, s retail.Store) error { return s.UpdateToken(ctx, v, "alice", "item-3") })
		if v != "" { // An empty item means no item was viewed.
			add("Item"+b.name, "UpdateToken", "item", `UpdateToken("tok-a", "mallory", `+show(v)+")",
				func(ctx context.Context, s retail.Store) error { return s.UpdateToken(ctx, "tok-a", "mallory", v) })
		}
		add("Token"+b.name, "RecentItems", "token", "RecentItems("+show(v)+")",
			func(ctx context.Context, s retail.Store) error { _, err := s.RecentItems(ctx, v); return err })
		add("Token"+b.name, "Logout", "token", "Logout("+show(v)+")",
			func(ctx context.Context, s retail.Store) error { return s.Logout(ctx, v) })
		add("Token"+b.name, "AddToCart", "token", "AddToCart("+show(v)+`, "item-1", 5)`,
			func(ctx context.Context, s retail.Store) error { return s.AddToCart(ctx, v, "item-1", 5) })
		add("Item"+b.name, "AddToCart", "item", `AddToCart("tok-a", `+show(v)+", 5)",
			func(ctx context.Context, s retail.Store) error { return s.AddToCart(ctx, "tok-a", v, 5) })
		add("Token"+b.name, "Cart", "token", "Cart("+show(v)+")",
			func(ctx context.Context, s retail.Store) error { _, err := s.Cart(ctx, v); return err })
		add("Row"+b.name, "ScheduleRowCache", "row", "ScheduleRowCache("+show(v)+", 1m)",
			func(ctx context.Context, s retail.Store) error { return s.ScheduleRowCache(ctx, v, time.Minute) })
		add("Row"+b.name, "Row", "row", "Row("+show(v)+")",
			func(ctx context.Context, s retail.Store) error { _, _, err := s.Row(ctx, v); return err })
		add("Row"+b.name, "SetRow", "row", "SetRow("+show(v)+`, "{}")`,
			func(ctx context.Context, s retail.Store) error { return s.SetRow(ctx, v, []byte("{}")) })
		add("Row"+b.name, "SetScheduledRow", "row", "SetScheduledRow("+show(v)+`, "{}")`,
			func(ctx context.Context, s retail.Store) error {
				_, err := s.SetScheduledRow(ctx, v, []byte("{}"))
				return err
			})
		add("Item"+b.name, "ItemRank", "item", "ItemRank("+show(v)+")",
			func(ctx context.Context, s retail.Store) error { _, _, err := s.ItemRank(ctx, v); return err })
	}
	for _, b := range badIDs {
		v := b.value
		add("Token"+b.name, "StartSession", "token", "StartSession("+show(v)+`, "alice")`,
			func(ctx context.Context, s retail.Store) error { _, err := s.StartSession(ctx, v, "alice"); return err })
		add("Token"+b.name, "RefreshSession", "token", "RefreshSession("+show(v)+`, "item-3")`,
			func(ctx context.Context, s retail.Store) error {
				_, _, err := s.RefreshSession(ctx, v, "item-3")
				return err
			})
		if v != "" { // An empty item means no item was viewed.
			add("Item"+b.name, "RefreshSession", "item", `RefreshSession("tok-a", `+show(v)+")",
				func(ctx context.Context, s retail.Store) error {
					_, _, err := s.RefreshSession(ctx, "tok-a", v)
					return err
				})
		}
		add("Token"+b.name, "RenewSession", "token", "RenewSession("+show(v)+`, "tok-b", "alice")`,
			func(ctx context.Context, s retail.Store) error {
				_, err := s.RenewSession(ctx, v, "tok-b", "alice")
				return err
			})
		add("NewToken"+b.name, "RenewSession", "newToken", `RenewSession("tok-a", `+show(v)+`, "alice")`,
			func(ctx context.Context, s retail.Store) error {
				_, err := s.RenewSession(ctx, "tok-a", v, "alice")
				return err
			})
		add("Token"+b.name, "SetValue", "token", "SetValue("+show(v)+`, "flash", "hi")`,
			func(ctx context.Context, s retail.Store) error { return s.SetValue(ctx, v, "flash", []byte("hi")) })
		add("Key"+b.name, "SetValue", "key", `SetValue("tok-a", `+show(v)+`, "hi")`,
			func(ctx context.Context, s retail.Store) error { return s.SetValue(ctx, "tok-a", v, []byte("hi")) })
		add("Token"+b.name, "Value", "token", "Value("+show(v)+`, "flash")`,
			func(ctx context.Context, s retail.Store) error { _, _, err := s.Value(ctx, v, "flash"); return err })
		add("Key"+b.name, "Value", "key", `Value("tok-a", `+show(v)+")",
			func(ctx context.Context, s retail.Store) error { _, _, err := s.Value(ctx, "tok-a", v); return err })
		add("Token"+b.name, "PopValue", "token", "PopValue("+show(v)+`, "flash")`,
			func(ctx context.Context, s retail.Store) error { _, _, err := s.PopValue(ctx, v, "flash"); return err })
		add("Key"+b.name, "PopValue", "key", `PopValue("tok-a", `+show(v)+")",
			func(ctx context.Context, s retail.Store) error { _, _, err := s.PopValue(ctx, "tok-a", v); return err })
		add("Token"+b.name, "DeleteValue", "token", "DeleteValue("+show(v)+`, "flash")`,
			func(ctx context.Context, s retail.Store) error { return s.DeleteValue(ctx, v, "flash") })
		add("Key"+b.name, "DeleteValue", "key", `DeleteValue("tok-a", `+show(v)+")",
			func(ctx context.Context, s retail.Store) error { return s.DeleteValue(ctx, "tok-a", v) })
		add("Token"+b.name, "IncrementCart", "token", "IncrementCart("+show(v)+`, "item-1", 1)`,
			func(ctx context.Context, s retail.Store) error {
				_, err := s.IncrementCart(ctx, v, "item-1", 1)
				return err
			})
		add("Item"+b.name, "IncrementCart", "item", `IncrementCart("tok-a", `+show(v)+", 1)",
			func(ctx context.Context, s retail.Store) error {
				_, err := s.IncrementCart(ctx, "tok-a", v, 1)
				return err
			})
		add("Item"+b.name, "CountView", "item", "CountViews("+show(v)+"×1)",
			func(ctx context.Context, s retail.Store) error { return s.CountView(ctx, v) })
		add("Item"+b.name, "SetItemPage", "item", "SetItemPage("+show(v)+`, "page-a", "body", 1m)`,
			func(ctx context.Context, s retail.Store) error {
				return s.SetItemPage(ctx, v, "page-a", []byte("body"), time.Minute)
			})
		add("Item"+b.name, "PurgeItemPages", "item", "PurgeItemPages("+show(v)+")",
			func(ctx context.Context, s retail.Store) error { _, err := s.PurgeItemPages(ctx, v); return err })
	}
	for _, b := range badUsers {
		v := b.value
		add("User"+b.name, "UpdateToken", "user", `UpdateToken("tok-a", `+show(v)+`, "item-3")`,
			func(ctx context.Context, s retail.Store) error { return s.UpdateToken(ctx, "tok-a", v, "item-3") })
		add("User"+b.name, "UserSessions", "user", "UserSessions("+show(v)+")",
			func(ctx context.Context, s retail.Store) error { _, err := s.UserSessions(ctx, v); return err })
		add("User"+b.name, "LogoutUser", "user", "LogoutUser("+show(v)+")",
			func(ctx context.Context, s retail.Store) error { _, err := s.LogoutUser(ctx, v); return err })
		if v == "" { // A guest session, or a renewal that keeps the user.
			continue
		}
		add("User"+b.name, "StartSession", "user", `StartSession("tok-a", `+show(v)+")",
			func(ctx context.Context, s retail.Store) error { _, err := s.StartSession(ctx, "tok-a", v); return err })
		add("User"+b.name, "RenewSession", "user", `RenewSession("tok-a", "tok-b", `+show(v)+")",
			func(ctx context.Context, s retail.Store) error {
				_, err := s.RenewSession(ctx, "tok-a", "tok-b", v)
				return err
			})
	}
	add("NewTokenSameAsToken", "RenewSession", "newToken", `RenewSession("tok-a", "tok-a", "alice")`,
		func(ctx context.Context, s retail.Store) error {
			_, err := s.RenewSession(ctx, "tok-a", "tok-a", "alice")
			return err
		})
	add("NewTokenSameAsTokenGuest", "RenewSession", "newToken", `RenewSession("tok-a", "tok-a", "")`,
		func(ctx context.Context, s retail.Store) error {
			_, err := s.RenewSession(ctx, "tok-a", "tok-a", "")
			return err
		})
	bigValue := make([]byte, retail.MaxValueSize+1)
	add("ValueTooLarge", "SetValue", "value", fmt.Sprintf(`SetValue("tok-a", "flash", <%d bytes>)`, len(bigValue)),
		func(ctx context.Context, s retail.Store) error { return s.SetValue(ctx, "tok-a", "flash", bigValue) })
	// The values a login sets follow SetValue's rules, deleted keys
	// included, and are at most MaxSessionValues.
	type loginValues struct {
		name   string
		values map[string][]byte
	}
	badValues := []loginValues{
		{"ValueTooLarge", map[string][]byte{"flash": bigValue}},
		{"TooMany", func() map[string][]byte {
			m := map[string][]byte{"deleted": nil}
			for i := range retail.MaxSessionValues + 1 {
				m[fmt.Sprint("key-", i)] = []byte{}
			}
			return m
		}()},
	}
	for _, b := range badIDs {
		badValues = append(badValues,
			loginValues{"Key" + b.name, map[string][]byte{"flash": []byte("hi"), b.value: []byte("hi")}},
			loginValues{"DeletedKey" + b.name, map[string][]byte{"flash": []byte("hi"), b.value: nil}})
	}
	for _, b := range badValues {
		opts := retail.SessionOptions{Values: b.values}
		add("Values"+b.name, "StartSessionFor", "Values", `StartSessionFor("tok-a", "alice", Values `+b.name+")",
			func(ctx context.Context, s retail.Store) error {
				_, err := s.StartSessionFor(ctx, "tok-a", "alice", opts)
				return err
			})
		add("Values"+b.name, "RenewSessionFor", "Values", `RenewSessionFor("tok-a", "tok-b", "alice", Values `+b.name+")",
			func(ctx context.Context, s retail.Store) error {
				_, err := s.RenewSessionFor(ctx, "tok-a", "tok-b", "alice", opts)
				return err
			})
	}
	for _, c := range []struct {
		name string
		n    int
	}{
		{"NAboveMax", retail.MaxCartCount + 1}, {"NBelowMin", -retail.MaxCartCount - 1},
		{"NMaxInt", math.MaxInt}, {"NMinInt", math.MinInt},
	} {
		add(c.name, "IncrementCart", "n", fmt.Sprintf(`IncrementCart("tok-a", "item-1", %d)`, c.n),
			func(ctx context.Context, s retail.Store) error {
				_, err := s.IncrementCart(ctx, "tok-a", "item-1", c.n)
				return err
			})
	}
	for _, b := range badKeys {
		v := b.value
		add("Key"+b.name, "Page", "key", "Page("+show(v)+")",
			func(ctx context.Context, s retail.Store) error { _, _, err := s.Page(ctx, v); return err })
		add("Key"+b.name, "SetPage", "key", "SetPage("+show(v)+`, "body", 1m)`,
			func(ctx context.Context, s retail.Store) error { return s.SetPage(ctx, v, []byte("body"), time.Minute) })
		add("Key"+b.name, "SetItemPage", "key", `SetItemPage("item-1", `+show(v)+`, "body", 1m)`,
			func(ctx context.Context, s retail.Store) error {
				return s.SetItemPage(ctx, "item-1", v, []byte("body"), time.Minute)
			})
		add("Key"+b.name, "DeletePage", "key", "DeletePage("+show(v)+")",
			func(ctx context.Context, s retail.Store) error { return s.DeletePage(ctx, v) })
	}

	for _, c := range []struct {
		name      string
		keep, max int
		arg       string
	}{{"KeepNegative", -1, 100, "keep"}, {"MaxNegative", 0, -1, "max"}, {"MinIntKeep", math.MinInt, 100, "keep"}} {
		add(c.name, "CleanSessions", c.arg, fmt.Sprintf("CleanSessions(%d, %d)", c.keep, c.max),
			func(ctx context.Context, s retail.Store) error {
				_, err := s.CleanSessions(ctx, c.keep, c.max)
				return err
			})
	}
	// Counts above MaxCartCount exist only where int is wider than 32 bits.
	if math.MaxInt > retail.MaxCartCount {
		over := int64(retail.MaxCartCount) + 1
		for _, c := range []struct {
			name  string
			count int
		}{{"CountAboveMax", int(over)}, {"CountMaxInt", math.MaxInt}} {
			add(c.name, "AddToCart", "count", fmt.Sprintf(`AddToCart("tok-a", "item-1", %d)`, c.count),
				func(ctx context.Context, s retail.Store) error { return s.AddToCart(ctx, "tok-a", "item-1", c.count) })
		}
	}
	big := make([]byte, retail.MaxPageSize+1)
	add("BodyTooLarge", "SetPage", "body", fmt.Sprintf(`SetPage("page-a", <%d bytes>, 1m)`, len(big)),
		func(ctx context.Context, s retail.Store) error { return s.SetPage(ctx, "page-a", big, time.Minute) })
	add("BodyTooLarge", "SetItemPage", "body", fmt.Sprintf(`SetItemPage("item-1", "page-a", <%d bytes>, 1m)`, len(big)),
		func(ctx context.Context, s retail.Store) error {
			return s.SetItemPage(ctx, "item-1", "page-a", big, time.Minute)
		})
	for _, c := range []struct {
		name string
		ttl  time.Duration
	}{
		{"TTLZero", 0}, {"TTLNegative", -time.Minute}, {"TTLOneNanosecond", 1},
		{"TTLBelowMin", retail.MinDuration - 1}, {"TTLAboveMax", retail.MaxPageTTL + retail.MinDuration},
	} {
		add(c.name, "SetPage", "ttl", fmt.Sprintf(`SetPage("page-a", "changed", %v)`, c.ttl),
			func(ctx context.Context, s retail.Store) error {
				return s.SetPage(ctx, "page-a", []byte("changed"), c.ttl)
			})
		add(c.name, "SetItemPage", "ttl", fmt.Sprintf(`SetItemPage("item-1", "page-a", "changed", %v)`, c.ttl),
			func(ctx context.Context, s retail.Store) error {
				return s.SetItemPage(ctx, "item-1", "page-a", []byte("changed"), c.ttl)
			})
	}
	for _, c := range []struct {
		name  string
		delay time.Duration
	}{{"DelayOneNanosecond", 1}, {"DelayBelowMin", retail.MinDuration - 1}, {"DelayAboveMax", retail.MaxRowDelay + retail.MinDuration}} {
		add(c.name, "ScheduleRowCache", "delay", fmt.Sprintf(`ScheduleRowCache("row-a", %v)`, c.delay),
			func(ctx context.Context, s retail.Store) error { return s.ScheduleRowCache(ctx, "row-a", c.delay) })
	}
	for _, c := range []struct {
		name  string
		limit int
	}{{"LimitZero", 0}, {"LimitNegative", -1}, {"LimitAboveMax", retail.MaxClaimRows + 1}} {
		add(c.name, "ClaimDueRows", "limit", fmt.Sprintf("ClaimDueRows(%d)", c.limit),
			func(ctx context.Context, s retail.Store) error { _, err := s.ClaimDueRows(ctx, c.limit); return err })
	}
	for _, c := range []struct {
		name string
		turn int64
		hold time.Duration
	}{
		{"TurnAboveMax", retail.MaxClaimTurn + 1, time.Second}, {"TurnBelowMin", -retail.MaxClaimTurn - 1, time.Second},
		{"HoldBelowMin", 1, time.Millisecond - 1}, {"HoldAboveMax", 1, retail.MaxClaimHold + 1},
		{"HoldMaxDuration", 1, math.MaxInt64},
	} {
		arg := "turn"
		if c.hold < time.Millisecond || c.hold > retail.MaxClaimHold {
			arg = "hold"
		}
		add(c.name, "Claim", arg, fmt.Sprintf(`Claim("work", "owner", %d, %v)`, c.turn, c.hold),
			func(ctx context.Context, s retail.Store) error {
				_, err := s.Claim(ctx, "work", "owner", c.turn, c.hold)
				return err
			})
	}
	bigRow := make([]byte, retail.MaxRowSize+1)
	add("DataTooLarge", "SetRow", "data", fmt.Sprintf(`SetRow("row-a", <%d bytes>)`, len(bigRow)),
		func(ctx context.Context, s retail.Store) error { return s.SetRow(ctx, "row-a", bigRow) })
	add("DataTooLarge", "SetScheduledRow", "data", fmt.Sprintf(`SetScheduledRow("row-a", <%d bytes>)`, len(bigRow)),
		func(ctx context.Context, s retail.Store) error {
			_, err := s.SetScheduledRow(ctx, "row-a", bigRow)
			return err
		})
	for _, c := range []struct {
		name string
		n    int
	}{{"NNegative", -1}, {"NAboveMax", retail.MaxTopItems + 1}} {
		add(c.name, "TopItems", "n", fmt.Sprintf("TopItems(%d)", c.n),
			func(ctx context.Context, s retail.Store) error { _, err := s.TopItems(ctx, c.n); return err })
	}
	add("KeepNegative", "RescaleViews", "keep", "RescaleViews(-1, 0.5)",
		func(ctx context.Context, s retail.Store) error { return s.RescaleViews(ctx, -1, 0.5) })
	for _, c := range []struct {
		name   string
		factor float64
	}{
		{"FactorZero", 0}, {"FactorNegativeZero", math.Copysign(0, -1)}, {"FactorNegative", -1},
		{"FactorAboveOne", 1.5}, {"FactorJustAboveOne", math.Nextafter(1, 2)},
		{"FactorNaN", math.NaN()}, {"FactorPositiveInf", math.Inf(1)}, {"FactorNegativeInf", math.Inf(-1)},
	} {
		add(c.name, "RescaleViews", "factor", fmt.Sprintf("RescaleViews(1, %v)", c.factor),
			func(ctx context.Context, s retail.Store) error { return s.RescaleViews(ctx, 1, c.factor) })
	}
	return calls
}

func TestStore_InvalidInputNeverReachesDriver(t *testing.T) {
	for _, c := range invalidCalls() {
		t.Run(c.name, func(t *testing.T) {
			d := &fakeDriver{}
			err := c.do(t.Context(), unbuffered(d))
			wantInputError(t, c.desc, err, c.op, c.arg)
			var oe *retail.OpError
			if errors.As(err, &oe) {
				t.Errorf("%s = %v, want the *InputError itself, not wrapped in an *OpError", c.desc, err)
			}
			wantNoDriverCalls(t, d, c.desc)
		})
	}
}

// TestStore_AcceptsLimits makes calls with arguments at the edges of the
// input rules: each reaches the driver as it was made.
func TestStore_AcceptsLimits(t *testing.T) {
	ctx := t.Context()
	id := strings.Repeat("i", retail.MaxIDLen)
	user := strings.Repeat("é", retail.MaxUserLen/2)
	key := strings.Repeat("k", retail.MaxPageKeyLen)
	d := &fakeDriver{}
	s := unbuffered(d)
	var errs []error
	call := func(err error) { errs = append(errs, err) }
	call(s.UpdateToken(ctx, id, user, id))
	call(s.UpdateToken(ctx, "t", "u", ""))                          // no item viewed
	call(s.UpdateToken(ctx, "\xff", "line\nbreak\x00", "a:{b}* ü")) // not controls, or not UTF-8 rules
	call(s.AddToCart(ctx, id, id, retail.MaxCartCount))
	call(s.AddToCart(ctx, "t", "i", math.MinInt)) // removes the line
	_, err := s.StartSession(ctx, id, user)
	call(err)
	_, err = s.StartSession(ctx, "t", "") // a guest
	call(err)
	_, err = s.StartSession(ctx, "\xff", "line\nbreak\x00")
	call(err)
	_, _, err = s.RefreshSession(ctx, id, id)
	call(err)
	_, _, err = s.RefreshSession(ctx, "t", "") // no item viewed
	call(err)
	_, err = s.RenewSession(ctx, id, id[1:]+"j", user)
	call(err)
	_, err = s.RenewSession(ctx, "t", "u", "") // keeps the user
	call(err)
	// As many values as a session holds, of the largest size, and deletions
	// beyond them.
	values := map[string][]byte{id: nil, "deleted": nil}
	for i := range retail.MaxSessionValues {
		values[fmt.Sprint("key-", i)] = make([]byte, retail.MaxValueSize)
	}
	_, err = s.StartSessionFor(ctx, "t", "u", retail.SessionOptions{Values: values})
	call(err)
	_, err = s.RenewSessionFor(ctx, "t", "u", "v", retail.SessionOptions{Values: values})
	call(err)
	_, err = s.RenewSessionFor(ctx, "t", "u", "v", retail.SessionOptions{Values: map[string][]byte{"empty": {}}})
	call(err)
	_, err = s.UserSessions(ctx, user)
	call(err)
	_, err = s.LogoutUser(ctx, "u")
	call(err)
	call(s.SetValue(ctx, id, id, make([]byte, retail.MaxValueSize)))
	call(s.SetValue(ctx, "t", "k", nil))
	_, _, err = s.Value(ctx, id, id)
	call(err)
	_, _, err = s.PopValue(ctx, id, id)
	call(err)
	call(s.DeleteValue(ctx, id, id))
	_, err = s.IncrementCart(ctx, id, id, retail.MaxCartCount)
	call(err)
	_, err = s.IncrementCart(ctx, "t", "i", -retail.MaxCartCount)
	call(err)
	call(s.CountView(ctx, id))
	call(s.SetPage(ctx, key, make([]byte, retail.MaxPageSize), retail.MaxPageTTL))
	call(s.SetPage(ctx, "k", nil, retail.MinDuration))
	call(s.SetItemPage(ctx, id, key, make([]byte, retail.MaxPageSize), retail.MaxPageTTL))
	call(s.SetItemPage(ctx, "i", "k", nil, retail.MinDuration))
	call(s.DeletePage(ctx, key))
	_, err = s.PurgeItemPages(ctx, id)
	call(err)
	call(s.ScheduleRowCache(ctx, id, retail.MaxRowDelay))
	call(s.ScheduleRowCache(ctx, "r", retail.MinDuration))
	call(s.ScheduleRowCache(ctx, "r", 0))             // unschedules
	call(s.ScheduleRowCache(ctx, "r", math.MinInt64)) // unschedules
	call(s.SetRow(ctx, id, make([]byte, retail.MaxRowSize)))
	_, err = s.SetScheduledRow(ctx, id, make([]byte, retail.MaxRowSize))
	call(err)
	_, err = s.CleanSessions(ctx, 0, 0)
	call(err)
	_, err = s.CleanSessions(ctx, math.MaxInt, math.MaxInt)
	call(err)
	_, err = s.ClaimDueRows(ctx, 1)
	call(err)
	_, err = s.ClaimDueRows(ctx, retail.MaxClaimRows)
	call(err)
	_, err = s.TopItems(ctx, 0)
	call(err)
	_, err = s.TopItems(ctx, retail.MaxTopItems)
	call(err)
	call(s.RescaleViews(ctx, 0, 1))
	call(s.RescaleViews(ctx, math.MaxInt, math.SmallestNonzeroFloat64))
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("calls at the limits = %v, want nil errors", err)
	}
	want := []string{
		`UpdateToken(id(<256 bytes>), <1024 bytes>, <256 bytes>)`,
		`CountViews(<256 bytes>×1)`,
		`UpdateToken(id("t"), "u", "")`,
		`UpdateToken(id("\xff"), "line\nbreak\x00", "a:{b}* ü")`,
		`CountViews("a:{b}* ü"×1)`,
		fmt.Sprintf(`AddToCart(id(<256 bytes>), <256 bytes>, %d)`, retail.MaxCartCount),
		fmt.Sprintf(`AddToCart(id("t"), "i", %d)`, math.MinInt),
		`StartSession(id(<256 bytes>), <1024 bytes>)`,
		`StartSession(id("t"), "")`,
		`StartSession(id("\xff"), "line\nbreak\x00")`,
		`RefreshSession(id(<256 bytes>), <256 bytes>)`,
		`RefreshSession(id("t"), "")`,
		`RenewSession(id(<256 bytes>), id(<256 bytes>), <1024 bytes>)`,
		`RenewSession(id("t"), id("u"), "")`,
		fmt.Sprintf(`StartSession(id("t"), "u", Values(%d set, 2 deleted))`, retail.MaxSessionValues),
		fmt.Sprintf(`RenewSession(id("t"), id("u"), "v", Values(%d set, 2 deleted))`, retail.MaxSessionValues),
		`RenewSession(id("t"), id("u"), "v", Values(1 set, 0 deleted))`,
		`UserSessions(<1024 bytes>)`,
		`LogoutUser("u")`,
		fmt.Sprintf(`SetValue(id(<256 bytes>), <256 bytes>, <%d bytes>)`, retail.MaxValueSize),
		`SetValue(id("t"), "k", <0 bytes>)`,
		`Value(id(<256 bytes>), <256 bytes>)`,
		`PopValue(id(<256 bytes>), <256 bytes>)`,
		`DeleteValue(id(<256 bytes>), <256 bytes>)`,
		fmt.Sprintf(`IncrementCart(id(<256 bytes>), <256 bytes>, %d)`, retail.MaxCartCount),
		fmt.Sprintf(`IncrementCart(id("t"), "i", %d)`, -retail.MaxCartCount),
		`CountViews(<256 bytes>×1)`,
		fmt.Sprintf(`SetPage(<2048 bytes>, <%d bytes>, %v)`, retail.MaxPageSize, retail.MaxPageTTL),
		`SetPage("k", <0 bytes>, 1ms)`,
		fmt.Sprintf(`SetItemPage(<256 bytes>, <2048 bytes>, <%d bytes>, %v)`, retail.MaxPageSize, retail.MaxPageTTL),
		`SetItemPage("i", "k", <0 bytes>, 1ms)`,
		`DeletePage(<2048 bytes>)`,
		`PurgeItemPages(<256 bytes>)`,
		fmt.Sprintf(`ScheduleRowCache(<256 bytes>, %v)`, retail.MaxRowDelay),
		`ScheduleRowCache("r", 1ms)`,
		`ScheduleRowCache("r", 0s)`,
		fmt.Sprintf(`ScheduleRowCache("r", %v)`, time.Duration(math.MinInt64)),
		fmt.Sprintf(`SetRow(<256 bytes>, <%d bytes>)`, retail.MaxRowSize),
		fmt.Sprintf(`SetScheduledRow(<256 bytes>, <%d bytes>)`, retail.MaxRowSize),
		`CleanSessions(0, 0)`,
		fmt.Sprintf(`CleanSessions(%d, %d)`, math.MaxInt, math.MaxInt),
		`ClaimDueRows(1)`,
		fmt.Sprintf(`ClaimDueRows(%d)`, retail.MaxClaimRows),
		`TopItems(0)`,
		fmt.Sprintf(`TopItems(%d)`, retail.MaxTopItems),
		`RescaleViews(0, 1)`,
		fmt.Sprintf(`RescaleViews(%d, %v)`, math.MaxInt, math.SmallestNonzeroFloat64),
	}
	if diff := cmp.Diff(want, d.recorded()); diff != "" {
		t.Errorf("calls reaching the driver mismatch (-want +got):\n%s", diff)
	}
}
