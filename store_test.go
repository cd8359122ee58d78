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
	"github.com/retailkit/retail/driver"
)

// These tests cover the front door every backend shares, retail.NewStore,
// over a fake driver that records what reaches it (fakedriver_test.go): the
// input rules (rules_test.go), ended contexts, Close and the wrapping of
// errors are the wrapper's, so no backend proves them again (the
// conformance suite keeps one FrontDoor behaviour to show that a backend
// uses the wrapper).

// wantNoDriverCalls fails the test if any call but Close reached d.
func wantNoDriverCalls(t *testing.T, d *fakeDriver, what string) {
	t.Helper()
	if calls := d.recorded(); len(calls) != 0 {
		t.Errorf("%s reached the driver: %q", what, calls)
	}
}

// storeCall is one call of a Store method with valid arguments.
type storeCall struct {
	op   string // the method
	key  string // the Key of the OpError it returns on failure
	sent string // the calls the driver receives, as fakeDriver records them, one a line
	do   func(ctx context.Context, s retail.Store) error
}

// The token of storeCalls; errors show only its first four bytes.
const secretToken = "tok-6f1d2c9a"

// storeCalls are one call of every Store method but Close.
func storeCalls() []storeCall {
	const tokenKey = `token "tok-"…`
	return []storeCall{
		{"StartSession", tokenKey, `StartSession(id("tok-6f1d2c9a"), "alice")`, func(ctx context.Context, s retail.Store) error {
			_, err := s.StartSession(ctx, secretToken, "alice")
			return err
		}},
		{"CheckToken", tokenKey, `CheckToken(id("tok-6f1d2c9a"))`, func(ctx context.Context, s retail.Store) error {
			_, _, err := s.CheckToken(ctx, secretToken)
			return err
		}},
		{"RefreshSession", tokenKey, `RefreshSession(id("tok-6f1d2c9a"), "item-1")`, func(ctx context.Context, s retail.Store) error {
			_, _, err := s.RefreshSession(ctx, secretToken, "item-1")
			return err
		}},
		{"UpdateToken", tokenKey, "UpdateToken(id(\"tok-6f1d2c9a\"), \"alice\", \"item-1\")\nCountViews(\"item-1\"×1)", func(ctx context.Context, s retail.Store) error {
			return s.UpdateToken(ctx, secretToken, "alice", "item-1")
		}},
		{"RenewSession", tokenKey, `RenewSession(id("tok-6f1d2c9a"), id("new-0b7e"), "alice")`, func(ctx context.Context, s retail.Store) error {
			_, err := s.RenewSession(ctx, secretToken, "new-0b7e", "alice")
			return err
		}},
		{"RecentItems", tokenKey, `RecentItems(id("tok-6f1d2c9a"))`, func(ctx context.Context, s retail.Store) error {
			_, err := s.RecentItems(ctx, secretToken)
			return err
		}},
		{"Logout", tokenKey, `Logout(id("tok-6f1d2c9a"))`, func(ctx context.Context, s retail.Store) error {
			return s.Logout(ctx, secretToken)
		}},
		{"EndSession", `id "` + retail.SessionID(secretToken) + `"`, `Logout(id("tok-6f1d2c9a"))`, func(ctx context.Context, s retail.Store) error {
			return s.EndSession(ctx, retail.SessionID(secretToken))
		}},
		{"UserSessions", `user "alice"`, `UserSessions("alice")`, func(ctx context.Context, s retail.Store) error {
			_, err := s.UserSessions(ctx, "alice")
			return err
		}},
		{"LogoutUser", `user "alice"`, `LogoutUser("alice")`, func(ctx context.Context, s retail.Store) error {
			_, err := s.LogoutUser(ctx, "alice")
			return err
		}},
		{"SessionCount", "", `SessionCount()`, func(ctx context.Context, s retail.Store) error {
			_, err := s.SessionCount(ctx)
			return err
		}},
		{"CleanSessions", "", `CleanSessions(10, 100)`, func(ctx context.Context, s retail.Store) error {
			_, err := s.CleanSessions(ctx, 10, 100)
			return err
		}},
		{"SetValue", tokenKey, `SetValue(id("tok-6f1d2c9a"), "flash", <5 bytes>)`, func(ctx context.Context, s retail.Store) error {
			return s.SetValue(ctx, secretToken, "flash", []byte("saved"))
		}},
		{"Value", tokenKey, `Value(id("tok-6f1d2c9a"), "flash")`, func(ctx context.Context, s retail.Store) error {
			_, _, err := s.Value(ctx, secretToken, "flash")
			return err
		}},
		{"PopValue", tokenKey, `PopValue(id("tok-6f1d2c9a"), "flash")`, func(ctx context.Context, s retail.Store) error {
			_, _, err := s.PopValue(ctx, secretToken, "flash")
			return err
		}},
		{"DeleteValue", tokenKey, `DeleteValue(id("tok-6f1d2c9a"), "flash")`, func(ctx context.Context, s retail.Store) error {
			return s.DeleteValue(ctx, secretToken, "flash")
		}},
		{"AddToCart", tokenKey, `AddToCart(id("tok-6f1d2c9a"), "item-1", 2)`, func(ctx context.Context, s retail.Store) error {
			return s.AddToCart(ctx, secretToken, "item-1", 2)
		}},
		{"IncrementCart", tokenKey, `IncrementCart(id("tok-6f1d2c9a"), "item-1", -3)`, func(ctx context.Context, s retail.Store) error {
			_, err := s.IncrementCart(ctx, secretToken, "item-1", -3)
			return err
		}},
		{"Cart", tokenKey, `Cart(id("tok-6f1d2c9a"))`, func(ctx context.Context, s retail.Store) error {
			_, err := s.Cart(ctx, secretToken)
			return err
		}},
		{"Page", `key "GET test.com/?item=1"`, `Page("GET test.com/?item=1")`, func(ctx context.Context, s retail.Store) error {
			_, _, err := s.Page(ctx, "GET test.com/?item=1")
			return err
		}},
		{"SetPage", `key "GET test.com/?item=1"`, `SetPage("GET test.com/?item=1", <4 bytes>, 1m0s)`, func(ctx context.Context, s retail.Store) error {
			return s.SetPage(ctx, "GET test.com/?item=1", []byte("body"), time.Minute)
		}},
		{"SetItemPage", `key "GET test.com/?item=1"`, `SetItemPage("item-1", "GET test.com/?item=1", <4 bytes>, 1m0s)`, func(ctx context.Context, s retail.Store) error {
			return s.SetItemPage(ctx, "item-1", "GET test.com/?item=1", []byte("body"), time.Minute)
		}},
		{"DeletePage", `key "GET test.com/?item=1"`, `DeletePage("GET test.com/?item=1")`, func(ctx context.Context, s retail.Store) error {
			return s.DeletePage(ctx, "GET test.com/?item=1")
		}},
		{"PurgeItemPages", `item "item-1"`, `PurgeItemPages("item-1")`, func(ctx context.Context, s retail.Store) error {
			_, err := s.PurgeItemPages(ctx, "item-1")
			return err
		}},
		{"ScheduleRowCache", `row "row-1"`, `ScheduleRowCache("row-1", 1m0s)`, func(ctx context.Context, s retail.Store) error {
			return s.ScheduleRowCache(ctx, "row-1", time.Minute)
		}},
		{"ClaimDueRows", "", `ClaimDueRows(10)`, func(ctx context.Context, s retail.Store) error {
			_, err := s.ClaimDueRows(ctx, 10)
			return err
		}},
		{"Row", `row "row-1"`, `Row("row-1")`, func(ctx context.Context, s retail.Store) error {
			_, _, err := s.Row(ctx, "row-1")
			return err
		}},
		{"SetRow", `row "row-1"`, `SetRow("row-1", <2 bytes>)`, func(ctx context.Context, s retail.Store) error {
			return s.SetRow(ctx, "row-1", []byte("{}"))
		}},
		{"SetScheduledRow", `row "row-1"`, `SetScheduledRow("row-1", <2 bytes>)`, func(ctx context.Context, s retail.Store) error {
			_, err := s.SetScheduledRow(ctx, "row-1", []byte("{}"))
			return err
		}},
		{"CountView", `item "item-1"`, `CountViews("item-1"×1)`, func(ctx context.Context, s retail.Store) error {
			return s.CountView(ctx, "item-1")
		}},
		{"ItemRank", `item "item-1"`, `ItemRank("item-1")`, func(ctx context.Context, s retail.Store) error {
			_, _, err := s.ItemRank(ctx, "item-1")
			return err
		}},
		{"TopItems", "", `TopItems(10)`, func(ctx context.Context, s retail.Store) error {
			_, err := s.TopItems(ctx, 10)
			return err
		}},
		{"RescaleViews", "", `RescaleViews(100, 0.5)`, func(ctx context.Context, s retail.Store) error {
			return s.RescaleViews(ctx, 100, 0.5)
		}},
	}
}

