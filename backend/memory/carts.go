package memory

import (
	"context"
	"maps"
	"strings"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
)

// AddToCart implements driver.Store. The cart lives inside its session, so
// it goes wherever the session goes.
func (s *store) AddToCart(ctx context.Context, token, item string, count int) (driver.Status, error) {
	now := s.now()
	sh := s.shard(token)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	x := s.liveSession(sh, token, now)
	if x == nil {
		return driver.NoSession, nil
	}
	if count <= 0 {
		delete(x.cart, item)
		return driver.OK, nil
	}
	return setLine(x, item, count), nil
}

// IncrementCart implements driver.Store.
func (s *store) IncrementCart(ctx context.Context, token, item string, n int) (int, driver.Status, error) {
	now := s.now()
	sh := s.shard(token)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	x := s.liveSession(sh, token, now)
	if x == nil {
		return 0, driver.NoSession, nil
	}
	count := x.cart[item] + n // both are within ±MaxCartCount: no overflow
	switch {
	case count > retail.MaxCartCount:
		return 0, driver.TooMany, nil
	case count <= 0:
		delete(x.cart, item)
		return 0, driver.OK, nil
	}
	if st := setLine(x, item, count); st != driver.OK {
		return 0, st, nil
	}
	return count, driver.OK, nil
}

// setLine sets the count of item in x's cart, unless that adds a line to a
// full cart. count is positive.
func setLine(x *session, item string, count int) driver.Status {
	if _, ok := x.cart[item]; !ok {
		if len(x.cart) >= retail.MaxCartLines {
			return driver.Full
		}
		if x.cart == nil {
			x.cart = make(map[string]int)
		}
		item = strings.Clone(item)
	}
	x.cart[item] = count
	return driver.OK
}

// Cart implements driver.Store.
func (s *store) Cart(ctx context.Context, token string) (map[string]int, error) {
	var cart map[string]int
	s.readSession(token, func(x *session) {
		if len(x.cart) > 0 {
			cart = maps.Clone(x.cart)
		}
	})
	return cart, nil
}
