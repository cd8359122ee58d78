package conformance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/retailkit/retail"
)

var errorTests = []behaviour{
	{name: "InvalidInput", cases: invalidInputCases},
	{name: "CanceledContext", cases: canceledCases},
	{name: "Closed", cases: closedCases},
	{name: "Close_TwiceReturnsNil", test: testCloseTwice},
}

// call is one Store call made by an error test: op and arg name the
// method and the argument it breaks (as in retail.InputError), desc prints
// the call.
type call struct {
	name string
	op   string
	arg  string
	desc string
	do   func(ctx context.Context, s retail.Store) error
}

// show prints an argument for desc, eliding long ones.
func show(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("<%d bytes>", len(s))
	}
	return fmt.Sprintf("%q", s)
}

type badValue struct{ name, value string }

type badCount struct {
	name  string
	count int
}

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

func invalidInputCases() []behaviour {
	var calls []call
	add := func(name, op, arg, desc string, do func(context.Context, retail.Store) error) {
		calls = append(calls, call{name: op + "_" + name, op: op, arg: arg, desc: desc, do: do})
	}
	// Where another argument is valid, it names something seeded, so a
	// write slipping through would show.
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
		add("Item"+b.name, "ItemRank", "item", "ItemRank("+show(v)+")",
			func(ctx context.Context, s retail.Store) error { _, _, err := s.ItemRank(ctx, v); return err })
	}
	for _, b := range badUsers {
		v := b.value
		add("User"+b.name, "UpdateToken", "user", `UpdateToken("tok-a", `+show(v)+`, "item-3")`,
			func(ctx context.Context, s retail.Store) error { return s.UpdateToken(ctx, "tok-a", v, "item-3") })
	}
	for _, b := range badKeys {
		v := b.value
		add("Key"+b.name, "Page", "key", "Page("+show(v)+")",
			func(ctx context.Context, s retail.Store) error { _, _, err := s.Page(ctx, v); return err })
		add("Key"+b.name, "SetPage", "key", "SetPage("+show(v)+`, "body", 1m)`,
			func(ctx context.Context, s retail.Store) error { return s.SetPage(ctx, v, []byte("body"), time.Minute) })
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
	var counts []badCount
	if math.MaxInt > retail.MaxCartCount {
		over := int64(retail.MaxCartCount) + 1
		counts = []badCount{{"CountAboveMax", int(over)}, {"CountMaxInt", math.MaxInt}}
	}
	for _, c := range counts {
		add(c.name, "AddToCart", "count", fmt.Sprintf(`AddToCart("tok-a", "item-1", %d)`, c.count),
			func(ctx context.Context, s retail.Store) error { return s.AddToCart(ctx, "tok-a", "item-1", c.count) })
	}
	big := make([]byte, retail.MaxPageSize+1)
	add("BodyTooLarge", "SetPage", "body", fmt.Sprintf(`SetPage("page-a", <%d bytes>, 1m)`, len(big)),
		func(ctx context.Context, s retail.Store) error { return s.SetPage(ctx, "page-a", big, time.Minute) })
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
	bigRow := make([]byte, retail.MaxRowSize+1)
	add("DataTooLarge", "SetRow", "data", fmt.Sprintf(`SetRow("row-a", <%d bytes>)`, len(bigRow)),
		func(ctx context.Context, s retail.Store) error { return s.SetRow(ctx, "row-a", bigRow) })
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

	cases := make([]behaviour, len(calls))
	for i, c := range calls {
		cases[i] = behaviour{name: c.name, test: func(h *harness) { testInvalidInput(h, c) }}
	}
	return cases
}

func testInvalidInput(h *harness, c call) {
	seed(h)
	before := h.state()
	err := c.do(h.ctx, h.s)
	if !errors.Is(err, retail.ErrInvalid) {
		h.t.Fatalf("%s = %v, want an error matching ErrInvalid", c.desc, err)
	}
	var ie *retail.InputError
	if !errors.As(err, &ie) {
		h.t.Errorf("%s = %v (%T), want an error wrapping *retail.InputError", c.desc, err, err)
	} else if ie.Op != c.op || ie.Arg != c.arg {
		h.t.Errorf("%s = InputError{Op: %q, Arg: %q}, want Op %q, Arg %q", c.desc, ie.Op, ie.Arg, c.op, c.arg)
	}
	h.wantUnchanged(before, c.desc)
}

