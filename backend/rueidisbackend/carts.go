package rueidisbackend

import (
	"context"
	_ "embed"
	"strconv"
	"strings"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
)

//go:embed cart.lua
var cartSrc string

var cartWrite = newScript(statusLua + cartSrc)

// cartLimits are cart.lua's arguments past the settings: the most lines
// and the largest count.
var cartLimits = []string{itoa(retail.MaxCartLines), itoa(retail.MaxCartCount)}

// cartTries is how many times writeCart reads the session and runs
// cart.lua before it reports that there is none: each try but the last
// found that the session held another login than the one read, and the
// next reads it from the server. A login changes when a session is
// touched, at most once a TouchEvery, and when it ends or moves.
const cartTries = 3

// writeCart runs cart.lua on token's session, which it reads first (see
// liveSession): the process decides whether the session is live, and the
// script writes only over the login it read.
func (s *store) writeCart(ctx context.Context, token, item string, n int, mode string) (int, driver.Status, error) {
	key := s.k.session(token)
	for try := 1; ; try++ {
		l, _, live, err := s.liveSession(ctx, token)
		if err != nil || !live {
			return 0, driver.NoSession, err
		}
		msg, err := s.runBatched(ctx, s.batches.cart, cartWrite, batchCall{
			head: s.sessionArgs(s.nowMs(), cartLimits...),
			keys: []string{key},
			args: []string{l.raw, item, itoa(n), mode},
		})
		s.cartOrValuesWritten(key)
		reply, err := arrayOf(msg, err, 2)
		if err != nil {
			return 0, 0, err
		}
		st, err := status(reply)
		if err != nil {
			return 0, 0, err
		}
		if st == driver.NoSession {
			if try == cartTries {
				return 0, st, nil
			}
			// What this process holds of the session is not what the
			// server does: read it from the server.
			s.sessionWritten(key, false)
			continue
		}
		count, err := reply[1].AsInt64()
		if err != nil {
			return 0, 0, err
		}
		// A session its user logged out of everywhere is absent: it goes,
		// and what was just written with it.
		if out, err := s.endIfRevoked(ctx, token, l.user, l.created); out || err != nil {
			return 0, driver.NoSession, err
		}
		return int(count), st, nil
	}
}

// AddToCart implements driver.Store with a read of the session (from the
// tracker's table or through the client-side cache, see liveSession) and
// one script on its slot.
func (s *store) AddToCart(ctx context.Context, token, item string, count int) (driver.Status, error) {
	_, st, err := s.writeCart(ctx, token, item, count, "set")
	return st, err
}

// IncrementCart implements driver.Store as AddToCart does.
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
