package rueidisbackend

import (
	"context"
	"strconv"

	"github.com/retailkit/retail"
)

// AddToCart implements retail.Carts with a script that writes the cart only
// while the session's login key exists, on the session's slot, so a cart
// cannot outlive its session whatever runs concurrently.
func (s *Store) AddToCart(ctx context.Context, token, item string, count int) error {
	if err := s.begin(ctx, retail.ValidateAddToCart(token, item, count)); err != nil {
		return err
	}
	ks := s.k.sessionKeys(token)
	ok, err := s.do(ctx, s.scriptCall(addToCart, []string{ks[loginKey], ks[cartKey]},
		[]string{item, strconv.Itoa(count)}))[0].AsInt64()
	if err != nil {
		return wrap("AddToCart", err)
	}
	if ok == 0 {
		return retail.ErrNoSession
	}
	return nil
}

// Cart implements retail.Carts.
func (s *Store) Cart(ctx context.Context, token string) (map[string]int, error) {
	if err := s.begin(ctx, retail.ValidateCart(token)); err != nil {
		return nil, err
	}
	lines, err := s.c.Do(ctx, s.c.B().Hgetall().Key(s.k.session(cartKey, token)).Build()).AsStrMap()
	if err != nil {
		return nil, wrap("Cart", err)
	}
	cart := make(map[string]int, len(lines))
	for item, v := range lines {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, wrap("Cart", err)
		}
		cart[item] = n
	}
	return cart, nil
}