// validCalls are one call of every Store method but Close, with arguments
// that would change the seeded store if the call went through.
func validCalls() []call {
	return []call{
		{op: "CheckToken", desc: `CheckToken("tok-a")`, do: func(ctx context.Context, s retail.Store) error {
			_, _, err := s.CheckToken(ctx, "tok-a")
			return err
		}},
		{op: "UpdateToken", desc: `UpdateToken("tok-a", "mallory", "item-3")`, do: func(ctx context.Context, s retail.Store) error {
			return s.UpdateToken(ctx, "tok-a", "mallory", "item-3")
		}},
		{op: "RecentItems", desc: `RecentItems("tok-a")`, do: func(ctx context.Context, s retail.Store) error {
			_, err := s.RecentItems(ctx, "tok-a")
			return err
		}},
		{op: "Logout", desc: `Logout("tok-a")`, do: func(ctx context.Context, s retail.Store) error {
			return s.Logout(ctx, "tok-a")
		}},
		{op: "SessionCount", desc: "SessionCount()", do: func(ctx context.Context, s retail.Store) error {
			_, err := s.SessionCount(ctx)
			return err
		}},
		{op: "CleanSessions", desc: "CleanSessions(0, 100)", do: func(ctx context.Context, s retail.Store) error {
			_, err := s.CleanSessions(ctx, 0, 100)
			return err
		}},
		{op: "AddToCart", desc: `AddToCart("tok-a", "item-2", 5)`, do: func(ctx context.Context, s retail.Store) error {
			return s.AddToCart(ctx, "tok-a", "item-2", 5)
		}},
		{op: "Cart", desc: `Cart("tok-a")`, do: func(ctx context.Context, s retail.Store) error {
			_, err := s.Cart(ctx, "tok-a")
			return err
		}},
		{op: "Page", desc: `Page("page-a")`, do: func(ctx context.Context, s retail.Store) error {
			_, _, err := s.Page(ctx, "page-a")
			return err
		}},
		{op: "SetPage", desc: `SetPage("page-a", "changed", 1m)`, do: func(ctx context.Context, s retail.Store) error {
			return s.SetPage(ctx, "page-a", []byte("changed"), time.Minute)
		}},
		{op: "ScheduleRowCache", desc: `ScheduleRowCache("row-a", -1ns)`, do: func(ctx context.Context, s retail.Store) error {
			return s.ScheduleRowCache(ctx, "row-a", -1)
		}},
		{op: "ClaimDueRows", desc: "ClaimDueRows(10)", do: func(ctx context.Context, s retail.Store) error {
			_, err := s.ClaimDueRows(ctx, 10)
			return err
		}},
		{op: "Row", desc: `Row("row-a")`, do: func(ctx context.Context, s retail.Store) error {
			_, _, err := s.Row(ctx, "row-a")
			return err
		}},
		{op: "SetRow", desc: `SetRow("row-a", "changed")`, do: func(ctx context.Context, s retail.Store) error {
			return s.SetRow(ctx, "row-a", []byte("changed"))
		}},
		{op: "ItemRank", desc: `ItemRank("item-1")`, do: func(ctx context.Context, s retail.Store) error {
			_, _, err := s.ItemRank(ctx, "item-1")
			return err
		}},
		{op: "TopItems", desc: "TopItems(10)", do: func(ctx context.Context, s retail.Store) error {
			_, err := s.TopItems(ctx, 10)
			return err
		}},
		{op: "RescaleViews", desc: "RescaleViews(0, 0.5)", do: func(ctx context.Context, s retail.Store) error {
			return s.RescaleViews(ctx, 0, 0.5)
		}},
	}
}

func canceledCases() []behaviour {
	var cases []behaviour
	for _, c := range validCalls() {
		cases = append(cases, behaviour{name: c.op, test: func(h *harness) {
			seed(h)
			before := h.state()
			ctx, cancel := context.WithCancel(h.ctx)
			cancel()
			if err := c.do(ctx, h.s); !errors.Is(err, context.Canceled) {
				h.t.Errorf("%s with a canceled context = %v, want an error matching context.Canceled", c.desc, err)
			}
			h.wantUnchanged(before, c.desc+" with a canceled context")
		}})
	}
	return cases
}

func closedCases() []behaviour {
	var cases []behaviour
	for _, c := range validCalls() {
		cases = append(cases, behaviour{name: c.op, test: func(h *harness) {
			seed(h)
			if err := h.s.Close(); err != nil {
				h.t.Fatalf("Close() = %v, want nil", err)
			}
			if err := c.do(h.ctx, h.s); !errors.Is(err, retail.ErrClosed) {
				h.t.Errorf("%s after Close = %v, want an error matching ErrClosed", c.desc, err)
			}
		}})
	}
	return cases
}

func testCloseTwice(h *harness) {
	seed(h)
	if err := h.s.Close(); err != nil {
		h.t.Errorf("Close() = %v, want nil", err)
	}
	if err := h.s.Close(); err != nil {
		h.t.Errorf("second Close() = %v, want nil", err)
	}
	if _, err := h.s.SessionCount(h.ctx); !errors.Is(err, retail.ErrClosed) {
		h.t.Errorf("SessionCount() after two Closes = %v, want an error matching ErrClosed", err)
	}
}
