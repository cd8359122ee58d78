package retail

import (
	"strconv"
	"time"

	"github.com/retailkit/retail/internal/rules"
)

// The limits of the input rules (see the package documentation, "Input
// rules").
const (
	MaxIDLen         = 256                // tokens, items and row ids, in bytes
	MaxUserLen       = 1024               // users, in bytes
	MaxCartCount     = 10_000             // the count of one cart line
	MaxCartLines     = 100                // lines in one cart
	MaxSessionValues = 32                 // values in one session
	MaxValueSize     = 4096               // one session value, in bytes
	MaxPageKeyLen    = 2048               // page keys, in bytes
	MaxPageSize      = 4 << 20            // what SetPage stores under one key, in bytes
	MaxRowSize       = 4 << 20            // cached rows, in bytes
	MinDuration      = time.Millisecond   // shortest page TTL or row delay: the clock's resolution
	MaxPageTTL       = 7 * 24 * time.Hour // longest page TTL
	MaxRowDelay      = 7 * 24 * time.Hour // longest row refresh delay
	MaxTopItems      = 100_000            // largest TopItems n
	MaxClaimRows     = 10_000             // largest ClaimDueRows limit
	MaxLabelLen      = rules.MaxLabelLen  // a session's label, in bytes
)

// DefaultRecentLimit is how many recently viewed items a session keeps, as
// in the book.
const DefaultRecentLimit = 25

// The bounds of a session's life, used where a backend's options leave them
// zero. They follow Spring Session (30 minutes idle) and scs (24 hours in
// all): long enough for a visit with a pause, short enough that a stolen
// token is worth little by the next day.
//
// Every backend resolves its session options alike: a zero IdleTimeout or
// Lifetime takes the default below and must then be in
// MinDuration..MaxSessionTime, and every session time is then rounded up to
// whole milliseconds (the resolution at which Stores read their clock), so
// that a session never ends sooner than configured: an idle timeout of
// 1.5 ms is 2 ms on every backend.
const (
	DefaultIdleTimeout = 30 * time.Minute     // a session not refreshed this long expires
	DefaultLifetime    = 24 * time.Hour       // a session expires this long after it started or last logged in
	MaxSessionTime     = 365 * 24 * time.Hour // the longest idle timeout or lifetime

	// DefaultTouchEvery is how often, at most, a session that only gets
	// visits is written, where a backend's TouchEvery option is zero and
	// half the idle timeout is not shorter (otherwise it is that half,
	// rounded down to whole milliseconds): a minute, against the default
	// 30-minute idle timeout, so a visitor who keeps browsing is written
	// about once a minute instead of on every page, and a session ends
	// within a minute of the idle timeout after its last visit.
	//
	// A refresh of a session written less than TouchEvery ago that views
	// no new item (none, or the one it viewed last) writes nothing: the
	// Store answers it from what it has read already, which on Redis costs
	// no round trip. The session's last-seen time then moves only every
	// TouchEvery, so it expires between IdleTimeout-TouchEvery and
	// IdleTimeout after its last visit, and a cleaning pass may count it
	// as seen up to TouchEvery earlier than it was. A negative TouchEvery
	// writes every visit; a positive one is rounded up to whole
	// milliseconds and must then be at most half the idle timeout, so that
	// a session visited at least every half timeout never expires.
	DefaultTouchEvery = time.Minute
)

// The checks below are the input rules, one function a rule; the Store
// wrapper (store.go) calls them before anything reaches a driver.

func checkID(op, arg, s string) error {
	if why := rules.ID(s); why != "" {
		return invalid(op, arg, why)
	}
	return nil
}

func checkUser(op, user string) error {
	if why := rules.User(user); why != "" {
		return invalid(op, "user", why)
	}
	return nil
}

func checkPageKey(op, key string) error {
	if why := rules.PageKey(key); why != "" {
		return invalid(op, "key", why)
	}
	return nil
}

func checkUpdateToken(token, user, item string) error {
	const op = "UpdateToken"
	if err := checkID(op, "token", token); err != nil {
		return err
	}
	if err := checkUser(op, user); err != nil {
		return err
	}
	if item == "" {
		return nil
	}
	return checkID(op, "item", item)
}

func checkNotNegative(op, arg string, n int) error {
	if n < 0 {
		return invalid(op, arg, "negative")
	}
	return nil
}

func checkAddToCart(token, item string, count int) error {
	const op = "AddToCart"
	if err := checkID(op, "token", token); err != nil {
		return err
	}
	if err := checkID(op, "item", item); err != nil {
		return err
	}
	if count > MaxCartCount {
		return invalid(op, "count", "more than "+strconv.Itoa(MaxCartCount))
	}
	return nil
}

func checkIncrementCart(token, item string, n int) error {
	const op = "IncrementCart"
	if err := checkID(op, "token", token); err != nil {
		return err
	}
	if err := checkID(op, "item", item); err != nil {
		return err
	}
	if n > MaxCartCount || n < -MaxCartCount {
		return invalid(op, "n", "not in -"+strconv.Itoa(MaxCartCount)+".."+strconv.Itoa(MaxCartCount))
	}
	return nil
}

