package memory

import (
	"context"
	"maps"
	"strings"
)

// AddToCart implements driver.Store. The cart lives inside its session, so
// it goes wherever the session goes.
func (s *store) AddToCart(ctx context.Context, token, item string, count int) (bool, error) {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	x := s.sessions[token]
	if x == nil {
		return false, nil
	}
	if count <= 0 {
		delete(x.cart, item)
		return true, nil
	}
	if x.cart == nil {
		x.cart = make(map[string]int)
	}
	if _, ok := x.cart[item]; !ok {
		item = strings.Clone(item)
	}
	x.cart[item] = count
	return true, nil
}

// Cart implements driver.Store.
func (s *store) Cart(ctx context.Context, token string) (map[string]int, error) {
	s.sessMu.RLock()
	defer s.sessMu.RUnlock()
	if x := s.sessions[token]; x != nil && len(x.cart) > 0 {
		return maps.Clone(x.cart), nil
	}
	return map[string]int{}, nil
}
