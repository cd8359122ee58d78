package retail_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
)

// fakeDriver is a driver.Store that records every call and answers with the
// results set in it.
type fakeDriver struct {
	// err, if set, is what every method returns, Close included.
	err error
	// failOn, if set, is what the calls it names return instead of err:
	// by the call as recorded (`Logout(id("u"))`) or by its method
	// ("Logout"). Set it before the calls it is for.
	failOn map[string]error
	// status is what the writes that depend on a session's state report.
	status driver.Status
	// What the lookups return.
	user     string
	ok       bool
	items    []string
	count    int // SessionCount, LogoutUser and IncrementCart
	cart     map[string]int
	data     []byte // Page, Row, Value and PopValue
	rows     []string
	rank     int
	top      []driver.ItemViews
	sessions []driver.SessionInfo
	removed  int
	repaired int // RepairSessions

	// What CacheCounts returns.
	hits, misses atomic.Uint64

	mu     sync.Mutex
	calls  []string // every call but Close and CacheCounts, as "Op(args)"
	closes int
	turns  map[string]turn // the latest turn Claim gave, by name
}

type turn struct {
	n     int64
	owner string
}

var _ driver.Store = (*fakeDriver)(nil)

// record notes a call with its arguments, each shown by arg.
func (d *fakeDriver) record(op string, args ...any) error {
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = arg(a)
	}
	call := op + "(" + strings.Join(shown, ", ") + ")"
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, call)
	if err, ok := d.failOn[call]; ok {
		return err
	}
	if err, ok := d.failOn[op]; ok {
		return err
	}
	return d.err
}

// sid is a session ID as the driver receives it: the hash of a token
// (see retail.SessionID). A recorded call shows it as id(TOKEN) for the
// tokens the tests use, so that a test can see that the wrapper hashed
// the token it was given.
type sid string

// tokenOf maps the IDs of the tests' tokens back to the tokens.
var tokenOf = func() map[string]string {
	m := map[string]string{}
	for _, t := range []string{secretToken, "new-0b7e", "t", "u", "v", "w", "\xff", strings.Repeat("i", retail.MaxIDLen), strings.Repeat("i", retail.MaxIDLen-1) + "j"} {
		m[retail.SessionID(t)] = t
	}
	return m
}()

// arg shows an argument in a recorded call: short strings quoted, long ones
// and byte slices by their length.
func arg(a any) string {
	switch v := a.(type) {
	case rawArg:
		return string(v)
	case sid:
		if token, ok := tokenOf[string(v)]; ok {
			return "id(" + arg(token) + ")"
		}
		return "id(?)"
	case string:
		if len(v) > 40 {
			return fmt.Sprintf("<%d bytes>", len(v))
		}
		return fmt.Sprintf("%q", v)
	case []byte:
		return fmt.Sprintf("<%d bytes>", len(v))
	}
	return fmt.Sprint(a)
}

func (d *fakeDriver) recorded() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

func (d *fakeDriver) closed() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closes
}

func (d *fakeDriver) CheckToken(_ context.Context, token string) (string, bool, error) {
	return d.user, d.ok, d.record("CheckToken", sid(token))
}

func (d *fakeDriver) StartSession(_ context.Context, token, user string, opts driver.SessionOptions) (driver.Status, error) {
	return d.status, d.record("StartSession", withValues([]any{sid(token), user}, opts.Values)...)
}

// withValues returns args with a summary of the values a login sets, if
// it sets any.
func withValues(args []any, values map[string][]byte) []any {
	if values == nil {
		return args
	}
	set := 0
	for _, v := range values {
		if v != nil {
			set++
		}
	}
	return append(args, rawArg(fmt.Sprintf("Values(%d set, %d deleted)", set, len(values)-set)))
}

func (d *fakeDriver) RefreshSession(_ context.Context, token, item string) (string, bool, error) {
	return d.user, d.ok, d.record("RefreshSession", sid(token), item)
}

func (d *fakeDriver) RenewSession(_ context.Context, token, newToken, user string, opts driver.SessionOptions) (driver.Status, error) {
	return d.status, d.record("RenewSession", withValues([]any{sid(token), sid(newToken), user}, opts.Values)...)
}

func (d *fakeDriver) UserSessions(_ context.Context, user string) ([]driver.SessionInfo, error) {
	return d.sessions, d.record("UserSessions", user)
}

func (d *fakeDriver) LogoutUser(_ context.Context, user string) (int, error) {
	return d.count, d.record("LogoutUser", user)
}

func (d *fakeDriver) SetValue(_ context.Context, token, key string, value []byte) (driver.Status, error) {
	return d.status, d.record("SetValue", sid(token), key, value)
}

func (d *fakeDriver) Value(_ context.Context, token, key string) ([]byte, bool, error) {
	return d.data, d.ok, d.record("Value", sid(token), key)
}

func (d *fakeDriver) PopValue(_ context.Context, token, key string) ([]byte, bool, error) {
	return d.data, d.ok, d.record("PopValue", sid(token), key)
}

func (d *fakeDriver) DeleteValue(_ context.Context, token, key string) error {
	return d.record("DeleteValue", sid(token), key)
}

