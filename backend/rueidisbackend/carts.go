package rueidisbackend

import (
	"context"
	_ "embed"
	"errors"
	"strconv"
	"strings"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
)

//go:embed cart.lua
var cartSrc string

var cartWrite = sessionScript(cartSrc)

// cartLimits are cart.lua's arguments past the settings: the most lines
// and the largest count.
var cartLimits = []string{itoa(retail.MaxCartLines), itoa(retail.MaxCartCount)}

// writeCart runs cart.lua on token's session.
func (s *store) writeCart(ctx context.Context, token, item string, n int, mode string) (int, driver.Status, error) {
	key := s.k.session(token)
	msg, err := s.runBatched(ctx, s.batches.cart, cartWrite, batchCall{
		head: s.sessionArgs(s.nowMs(), cartLimits...),
		keys: []string{key},
		args: []string{item, itoa(n), mode},
	})
	s.cartOrValuesWritten(key)
	if err != nil {
		return 0, 0, err
	}
	reply, err := msg.ToArray()
	if err != nil {
		return 0, 0, err
	}
	st, err := status(reply)
	if err != nil || st == driver.NoSession {
		return 0, st, err
	}
	if len(reply) < 4 {
		return 0, 0, errShortReply
	}
	count, err1 := reply[1].AsInt64()
	user, err2 := reply[2].ToString()
	created, err3 := reply[3].AsInt64()
	if err := errors.Join(err1, err2, err3); err != nil {
		return 0, 0, err
	}
	// A session its user logged out of everywhere is absent: it goes, and
	// what was just written with it.
	if out, err := s.endIfRevoked(ctx, token, user, created); out || err != nil {
		return 0, driver.NoSession, err
	}
	return int(count), st, nil
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

// Cart implements driver.Store: the session's cart lines, read through the
// client-side cache.
func (s *store) Cart(ctx context.Context, token string) (map[string]int, error) {
	fields, err := s.liveFields(ctx, token)
	if fields == nil || err != nil {
		return nil, err
	}
	cart := map[string]int{}
	for f, v := range fields {
		item, ok := strings.CutPrefix(f, "cart:")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, err
		}
		cart[item] = n
	}
	return cart, nil
}