// wantOpError fails the test unless err is an *retail.OpError for op and
// key that matches target; call says what returned err.
func wantOpError(t *testing.T, call string, err error, op, key string, target error) {
	t.Helper()
	var oe *retail.OpError
	switch {
	case !errors.Is(err, target):
		t.Errorf("%s = %v, want an error matching %v", call, err, target)
	case !errors.As(err, &oe):
		t.Errorf("%s = %v (%T), want an *retail.OpError", call, err, err)
	case oe.Op != op || oe.Key != key:
		t.Errorf("%s = OpError{Op: %q, Key: %q}, want Op %q, Key %q", call, oe.Op, oe.Key, op, key)
	}
}

func TestStore_PassesValidCallsToDriver(t *testing.T) {
	for _, c := range storeCalls() {
		t.Run(c.op, func(t *testing.T) {
			d := &fakeDriver{}
			if err := c.do(t.Context(), unbuffered(d)); err != nil {
				t.Fatalf("%s = %v, want nil", c.sent, err)
			}
			if diff := cmp.Diff(strings.Split(c.sent, "\n"), d.recorded()); diff != "" {
				t.Errorf("calls reaching the driver mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStore_CanceledContextNeverReachesDriver(t *testing.T) {
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	expired, cancel := context.WithDeadline(t.Context(), time.Unix(0, 0))
	defer cancel()
	for _, c := range storeCalls() {
		t.Run(c.op, func(t *testing.T) {
			d := &fakeDriver{}
			s := unbuffered(d)
			wantOpError(t, c.sent+" with a canceled context", c.do(canceled, s), c.op, c.key, context.Canceled)
			wantOpError(t, c.sent+" with an expired deadline", c.do(expired, s), c.op, c.key, context.DeadlineExceeded)
			wantNoDriverCalls(t, d, c.sent+" with an ended context")
		})
	}
}

func TestStore_ClosedNeverReachesDriver(t *testing.T) {
	for _, c := range storeCalls() {
		t.Run(c.op, func(t *testing.T) {
			d := &fakeDriver{}
			s := unbuffered(d)
			if err := s.Close(); err != nil {
				t.Fatalf("Close() = %v, want nil", err)
			}
			wantOpError(t, c.sent+" after Close", c.do(t.Context(), s), c.op, c.key, retail.ErrClosed)
			wantNoDriverCalls(t, d, c.sent+" after Close")
		})
	}
}

func TestStore_WrapsDriverErrorsOnce(t *testing.T) {
	for _, c := range storeCalls() {
		t.Run(c.op, func(t *testing.T) {
			derr := &driverError{"connection reset by peer"}
			d := &fakeDriver{err: derr}
			err := c.do(t.Context(), unbuffered(d))
			wantOpError(t, c.sent, err, c.op, c.key, derr)
			var oe *retail.OpError
			if errors.As(err, &oe) && oe.Err != derr {
				t.Errorf("%s = OpError{Err: %#v}, want the driver's error itself, wrapped once", c.sent, oe.Err)
			}
			var de *driverError
			if !errors.As(err, &de) || de != derr {
				t.Errorf("errors.As(%v, *driverError) did not reach the driver's error", err)
			}
			want := "retail: " + c.op + ": connection reset by peer"
			if c.key != "" {
				want = "retail: " + c.op + "(" + c.key + "): connection reset by peer"
			}
			if err != nil && err.Error() != want {
				t.Errorf("%s = %q, want %q", c.sent, err, want)
			}
			// The first failing call ends the call.
			if diff := cmp.Diff(strings.Split(c.sent, "\n")[:1], d.recorded()); diff != "" {
				t.Errorf("calls reaching the driver mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStore_ErrorsHideTokens fails every call that takes a token, with
// tokens of several lengths: the error shows at most four bytes of it.
func TestStore_ErrorsHideTokens(t *testing.T) {
	calls := map[string]func(ctx context.Context, s retail.Store, token string) error{
		"StartSession": func(ctx context.Context, s retail.Store, token string) error {
			_, err := s.StartSession(ctx, token, "")
			return err
		},
		"CheckToken": func(ctx context.Context, s retail.Store, token string) error {
			_, _, err := s.CheckToken(ctx, token)
			return err
		},
		"RefreshSession": func(ctx context.Context, s retail.Store, token string) error {
			_, _, err := s.RefreshSession(ctx, token, "")
			return err
		},
		"RenewSession": func(ctx context.Context, s retail.Store, token string) error {
			_, err := s.RenewSession(ctx, token, "new-"+token, "")
			return err
		},
		"SetValue": func(ctx context.Context, s retail.Store, token string) error {
			return s.SetValue(ctx, token, "k", nil)
		},
		"Value": func(ctx context.Context, s retail.Store, token string) error {
			_, _, err := s.Value(ctx, token, "k")
			return err
		},
		"PopValue": func(ctx context.Context, s retail.Store, token string) error {
			_, _, err := s.PopValue(ctx, token, "k")
			return err
		},
		"DeleteValue": func(ctx context.Context, s retail.Store, token string) error {
			return s.DeleteValue(ctx, token, "k")
		},
		"IncrementCart": func(ctx context.Context, s retail.Store, token string) error {
			_, err := s.IncrementCart(ctx, token, "item-1", 1)
			return err
		},
		"UpdateToken": func(ctx context.Context, s retail.Store, token string) error {
			return s.UpdateToken(ctx, token, "alice", "")
		},
		"RecentItems": func(ctx context.Context, s retail.Store, token string) error {
			_, err := s.RecentItems(ctx, token)
			return err
		},
		"Logout": func(ctx context.Context, s retail.Store, token string) error { return s.Logout(ctx, token) },
		"AddToCart": func(ctx context.Context, s retail.Store, token string) error {
			return s.AddToCart(ctx, token, "item-1", 1)
		},
		"Cart": func(ctx context.Context, s retail.Store, token string) error {
			_, err := s.Cart(ctx, token)
			return err
		},
	}
	for _, tc := range []struct{ token, key string }{
		{"0123456789abcdef0123456789abcdef", `token "0123"…`},
		{"abcde", `token "abcd"…`},
		{"abcd", `token "…"`},
		{"a", `token "…"`},
		{"日本語", `token "日\xe6"…`},
	} {
		for op, call := range calls {
			derr := &driverError{"timeout"}
			err := call(t.Context(), unbuffered(&fakeDriver{err: derr}), tc.token)
			desc := fmt.Sprintf("%s(%q) failing", op, tc.token)
			wantOpError(t, desc, err, op, tc.key, derr)
			if err == nil {
				continue
			}
			if want := "retail: " + op + "(" + tc.key + "): timeout"; err.Error() != want {
				t.Errorf("%s = %q, want %q", desc, err, want)
			}
			if len(tc.token) > 4 && strings.Contains(err.Error(), tc.token[:5]) {
				t.Errorf("%s = %q, shows more than four bytes of the token", desc, err)
			}
		}
	}
}

// TestStore_ErrorsShortenLongKeys fails calls with long key arguments: the
// error shows their first 64 bytes.
func TestStore_ErrorsShortenLongKeys(t *testing.T) {
	derr := &driverError{"timeout"}
	s := unbuffered(&fakeDriver{err: derr})
	ctx := t.Context()
	x64 := strings.Repeat("x", 64)
	_, _, err := s.Row(ctx, x64)
	wantOpError(t, "Row(<64 bytes>)", err, "Row", `row "`+x64+`"`, derr)
	_, _, err = s.Row(ctx, x64+"y")
	wantOpError(t, "Row(<65 bytes>)", err, "Row", `row "`+x64+`"…`, derr)
	_, _, err = s.ItemRank(ctx, strings.Repeat("x", retail.MaxIDLen))
	wantOpError(t, "ItemRank(<MaxIDLen bytes>)", err, "ItemRank", `item "`+x64+`"…`, derr)
	_, _, err = s.Page(ctx, strings.Repeat("x", retail.MaxPageKeyLen))
	wantOpError(t, "Page(<MaxPageKeyLen bytes>)", err, "Page", `key "`+x64+`"…`, derr)
	_, err = s.PurgeItemPages(ctx, strings.Repeat("x", retail.MaxIDLen))
	wantOpError(t, "PurgeItemPages(<MaxIDLen bytes>)", err, "PurgeItemPages", `item "`+x64+`"…`, derr)
}

// statusOutcome is what a Store call returns when its driver reports a
// driver.Status: a result, and no error, ErrNoSession (as an *OpError) or an
// *InputError for invalidArg.
type statusOutcome struct {
	result     any
	noSession  bool
	invalidArg string
}

// TestStore_MapsDriverStatuses makes each call whose driver reports a
// driver.Status with each status its driver may report, over a driver that
// also returns a count of 7: a status that refuses the write is an error
// (ErrNoSession, or ErrInvalid for a limit of stored state), and a refused
// call returns no count.
func TestStore_MapsDriverStatuses(t *testing.T) {
	const tokenKey = `token "tok-"…`
	for _, c := range []struct {
		op   string
		sent string
		do   func(ctx context.Context, s retail.Store) (any, error)
		want map[driver.Status]statusOutcome
	}{
		{"StartSession", `StartSession(id("tok-6f1d2c9a"), "alice")`,
			func(ctx context.Context, s retail.Store) (any, error) {
				return s.StartSession(ctx, secretToken, "alice")
			},
			map[driver.Status]statusOutcome{
				driver.OK:     {result: true},
				driver.Exists: {result: false},
			}},
		{"RenewSession", `RenewSession(id("tok-6f1d2c9a"), id("new-0b7e"), "")`,
			func(ctx context.Context, s retail.Store) (any, error) {
				return s.RenewSession(ctx, secretToken, "new-0b7e", "")
			},
			map[driver.Status]statusOutcome{
				driver.OK:        {result: true},
				driver.NoSession: {result: false},
				driver.Exists:    {result: false, invalidArg: "newToken"},
			}},
		{"StartSessionFor", `StartSession(id("tok-6f1d2c9a"), "alice", Values(1 set, 0 deleted))`,
			func(ctx context.Context, s retail.Store) (any, error) {
				return s.StartSessionFor(ctx, secretToken, "alice", retail.SessionOptions{Values: map[string][]byte{"flash": {}}})
			},
			map[driver.Status]statusOutcome{
				driver.OK:     {result: true},
				driver.Exists: {result: false},
				driver.Full:   {result: false, invalidArg: "Values"},
			}},
		{"RenewSessionFor", `RenewSession(id("tok-6f1d2c9a"), id("new-0b7e"), "alice", Values(1 set, 1 deleted))`,
			func(ctx context.Context, s retail.Store) (any, error) {
				return s.RenewSessionFor(ctx, secretToken, "new-0b7e", "alice",
					retail.SessionOptions{Values: map[string][]byte{"flash": []byte("hi"), "step": nil}})
			},
			map[driver.Status]statusOutcome{
				driver.OK:        {result: true},
				driver.NoSession: {result: false},
				driver.Exists:    {result: false, invalidArg: "newToken"},
				driver.Full:      {result: false, invalidArg: "Values"},
			}},
		{"SetValue", `SetValue(id("tok-6f1d2c9a"), "flash", <0 bytes>)`,
			func(ctx context.Context, s retail.Store) (any, error) {
				return nil, s.SetValue(ctx, secretToken, "flash", []byte{})
			},
			map[driver.Status]statusOutcome{
				driver.OK:        {},
				driver.NoSession: {noSession: true},
				driver.Full:      {invalidArg: "key"},
			}},
		{"AddToCart", `AddToCart(id("tok-6f1d2c9a"), "item-1", 2)`,
			func(ctx context.Context, s retail.Store) (any, error) {
				return nil, s.AddToCart(ctx, secretToken, "item-1", 2)
			},
			map[driver.Status]statusOutcome{
				driver.OK:        {},
				driver.NoSession: {noSession: true},
				driver.Full:      {invalidArg: "item"},
			}},
		{"IncrementCart", `IncrementCart(id("tok-6f1d2c9a"), "item-1", 5)`,
			func(ctx context.Context, s retail.Store) (any, error) {
				return s.IncrementCart(ctx, secretToken, "item-1", 5)
			},
			map[driver.Status]statusOutcome{
				driver.OK:        {result: 7},
				driver.NoSession: {result: 0, noSession: true},
				driver.Full:      {result: 0, invalidArg: "item"},
				driver.TooMany:   {result: 0, invalidArg: "n"},
			}},
	} {
		for st, want := range c.want {
			t.Run(fmt.Sprintf("%s/Status%d", c.op, st), func(t *testing.T) {
				d := &fakeDriver{status: st, count: 7}
				got, err := c.do(t.Context(), unbuffered(d))
				desc := fmt.Sprintf("%s reporting status %d", c.sent, st)
				switch {
				case want.noSession:
					wantOpError(t, desc, err, c.op, tokenKey, retail.ErrNoSession)
					if want := "retail: " + c.op + "(" + tokenKey + "): no such session"; err != nil && err.Error() != want {
						t.Errorf("%s = %q, want %q", desc, err, want)
					}
				case want.invalidArg != "":
					wantInputError(t, desc, err, c.op, want.invalidArg)
					var oe *retail.OpError
					if errors.As(err, &oe) {
						t.Errorf("%s = %v, want the *InputError itself, not wrapped in an *OpError", desc, err)
					}
				case err != nil:
					t.Errorf("%s = %v, want nil error", desc, err)
				}
				if got != want.result {
					t.Errorf("%s = %v, want %v", desc, got, want.result)
				}
				if diff := cmp.Diff([]string{c.sent}, d.recorded()); diff != "" {
					t.Errorf("calls reaching the driver mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestStore_PassesResultsThrough(t *testing.T) {
	ctx := t.Context()
	d := &fakeDriver{
		user: "alice", ok: true, items: []string{"b", "a"}, count: 7, removed: 3,
		cart: map[string]int{"a": 2}, data: []byte("data"), rows: []string{"r1", "r2"}, rank: 4,
	}
	s := unbuffered(d)
	type results struct {
		User       [2]string
		OK         [6]bool
		Items      []string
		Count      int
		LoggedOut  int
		Increment  int
		Removed    int
		Purged     int
		Cart       map[string]int
		Page       string
		Value, Pop string
		Rows       []string
		Row        string
		Rank       int
	}
	var got results
	var errs []error
	var err error
	got.User[0], got.OK[0], err = s.CheckToken(ctx, "tok")
	errs = append(errs, err)
	got.User[1], got.OK[1], err = s.RefreshSession(ctx, "tok", "item")
	errs = append(errs, err)
	got.Items, err = s.RecentItems(ctx, "tok")
	errs = append(errs, err)
	got.Count, err = s.SessionCount(ctx)
	errs = append(errs, err)
	got.LoggedOut, err = s.LogoutUser(ctx, "alice")
	errs = append(errs, err)
	got.Removed, err = s.CleanSessions(ctx, 0, 10)
	errs = append(errs, err)
	got.Purged, err = s.PurgeItemPages(ctx, "item")
	errs = append(errs, err)
	got.Increment, err = s.IncrementCart(ctx, "tok", "item", 1)
	errs = append(errs, err)
	got.Cart, err = s.Cart(ctx, "tok")
	errs = append(errs, err)
	var page, row, value, pop []byte
	page, got.OK[2], err = s.Page(ctx, "key")
	errs = append(errs, err)
	value, got.OK[3], err = s.Value(ctx, "tok", "key")
	errs = append(errs, err)
	pop, got.OK[4], err = s.PopValue(ctx, "tok", "key")
	errs = append(errs, err)
	got.Rows, err = s.ClaimDueRows(ctx, 10)
	errs = append(errs, err)
	row, got.OK[5], err = s.Row(ctx, "row")
	errs = append(errs, err)
	got.Rank, _, err = s.ItemRank(ctx, "item")
	errs = append(errs, err)
	got.Page, got.Row, got.Value, got.Pop = string(page), string(row), string(value), string(pop)
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("calls = %v, want nil errors", err)
	}
	want := results{
		User: [2]string{"alice", "alice"}, OK: [6]bool{true, true, true, true, true, true},
		Items: []string{"b", "a"}, Count: 7, LoggedOut: 7, Increment: 7, Removed: 3, Purged: 7,
		Cart: map[string]int{"a": 2}, Page: "data", Value: "data", Pop: "data",
		Rows: []string{"r1", "r2"}, Row: "data", Rank: 4,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results mismatch (-driver's +Store's):\n%s", diff)
	}
}

// TestStore_PassesMissesThrough: a driver's miss is the Store's miss, with a
// nil error.
func TestStore_PassesMissesThrough(t *testing.T) {
	ctx := t.Context()
	s := unbuffered(&fakeDriver{})
	var oks []bool
	var errs []error
	note := func(ok bool, err error) { oks, errs = append(oks, ok), append(errs, err) }
	_, ok, err := s.CheckToken(ctx, "tok")
	note(ok, err)
	_, ok, err = s.RefreshSession(ctx, "tok", "")
	note(ok, err)
	_, ok, err = s.Value(ctx, "tok", "key")
	note(ok, err)
	_, ok, err = s.PopValue(ctx, "tok", "key")
	note(ok, err)
	_, ok, err = s.Page(ctx, "key")
	note(ok, err)
	_, ok, err = s.Row(ctx, "row")
	note(ok, err)
	_, ok, err = s.ItemRank(ctx, "item")
	note(ok, err)
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("lookups over a driver that misses = %v, want nil errors", err)
	}
	if diff := cmp.Diff(make([]bool, len(oks)), oks); diff != "" {
		t.Errorf("ok of lookups over a driver that misses (-want +got):\n%s", diff)
	}
}

func TestStore_CartWithoutLinesIsEmpty(t *testing.T) {
	cart, err := unbuffered(&fakeDriver{}).Cart(t.Context(), "tok")
	if err != nil || cart == nil || len(cart) != 0 {
		t.Errorf("Cart() over a driver returning nil = %v (nil: %v), %v, want an empty map, nil", cart, cart == nil, err)
	}
}

func TestStore_TopItemsConverts(t *testing.T) {
	d := &fakeDriver{top: []driver.ItemViews{{Item: "a", Views: 3}, {Item: "b", Views: 0.5}}}
	got, err := unbuffered(d).TopItems(t.Context(), 2)
	if err != nil {
		t.Fatalf("TopItems(2) = %v", err)
	}
	want := []retail.ItemViews{{Item: "a", Views: 3}, {Item: "b", Views: 0.5}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TopItems(2) mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"TopItems(2)"}, d.recorded()); diff != "" {
		t.Errorf("calls reaching the driver mismatch (-want +got):\n%s", diff)
	}
}

func TestStore_UserSessionsConverts(t *testing.T) {
	created := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	d := &fakeDriver{sessions: []driver.SessionInfo{
		{ID: "tok-1", User: "alice", Created: created, LastSeen: created.Add(time.Minute)},
		{ID: "tok-2", User: "alice", Created: created.Add(time.Hour), LastSeen: created.Add(2 * time.Hour)},
	}}
	got, err := unbuffered(d).UserSessions(t.Context(), "alice")
	if err != nil {
		t.Fatalf("UserSessions(\"alice\") = %v", err)
	}
	want := []retail.SessionInfo{
		{ID: "tok-1", User: "alice", Created: created, LastSeen: created.Add(time.Minute)},
		{ID: "tok-2", User: "alice", Created: created.Add(time.Hour), LastSeen: created.Add(2 * time.Hour)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UserSessions(\"alice\") mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`UserSessions("alice")`}, d.recorded()); diff != "" {
		t.Errorf("calls reaching the driver mismatch (-want +got):\n%s", diff)
	}

	// A user without sessions has none: an empty result, not an error.
	got, err = unbuffered(&fakeDriver{}).UserSessions(t.Context(), "bob")
	if err != nil || len(got) != 0 {
		t.Errorf("UserSessions(\"bob\") over a driver returning nil = %v, %v, want none, nil", got, err)
	}
}

func TestStore_CloseClosesDriverOnce(t *testing.T) {
	d := &fakeDriver{}
	s := unbuffered(d)
	for i := range 2 {
		if err := s.Close(); err != nil {
			t.Errorf("Close() #%d = %v, want nil", i+1, err)
		}
	}
	if got := d.closed(); got != 1 {
		t.Errorf("driver Close calls after two Closes = %d, want 1", got)
	}

	// Closes racing each other still close the driver once.
	d = &fakeDriver{}
	s = unbuffered(d)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if err := s.Close(); err != nil {
				t.Errorf("concurrent Close() = %v, want nil", err)
			}
		})
	}
	wg.Wait()
	if got := d.closed(); got != 1 {
		t.Errorf("driver Close calls after 16 concurrent Closes = %d, want 1", got)
	}
}

func TestStore_CloseReturnsDriverErrorOnce(t *testing.T) {
	derr := &driverError{"flush failed"}
	d := &fakeDriver{err: derr}
	s := unbuffered(d)
	err := s.Close()
	wantOpError(t, "Close()", err, "Close", "", derr)
	if want := "retail: Close: flush failed"; err != nil && err.Error() != want {
		t.Errorf("Close() = %q, want %q", err, want)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
	if got := d.closed(); got != 1 {
		t.Errorf("driver Close calls = %d, want 1", got)
	}
	// The store is closed even though its driver's Close failed.
	_, err = s.SessionCount(t.Context())
	wantOpError(t, "SessionCount() after a failed Close", err, "SessionCount", "", retail.ErrClosed)
	wantNoDriverCalls(t, d, "SessionCount() after a failed Close")
}

func TestStore_EndSessionRefusesWhatIsNoSessionID(t *testing.T) {
	for _, id := range []string{"", secretToken, retail.SessionID(secretToken) + "x", "abc}defghijklmnopqrstu", strings.Repeat("\x00", 22),
		"AAAAAAAAAAAAAAAAAAAAAB", // 22 base64url characters, but their last 4 bits are not an ID's zero padding
	} {
		d := &fakeDriver{}
		err := unbuffered(d).EndSession(t.Context(), id)
		if !errors.Is(err, retail.ErrInvalid) {
			t.Errorf("EndSession(%q) = %v, want an error matching ErrInvalid", id, err)
		}
		wantNoDriverCalls(t, d, fmt.Sprintf("EndSession(%q)", id))
	}
}
