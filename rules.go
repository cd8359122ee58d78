package retail

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// The input rules every Store applies, in one table (documented here, at
// MaxIDLen, because Go has no other place for it). An argument outside
// them is rejected with an *InputError (matching ErrInvalid) before anything
// is written.
//
//	argument        rule
//	token, item,    1..MaxIDLen bytes, no ASCII control characters
//	  row           (item may also be empty in UpdateToken: no item viewed)
//	user            1..MaxUserLen bytes of valid UTF-8
//	cart count      at most MaxCartCount (zero or less removes the line)
//	page key        1..MaxPageKeyLen bytes, no ASCII control characters
//	page body       at most MaxPageSize bytes
//	page ttl        MinDuration..MaxPageTTL
//	row data        at most MaxRowSize bytes
//	row delay       zero or less (unschedule), or MinDuration..MaxRowDelay
//	keep, max       not negative (CleanSessions, RescaleViews)
//	TopItems n      0..MaxTopItems
//	claim limit     1..MaxClaimRows
//	rescale factor  greater than 0 and at most 1
//
// Backends call the Validate functions below so the rules cannot drift
// apart between them.
const (
	MaxIDLen      = 256                // tokens, items and row ids, in bytes
	MaxUserLen    = 1024               // users, in bytes
	MaxCartCount  = math.MaxInt32      // one cart line
	MaxPageKeyLen = 2048               // page keys, in bytes
	MaxPageSize   = 4 << 20            // page bodies, in bytes
	MaxRowSize    = 4 << 20            // cached rows, in bytes
	MinDuration   = time.Millisecond   // shortest page TTL or row delay: the clock's resolution
	MaxPageTTL    = 7 * 24 * time.Hour // longest page TTL
	MaxRowDelay   = 7 * 24 * time.Hour // longest row refresh delay
	MaxTopItems   = 100_000            // largest TopItems n
	MaxClaimRows  = 10_000             // largest ClaimDueRows limit
)

// DefaultRecentLimit is how many recently viewed items a session keeps, as
// in the book.
const DefaultRecentLimit = 25

// ValidateCheckToken checks the arguments of Sessions.CheckToken.
func ValidateCheckToken(token string) error { return checkID("CheckToken", "token", token) }

// ValidateUpdateToken checks the arguments of Sessions.UpdateToken.
func ValidateUpdateToken(token, user, item string) error {
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

// ValidateRecentItems checks the arguments of Sessions.RecentItems.
func ValidateRecentItems(token string) error { return checkID("RecentItems", "token", token) }

// ValidateLogout checks the arguments of Sessions.Logout.
func ValidateLogout(token string) error { return checkID("Logout", "token", token) }

// ValidateCleanSessions checks the arguments of Sessions.CleanSessions.
func ValidateCleanSessions(keep, max int) error {
	if keep < 0 {
		return invalid("CleanSessions", "keep", "negative")
	}
	if max < 0 {
		return invalid("CleanSessions", "max", "negative")
	}
	return nil
}

// ValidateAddToCart checks the arguments of Carts.AddToCart.
func ValidateAddToCart(token, item string, count int) error {
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

// ValidateCart checks the arguments of Carts.Cart.
func ValidateCart(token string) error { return checkID("Cart", "token", token) }

// ValidatePage checks the arguments of Pages.Page.
func ValidatePage(key string) error { return checkPageKey("Page", key) }

// ValidateSetPage checks the arguments of Pages.SetPage.
func ValidateSetPage(key string, body []byte, ttl time.Duration) error {
	const op = "SetPage"
	if err := checkPageKey(op, key); err != nil {
		return err
	}
	if len(body) > MaxPageSize {
		return invalid(op, "body", "longer than "+strconv.Itoa(MaxPageSize)+" bytes")
	}
	if ttl < MinDuration {
		return invalid(op, "ttl", "shorter than "+MinDuration.String())
	}
	if ttl > MaxPageTTL {
		return invalid(op, "ttl", "longer than "+days(MaxPageTTL))
	}
	return nil
}

// ValidateScheduleRowCache checks the arguments of Rows.ScheduleRowCache.
func ValidateScheduleRowCache(row string, delay time.Duration) error {
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

// ValidateClaimDueRows checks the arguments of Rows.ClaimDueRows.
func ValidateClaimDueRows(limit int) error {
	if limit < 1 || limit > MaxClaimRows {
		return invalid("ClaimDueRows", "limit", "not in 1.."+strconv.Itoa(MaxClaimRows))
	}
	return nil
}

// ValidateRow checks the arguments of Rows.Row.
func ValidateRow(row string) error { return checkID("Row", "row", row) }

// ValidateSetRow checks the arguments of Rows.SetRow.
func ValidateSetRow(row string, data []byte) error {
	if err := checkID("SetRow", "row", row); err != nil {
		return err
	}
	if len(data) > MaxRowSize {
		return invalid("SetRow", "data", "longer than "+strconv.Itoa(MaxRowSize)+" bytes")
	}
	return nil
}

// ValidateItemRank checks the arguments of Views.ItemRank.
func ValidateItemRank(item string) error { return checkID("ItemRank", "item", item) }

// ValidateTopItems checks the arguments of Views.TopItems.
func ValidateTopItems(n int) error {
	if n < 0 || n > MaxTopItems {
		return invalid("TopItems", "n", "not in 0.."+strconv.Itoa(MaxTopItems))
	}
	return nil
}

// ValidateRescaleViews checks the arguments of Views.RescaleViews.
func ValidateRescaleViews(keep int, factor float64) error {
	if keep < 0 {
		return invalid("RescaleViews", "keep", "negative")
	}
	// Written so that NaN fails too.
	if !(factor > 0 && factor <= 1) {
		return invalid("RescaleViews", "factor", "not in (0, 1]")
	}
	return nil
}

// days formats a limit of whole days for error messages.
func days(d time.Duration) string { return strconv.Itoa(int(d/(24*time.Hour))) + " days" }

func invalid(op, arg, reason string) error {
	return &InputError{Op: op, Arg: arg, Reason: reason}
}

// checkID applies the rule shared by tokens, items and row ids.
func checkID(op, arg, s string) error {
	if s == "" {
		return invalid(op, arg, "empty")
	}
	if len(s) > MaxIDLen {
		return invalid(op, arg, "longer than "+strconv.Itoa(MaxIDLen)+" bytes")
	}
	if hasControl(s) {
		return invalid(op, arg, "contains a control character")
	}
	return nil
}

func checkUser(op, user string) error {
	if user == "" {
		return invalid(op, "user", "empty")
	}
	if len(user) > MaxUserLen {
		return invalid(op, "user", "longer than "+strconv.Itoa(MaxUserLen)+" bytes")
	}
	if !utf8.ValidString(user) {
		return invalid(op, "user", "not valid UTF-8")
	}
	return nil
}

func checkPageKey(op, key string) error {
	if key == "" {
		return invalid(op, "key", "empty")
	}
	if len(key) > MaxPageKeyLen {
		return invalid(op, "key", "longer than "+strconv.Itoa(MaxPageKeyLen)+" bytes")
	}
	if hasControl(key) {
		return invalid(op, "key", "contains a control character")
	}
	return nil
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}
