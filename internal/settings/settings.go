// Package settings resolves the options every backend shares, once and by
// one rule, so that a Store behaves alike whichever backend it runs on. The
// backends' constructors call it; the retail package documents the defaults
// and limits it applies.
package settings

import (
	"strconv"
	"time"

	"github.com/retailkit/retail"
)

// Sessions are a backend's session times, resolved: whole milliseconds, the
// resolution at which Stores read their clock.
type Sessions struct {
	Idle     int64 // IdleTimeout: a session not refreshed this long expires
	Lifetime int64 // Lifetime: a session expires this long after it started or last logged in
	Touch    int64 // TouchEvery: how often, at most, a visit is written; 0 writes every visit
}

// ResolveSessions fills in and checks a backend's session options, op
// naming the constructor in errors.
//
// A zero IdleTimeout or Lifetime becomes [retail.DefaultIdleTimeout] or
// [retail.DefaultLifetime]; each must then be in
// retail.MinDuration..retail.MaxSessionTime. Every time is then rounded up to
// whole milliseconds, so that a session never ends sooner than configured:
// an idle timeout of 1.5 ms is 2 ms.
//
// A zero TouchEvery becomes retail.DefaultTouchEvery or half the (rounded)
// idle timeout, rounded down, whichever is shorter; a negative one becomes 0;
// a positive one is rounded up like the others, and must then be at most
// half the idle timeout, so that a session visited at least every half
// timeout never expires.
//
// Errors match retail.ErrInvalid and name op and the option.
func ResolveSessions(op string, idle, lifetime, touch time.Duration) (Sessions, error) {
	if idle == 0 {
		idle = retail.DefaultIdleTimeout
	}
	if lifetime == 0 {
		lifetime = retail.DefaultLifetime
	}
	for _, o := range []struct {
		name string
		d    time.Duration
	}{{"IdleTimeout", idle}, {"Lifetime", lifetime}} {
		if o.d < retail.MinDuration || o.d > retail.MaxSessionTime {
			return Sessions{}, invalid(op, o.name, "not in "+retail.MinDuration.String()+".."+
				strconv.Itoa(int(retail.MaxSessionTime/(24*time.Hour)))+" days")
		}
	}
	s := Sessions{Idle: millis(idle), Lifetime: millis(lifetime)}
	switch {
	case touch == 0:
		s.Touch = min(millis(retail.DefaultTouchEvery), s.Idle/2)
	case touch > 0:
		s.Touch = millis(touch)
		if 2*s.Touch > s.Idle {
			return Sessions{}, invalid(op, "TouchEvery", "longer than half the idle timeout")
		}
	}
	return s, nil
}

// Millis is d in whole milliseconds, rounded up, as every session time is
// (a session's own lifetime too).
func Millis(d time.Duration) int64 { return millis(d) }

// millis is d in whole milliseconds, rounded up: the one rounding rule of
// the session times. Stores read their clock in whole milliseconds, so a
// session seen at t with an idle timeout of 1.5 ms is live while now <
// t+1.5 ms, that is while now < t+2 ms.
func millis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

func invalid(op, arg, reason string) error {
	return &retail.InputError{Op: op, Arg: arg, Reason: reason}
}