func (d *fakeDriver) UpdateToken(_ context.Context, token, user, item string) error {
	return d.record("UpdateToken", sid(token), user, item)
}

func (d *fakeDriver) RecentItems(_ context.Context, token string) ([]string, error) {
	return d.items, d.record("RecentItems", sid(token))
}

func (d *fakeDriver) Logout(_ context.Context, token string) error {
	return d.record("Logout", sid(token))
}

func (d *fakeDriver) SessionCount(context.Context) (int, error) {
	return d.count, d.record("SessionCount")
}

func (d *fakeDriver) CleanSessions(_ context.Context, keep, max int) (int, error) {
	return d.removed, d.record("CleanSessions", keep, max)
}

func (d *fakeDriver) AddToCart(_ context.Context, token, item string, count int) (driver.Status, error) {
	return d.status, d.record("AddToCart", sid(token), item, count)
}

func (d *fakeDriver) IncrementCart(_ context.Context, token, item string, n int) (int, driver.Status, error) {
	return d.count, d.status, d.record("IncrementCart", sid(token), item, n)
}

func (d *fakeDriver) Cart(_ context.Context, token string) (map[string]int, error) {
	return d.cart, d.record("Cart", sid(token))
}

func (d *fakeDriver) Page(_ context.Context, key string) ([]byte, bool, error) {
	return d.data, d.ok, d.record("Page", key)
}

func (d *fakeDriver) SetPage(_ context.Context, key string, data []byte, ttl time.Duration) error {
	return d.record("SetPage", key, data, ttl)
}

func (d *fakeDriver) SetItemPage(_ context.Context, item, key string, data []byte, ttl time.Duration) error {
	return d.record("SetItemPage", item, key, data, ttl)
}

func (d *fakeDriver) DeletePage(_ context.Context, key string) error {
	return d.record("DeletePage", key)
}

func (d *fakeDriver) PurgeItemPages(_ context.Context, item string) (int, error) {
	return d.count, d.record("PurgeItemPages", item)
}

func (d *fakeDriver) ScheduleRowCache(_ context.Context, row string, delay time.Duration) error {
	return d.record("ScheduleRowCache", row, delay)
}

func (d *fakeDriver) ClaimDueRows(_ context.Context, limit int) ([]string, error) {
	return d.rows, d.record("ClaimDueRows", limit)
}

func (d *fakeDriver) Row(_ context.Context, row string) ([]byte, bool, error) {
	return d.data, d.ok, d.record("Row", row)
}

func (d *fakeDriver) SetRow(_ context.Context, row string, data []byte) error {
	return d.record("SetRow", row, data)
}

func (d *fakeDriver) SetScheduledRow(_ context.Context, row string, data []byte) (bool, error) {
	return d.ok, d.record("SetScheduledRow", row, data)
}

// CountViews records the views, after "#SEQ: " if they are a flush (see
// driver.ViewFlush).
func (d *fakeDriver) CountViews(_ context.Context, flush driver.ViewFlush, views []driver.ItemViews) error {
	shown := make([]string, len(views))
	for i, v := range views {
		shown[i] = arg(v.Item) + "×" + fmt.Sprint(v.Views)
	}
	slices.Sort(shown)
	list := strings.Join(shown, ", ")
	if flush.Seq > 0 {
		list = fmt.Sprintf("#%d: %s", flush.Seq, list)
	}
	return d.record("CountViews", rawArg(list))
}

// rawArg is an argument a recorded call shows as it is.
type rawArg string

// unbuffered is the Store over d that sends each view to d at once (see
// retail.StoreOptions), so that a test sees every call reach d.
func unbuffered(d driver.Store) retail.Store {
	return retail.NewStoreWith(d, retail.StoreOptions{ViewFlush: -1})
}

func (d *fakeDriver) ItemRank(_ context.Context, item string) (int, bool, error) {
	return d.rank, d.ok, d.record("ItemRank", item)
}

func (d *fakeDriver) TopItems(_ context.Context, n int) ([]driver.ItemViews, error) {
	return d.top, d.record("TopItems", n)
}

func (d *fakeDriver) RescaleViews(_ context.Context, keep int, factor float64) error {
	return d.record("RescaleViews", keep, factor)
}

func (d *fakeDriver) RepairSessions(context.Context) (int, error) {
	return d.repaired, d.record("RepairSessions")
}

// Claim gives each turn of a work to the first owner that claims it, as a
// backend shared by processes does, so that the workers of every Store over
// one fakeDriver take turns.
func (d *fakeDriver) Claim(_ context.Context, name, owner string, n int64, hold time.Duration) (bool, error) {
	if err := d.record("Claim", name, owner, n, hold); err != nil {
		return false, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if last, ok := d.turns[name]; ok && last.n >= n {
		return last == turn{n, owner}, nil
	}
	if d.turns == nil {
		d.turns = map[string]turn{}
	}
	d.turns[name] = turn{n, owner}
	return true, nil
}

func (d *fakeDriver) CacheCounts() (hits, misses uint64) {
	return d.hits.Load(), d.misses.Load()
}

func (d *fakeDriver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closes++
	return d.err
}

// driverError is an error of a backend's own type, as its client returns
// it.
type driverError struct{ msg string }

func (e *driverError) Error() string { return e.msg }
