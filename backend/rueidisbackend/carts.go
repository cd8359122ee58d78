package rueidisbackend

import (
	"context"
	"strconv"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
)

// cartWrite sets (ARGV[9] "set") or adds to (ARGV[9] "add") the count of a
// cart line, only while the session is live, so that a cart never outlives
// its session. A count that ends at zero or less removes the line; a new
// line in a cart of retail.MaxCartLines lines is refused (FULL), and so is
// an addition that takes the count past retail.MaxCartCount (TOO_MANY).
// The cart's TTL follows the session's (see state.go).
//
// KEYS: the session's login, seen and cart keys (the first three of
// sessionKeys.all: the script needs no more, and every string a call
// passes costs the server). ARGV: sessionArgs, item, count or increment,
// "set" or "add". Answers the line's count (0 if removed) when it wrote,
// or {status} when it did not: a bare integer costs the server less to
// answer than an array.
var cartWrite = sessionScript(cartBody)

// cartKeys is how many of a session's keys cartWrite takes.
const cartKeys = 3

var cartBody = `
local MAX_LINES, MAX_COUNT = ` + itoa(retail.MaxCartLines) + `, ` + itoa(retail.MaxCartCount) + `
local created, deadline = liveAt(KEYS[1], KEYS[2])
if not created then return {NO_SESSION} end
-- The count goes to Redis as the string it came as: a Lua number would
-- be formatted with %.17g, which costs more than the rest of the write.
local item, n = ARGV[7], tonumber(ARGV[8])
-- Written first, as the common case is a line the cart has; a write that
-- is refused is taken back (the script is one atomic step: no one sees it).
local count, new = n, false
if ARGV[9] == 'add' then
  count = redis.call('HINCRBY', KEYS[3], item, ARGV[8])
  new = count == n -- a stored line is never 0
  if count > MAX_COUNT then
    if new then redis.call('HDEL', KEYS[3], item) else redis.call('HINCRBY', KEYS[3], item, -n) end
    return {TOO_MANY}
  end
elseif n > 0 then
  new = redis.call('HSET', KEYS[3], item, ARGV[8]) == 1
end
if count <= 0 then
  redis.call('HDEL', KEYS[3], item)
  return 0
end
if new then
  local lines = redis.call('HLEN', KEYS[3])
  if lines > MAX_LINES then
    redis.call('HDEL', KEYS[3], item)
    return {FULL}
  end
  -- A cart that existed has the session's TTL already: set with it, and
  -- moved with it whenever the login is rewritten (expireRest).
  if lines == 1 then redis.call('PEXPIRE', KEYS[3], keyTTL(created, deadline)) end
end
return count
`

// writeCart runs cartWrite on token's session.
func (s *store) writeCart(ctx context.Context, token, item string, n int, mode string) (int, driver.Status, error) {
	if out, err := s.revokedToken(ctx, token); out || err != nil {
		return 0, driver.NoSession, err
	}
	args := s.sessionArgs(s.nowMs(), "", item, itoa(n), mode)
	ks := s.k.session(token)
	msg, err := s.runScript(ctx, s.batches.cart, cartWrite, ks.all()[:cartKeys], args)
	s.own.deleted(ks.cart) // until the cache has heard, Cart reads the server
	if err != nil {
		return 0, 0, err
	}
	if count, err := msg.AsInt64(); err == nil {
		return int(count), driver.OK, nil
	}
	reply, err := msg.ToArray()
	if err != nil {
		return 0, 0, err
	}
	st, err := status(reply)
	if err == nil && st == driver.OK {
		err = errShortReply // OK comes as a bare count
	}
	return 0, st, err
}

// AddToCart implements driver.Store with one script on the session's slot.
func (s *store) AddToCart(ctx context.Context, token, item string, count int) (driver.Status, error) {
	_, st, err := s.writeCart(ctx, token, item, count, "set")
	return st, err
}

// IncrementCart implements driver.Store with one script on the session's
// slot.
func (s *store) IncrementCart(ctx context.Context, token, item string, n int) (int, driver.Status, error) {
	return s.writeCart(ctx, token, item, n, "add")
}

// Cart implements driver.Store: the session's login and its cart, read
// through the client-side cache (the cart changes only when it is written).
func (s *store) Cart(ctx context.Context, token string) (map[string]int, error) {
	ks := s.k.session(token)
	if live, err := s.liveSession(ctx, token, ks); !live || err != nil {
		return nil, err
	}
	lines, err := s.cachedHash(ctx, ks.cart)
	if err != nil {
		return nil, err
	}
	cart := make(map[string]int, len(lines))
	for item, v := range lines {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, err
		}
		cart[item] = n
	}
	return cart, nil
}
