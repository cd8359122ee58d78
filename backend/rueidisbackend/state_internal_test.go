package rueidisbackend

import (
	"math"
	"math/rand/v2"
	"slices"
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

// TestSession_NamesEachKindsKey checks the names session builds in one
// allocation against sessionKey's, one kind at a time, for tokens that
// need escaping and prefixes of several lengths.
func TestSession_NamesEachKindsKey(t *testing.T) {
	for _, prefix := range []string{"", "retail:", "a-much-longer:prefix:"} {
		k := newKeys(prefix)
		for _, token := range []string{"t", "0123456789abcdef0123456789abcdef", "a}b%c", "}"} {
			ks := k.session(token)
			got := []string{ks.login, ks.seen, ks.cart, ks.values}
			want := []string{
				k.sessionKey(loginKind, token), k.sessionKey(seenKind, token),
				k.sessionKey(cartKind, token), k.sessionKey(valuesKind, token),
			}
			if !slices.Equal(got, want) {
				t.Errorf("keys{%q}.session(%q) = %q, want %q", prefix, token, got, want)
			}
			if all := ks.allWith("x", "y"); !slices.Equal(all, append(want, "x", "y")) {
				t.Errorf("allWith(x, y) = %q, want %q", all, append(want, "x", "y"))
			}
		}
	}
}

// TestNewBatcher_RefusesCommonSessionPositions checks that no session key
// and none of sessionArgs can be made common: the prelude's functions name
// the session's keys by position, so a shared one would point them at
// another key.
func TestNewBatcher_RefusesCommonSessionPositions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		keys, args []common
	}{
		{"KEYS[2]", []common{{2, "k"}}, nil},
		{"KEYS[7] of 6", []common{{7, "k"}}, nil},
		{"ARGV[6]", nil, []common{{6, "a"}}},
		{"ARGV[10] of 9", nil, []common{{10, "a"}}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("newBatcher with a common %s did not panic", tc.name)
				}
			}()
			newBatcher(&store{}, refreshBody, refreshSession, 6, 9, tc.keys, tc.args)
		}()
	}
	// The Store's own layout is accepted.
	b := newBatcher(&store{}, refreshBody, refreshSession, 6, 9, []common{{5, "i"}, {6, "v"}}, []common{{9, "25"}})
	if !b.fits([]string{"l", "s", "c", "v", "i", "v"}, []string{"1", "", "", "", "", "", "t", "", "25"}) {
		t.Error("a call with the common values does not fit")
	}
	if b.fits([]string{"l", "s", "c", "v", "i", "other"}, []string{"1", "", "", "", "", "", "t", "", "25"}) {
		t.Error("a call with another view-count key fits")
	}
}
