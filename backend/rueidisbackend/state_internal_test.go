package rueidisbackend

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestStampFloor_AgreesWithTheFloat checks stampFloor, which reads a
// stamp's whole milliseconds without converting its fraction, against the
// floor of the stamp parsed as a float: on stamps as nextStamp makes them
// (a clock's ms plus steps of stampStep, across millisecond boundaries),
// from clocks anywhere a retail.ManualClock can be set (before 1970, today,
// and far enough ahead that formatStamp prints a float's shortest form),
// and on values no version writes.
func TestStampFloor_AgreesWithTheFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	nows := []int64{0, 1, 999, -1, -1000, -1764080000000, 1764080000000, 1<<41 - 1, 1 << 45,
		1e15 - 1, 1e15, 1<<53 - 1, 1 << 53, 1 << 54, 1 << 60, math.MaxInt64}
	for range 100 {
		nows = append(nows, r.Int64N(1<<45), r.Int64N(1<<62), -r.Int64N(1<<45))
	}
	check := func(st string) {
		t.Helper()
		f, err := strconv.ParseFloat(st, 64)
		got, ok := stampFloor(st)
		if ok != (err == nil) || ok && got != int64(math.Floor(f)) {
			t.Fatalf("stampFloor(%q) = %d, %v; want %v, %v", st, got, ok, int64(math.Floor(f)), err == nil)
		}
	}
	for _, now := range nows {
		for k := range 1100 { // past a whole millisecond of steps, from wherever now's fraction starts
			check(formatStamp(float64(now) + float64(k)*stampStep))
		}
	}
	for _, st := range []string{"-5.5", "-0.0009765625", "-3", "1e3", "1.5e2", "+7", "12.", ".5", "0x10", "Inf", "", "12a", "1.2.3", "-", "."} {
		check(st)
	}
}

// TestParseLogin_OwnLifetime checks the "+LIFE" ending of a login's created
// field: it gives the session's own lifetime and is no part of its stamp.
func TestParseLogin_OwnLifetime(t *testing.T) {
	for _, c := range []struct {
		v    string
		want login
		ok   bool
	}{
		{"1767366245000.5 1767368045000 alice", login{created: 1767366245000, cstamp: "1767366245000.5", deadline: 1767368045000, user: "alice"}, true},
		{"1767366245000.5/1767366245001+86400000 1767368045000 a b", login{created: 1767366245001, cstamp: "1767366245000.5", deadline: 1767368045000, user: "a b", life: 86400000}, true},
		{"1767366245000+7200000 1767368045000 ", login{created: 1767366245000, cstamp: "1767366245000", deadline: 1767368045000, life: 7200000}, true},
		{"1767366245000+ 1767368045000 alice", login{}, false},
		{"1767366245000+0 1767368045000 alice", login{}, false},
		{"1767366245000+x 1767368045000 alice", login{}, false},
	} {
		got, ok := parseLogin(c.v)
		if c.ok {
			c.want.raw = c.v
		}
		if ok != c.ok || got != c.want {
			t.Errorf("parseLogin(%q) = %+v, %v, want %+v, %v", c.v, got, ok, c.want, c.ok)
		}
	}
	if got := withLife("1767366245000.5", 0); got != "1767366245000.5" {
		t.Errorf("withLife(_, 0) = %q, want the created field unchanged", got)
	}
}
