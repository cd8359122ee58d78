package memory

import (
	"context"
	"maps"
	"strings"

	"github.com/retailkit/retail"
)

// AddToCart implements retail.Carts. The cart lives inside its session, so
// it goes wherever the session goes.
func (s *Store) AddToCart(ctx context.Context, token, item string, count int) error {
	if err := s.begin(ctx, retail.ValidateAddToCart(token, item, count)); err != nil {
		return err
	}
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	x := s.sessions[token]
	if x == nil {
		return retail.ErrNoSession
	}
	if count <= 0 {
		delete(x.cart, item)
		return nil
	}
	if x.cart == nil {
		x.cart = make(map[string]int)
	}
	if _, ok := x.cart[item]; !ok {
		item = strings.Clone(item)
	}
	x.cart[item] = count
	return nil
}

// Cart implements retail.Carts.
func (s *Store) Cart(ctx context.Context, token string) (map[string]int, error) {
	if err := s.begin(ctx, retail.ValidateCart(token)); err != nil {
		return nil, err
	}
	s.sessMu.RLock()
	defer s.sessMu.RUnlock()
	if x := s.sessions[token]; x != nil && len(x.cart) > 0 {
		return maps.Clone(x.cart), nil
	}
	return map[string]int{}, nil
}