// checkGuestUser applies the user rule to a user that may be empty (a
// guest, or "keep the user").
func checkGuestUser(op, user string) error {
	if user == "" {
		return nil
	}
	return checkUser(op, user)
}

// checkSessionOptions checks a session's own lifetime against the Store's,
// max (0 takes the Store's), and its label.
func checkSessionOptions(op string, opts SessionOptions, max time.Duration) error {
	if opts.Lifetime < 0 || opts.Lifetime > max {
		return invalid(op, "Lifetime", "not in [0, "+max.String()+"], the Store's lifetime")
	}
	if why := rules.Label(opts.Label); why != "" {
		return invalid(op, "Label", why)
	}
	return checkSessionValues(op, opts.Values)
}

// checkSessionValues checks the values a login sets (SessionOptions.Values)
// as SetValue checks one, and that there are at most MaxSessionValues to
// set. Whether a session that already holds values can take them is the
// driver's to tell: only it knows the session's values.
func checkSessionValues(op string, values map[string][]byte) error {
	set := 0
	for key, value := range values {
		if why := rules.ID(key); why != "" {
			return invalid(op, "Values", keyArg("key", key)+": "+why)
		}
		if len(value) > MaxValueSize {
			return invalid(op, "Values", keyArg("the value of", key)+": longer than "+strconv.Itoa(MaxValueSize)+" bytes")
		}
		if value != nil {
			set++
		}
	}
	if set > MaxSessionValues {
		return tooManyValues(op)
	}
	return nil
}

func checkTokenKey(op, token, key string) error {
	if err := checkID(op, "token", token); err != nil {
		return err
	}
	return checkID(op, "key", key)
}

func checkSetValue(token, key string, value []byte) error {
	const op = "SetValue"
	if err := checkTokenKey(op, token, key); err != nil {
		return err
	}
	if len(value) > MaxValueSize {
		return invalid(op, "value", "longer than "+strconv.Itoa(MaxValueSize)+" bytes")
	}
	return nil
}

func checkRenewSession(op, token, newToken, user string) error {
	if err := checkID(op, "token", token); err != nil {
		return err
	}
	if err := checkID(op, "newToken", newToken); err != nil {
		return err
	}
	if token == newToken {
		return invalid(op, "newToken", "the same as token")
	}
	return checkGuestUser(op, user)
}

func checkSetPage(key string, body []byte, ttl time.Duration) error {
	return checkPageWrite("SetPage", key, body, ttl)
}

func checkSetItemPage(item, key string, body []byte, ttl time.Duration) error {
	const op = "SetItemPage"
	if err := checkID(op, "item", item); err != nil {
		return err
	}
	return checkPageWrite(op, key, body, ttl)
}

func checkPageWrite(op, key string, body []byte, ttl time.Duration) error {
	if err := checkPageKey(op, key); err != nil {
		return err
	}
	if len(body) > MaxPageSize {
		return invalid(op, "body", "longer than "+strconv.Itoa(MaxPageSize)+" bytes")
	}
	return checkPageTTL(op, "ttl", ttl)
}

func checkPageTTL(op, arg string, ttl time.Duration) error {
	if ttl < MinDuration || ttl > MaxPageTTL {
		return invalid(op, arg, "not in "+MinDuration.String()+".."+days(MaxPageTTL))
	}
	return nil
}

func checkScheduleRowCache(row string, delay time.Duration) error {
	const op = "ScheduleRowCache"
	if err := checkID(op, "row", row); err != nil {
		return err
	}
	if delay > 0 && delay < MinDuration {
		return invalid(op, "delay", "between 0 and "+MinDuration.String())
	}
	if delay > MaxRowDelay {
		return invalid(op, "delay", "longer than "+days(MaxRowDelay))
	}
	return nil
}

func checkClaimLimit(op, arg string, limit int) error {
	if limit < 1 || limit > MaxClaimRows {
		return invalid(op, arg, "not in 1.."+strconv.Itoa(MaxClaimRows))
	}
	return nil
}

func checkRow(op, row string, data []byte) error {
	if err := checkID(op, "row", row); err != nil {
		return err
	}
	if len(data) > MaxRowSize {
		return invalid(op, "data", "longer than "+strconv.Itoa(MaxRowSize)+" bytes")
	}
	return nil
}

func checkTopItems(n int) error {
	if n < 0 || n > MaxTopItems {
		return invalid("TopItems", "n", "not in 0.."+strconv.Itoa(MaxTopItems))
	}
	return nil
}

func checkRescale(op string, keep int, factor float64) error {
	if err := checkNotNegative(op, "keep", keep); err != nil {
		return err
	}
	// Written so that NaN fails too.
	if !(factor > 0 && factor <= 1) {
		return invalid(op, "factor", "not in (0, 1]")
	}
	return nil
}

// days formats a limit of whole days for error messages.
func days(d time.Duration) string { return strconv.Itoa(int(d/(24*time.Hour))) + " days" }

func invalid(op, arg, reason string) error {
	return &InputError{Op: op, Arg: arg, Reason: reason}
}
