package settings_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/internal/settings"
)

func TestResolveSessions(t *testing.T) {
	day := int64(24 * time.Hour / ms)
	for _, c := range []struct {
		name                  string
		idle, lifetime, touch time.Duration
		want                  settings.Sessions
		arg                   string // the InputError's, or "" for valid times
	}{
		{"ZeroMeansDefaults", 0, 0, 0, settings.Sessions{Idle: 30 * 60_000, Lifetime: day, Touch: 60_000}, ""},
		{"Defaults", retail.DefaultIdleTimeout, retail.DefaultLifetime, retail.DefaultTouchEvery,
			settings.Sessions{Idle: 30 * 60_000, Lifetime: day, Touch: 60_000}, ""},
		{"Shortest", retail.MinDuration, retail.MinDuration, 0, settings.Sessions{Idle: 1, Lifetime: 1}, ""},
		{"Longest", retail.MaxSessionTime, retail.MaxSessionTime, 0,
			settings.Sessions{Idle: 365 * day, Lifetime: 365 * day, Touch: 60_000}, ""},
		{"IdleLongerThanLifetime", time.Hour, time.Minute, 0, settings.Sessions{Idle: 3_600_000, Lifetime: 60_000, Touch: 60_000}, ""}, // the lifetime ends it first
		// Every time is rounded up to whole milliseconds.
		{"SubMillisecondsRoundUp", 1500 * time.Microsecond, 20*ms + 1, 500 * time.Microsecond,
			settings.Sessions{Idle: 2, Lifetime: 21, Touch: 1}, ""},
		{"WholeMillisecondsStay", 7 * ms, 41 * ms, 3 * ms, settings.Sessions{Idle: 7, Lifetime: 41, Touch: 3}, ""},
		// The default TouchEvery is at most half the rounded idle timeout,
		// rounded down.
		{"DefaultTouchIsHalfAShortIdle", 1500 * time.Microsecond, time.Hour, 0, settings.Sessions{Idle: 2, Lifetime: 3_600_000, Touch: 1}, ""},
		{"DefaultTouchOfOddIdle", 7 * ms, time.Hour, 0, settings.Sessions{Idle: 7, Lifetime: 3_600_000, Touch: 3}, ""},
		{"NegativeTouchWritesEveryVisit", time.Minute, time.Hour, -1, settings.Sessions{Idle: 60_000, Lifetime: 3_600_000}, ""},
		{"TouchHalfTheIdle", 1500 * time.Microsecond, time.Hour, ms, settings.Sessions{Idle: 2, Lifetime: 3_600_000, Touch: 1}, ""},
		{"TouchOverHalfTheIdle", 7 * ms, time.Hour, 3*ms + 1, settings.Sessions{}, "TouchEvery"},
		{"TouchOverHalfTheDefaultIdle", 0, 0, 15*time.Minute + ms, settings.Sessions{}, "TouchEvery"},
		{"IdleNegative", -time.Minute, time.Hour, 0, settings.Sessions{}, "IdleTimeout"},
		{"IdleBelowMin", retail.MinDuration - 1, time.Hour, 0, settings.Sessions{}, "IdleTimeout"},
		{"IdleAboveMax", retail.MaxSessionTime + 1, time.Hour, 0, settings.Sessions{}, "IdleTimeout"},
		{"LifetimeNegative", time.Minute, math.MinInt64, 0, settings.Sessions{}, "Lifetime"},
		{"LifetimeBelowMin", time.Minute, retail.MinDuration - 1, 0, settings.Sessions{}, "Lifetime"},
		{"LifetimeAboveMax", time.Minute, retail.MaxSessionTime + 1, 0, settings.Sessions{}, "Lifetime"},
		{"BothBadNamesIdle", -1, -1, 0, settings.Sessions{}, "IdleTimeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := settings.ResolveSessions("test.New", c.idle, c.lifetime, c.touch)
			call := fmt.Sprintf("ResolveSessions(%q, %v, %v, %v)", "test.New", c.idle, c.lifetime, c.touch)
			if c.arg == "" {
				if err != nil || got != c.want {
					t.Errorf("%s = %+v, %v, want %+v, nil", call, got, err, c.want)
				}
				return
			}
			var ie *retail.InputError
			if !errors.Is(err, retail.ErrInvalid) || !errors.As(err, &ie) || ie.Op != "test.New" || ie.Arg != c.arg {
				t.Errorf("%s = %+v, %v, want an *retail.InputError for test.New, %s", call, got, err, c.arg)
			}
		})
	}
}
