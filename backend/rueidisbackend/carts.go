package rueidisbackend

import (
	"context"
	"strconv"
)

// addToCart sets or removes a cart line, only while the session exists, so
// a cart never outlives its session. It answers cartWritten or
// cartNoSession.
//
// KEYS: login, cart. ARGV: item, count.
var addToCart = newScript(`
local WRITTEN, NO_SESSION = 1, 0
if redis.call('EXISTS', KEYS[1]) == 0 then return NO_SESSION end
if tonumber(ARGV[2]) <= 0 then
  redis.call('HDEL', KEYS[2], ARGV[1])
else
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
return WRITTEN
`)

// addToCart's answers (the script's WRITTEN and NO_SESSION).
const (
	cartNoSession = 0 // no login key: nothing written
	cartWritten   = 1 // the line was set or removed
)

// AddToCart implements driver.Store with a script that writes the cart only
// while the session's login key exists, on the session's slot, so a cart
// cannot outlive its session whatever runs concurrently.
func (s *store) AddToCart(ctx context.Context, token, item string, count int) (bool, error) {
	ks := s.k.session(token)
	answer, err := s.do(ctx, s.scriptCall(addToCart, []string{ks.login, ks.cart},
		[]string{item, strconv.Itoa(count)}))[0].AsInt64()
	if err != nil {
		return false, err
	}
	return answer == cartWritten, nil
}

// Cart implements driver.Store.
func (s *store) Cart(ctx context.Context, token string) (map[string]int, error) {
	lines, err := s.c.Do(ctx, s.c.B().Hgetall().Key(s.k.sessionKey(cartKind, token)).Build()).AsStrMap()
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
