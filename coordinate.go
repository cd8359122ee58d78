package retail

import (
	"context"
	"crypto/rand"
	"time"
)

// Coordinator lets the workers of every process sharing a Store divide
// recurring work, so that N servers each running a [ViewRescaler] and a
// [SessionCleaner] act as one: one rescale per period, one cleaner at work
// at a time. Every Store is one, through its driver's Claim, which every
// backend implements (see driver.Store): a Store on Redis coordinates the
// processes sharing the Redis, the memory Store the goroutines sharing it.
type Coordinator interface {
	// Claim reports whether owner holds turn number turn of the work named
	// name. The first owner to claim a turn holds it, and keeps it; a turn
	// is lost to everybody once a later one has been claimed. The caller
	// numbers the turns: the workers number them by their clock's time, so
	// that turn n is the nth period of their interval. A claim is kept for
	// at least hold, after which the Store may forget it (a late claim of
	// a forgotten turn can then succeed again, so hold should span the
	// turn). name and owner follow the rules of tokens; turn lies within
	// ±MaxClaimTurn; hold is at least a millisecond and at most
	// MaxClaimHold.
	Claim(ctx context.Context, name, owner string, turn int64, hold time.Duration) (bool, error)
}

// MaxClaimTurn bounds the turns that [Coordinator.Claim] takes: 2^53, up
// to which a float64 holds every integer exactly (Redis compares turns in
// Lua, whose numbers are float64). The workers' turns, periods since
// 1970, stay far below it.
const MaxClaimTurn = 1 << 53

// MaxClaimHold bounds the hold that [Coordinator.Claim] takes: two of the
// longest session times, which is also what a worker whose period is
// longer than one asks for.
const MaxClaimHold = 2 * MaxSessionTime

// Claim implements Coordinator through the driver, which claims across
// every process that shares its data (see driver.Store).
func (s *store) Claim(ctx context.Context, name, owner string, turn int64, hold time.Duration) (bool, error) {
	const op = "Claim"
	if err := checkID(op, "name", name); err != nil {
		return false, err
	}
	if err := checkID(op, "owner", owner); err != nil {
		return false, err
	}
	if turn > MaxClaimTurn || turn < -MaxClaimTurn {
		return false, invalid(op, "turn", "beyond ±MaxClaimTurn")
	}
	if hold < time.Millisecond {
		return false, invalid(op, "hold", "under a millisecond")
	}
	if hold > MaxClaimHold {
		return false, invalid(op, "hold", "longer than "+days(MaxClaimHold))
	}
	if err := s.begin(ctx); err != nil {
		return false, fail(op, keyArg("name", name), err)
	}
	held, err := s.d.Claim(ctx, name, owner, turn, hold)
	if err != nil {
		return false, fail(op, keyArg("name", name), err)
	}
	return held, nil
}

// turnTaker is how a worker takes turns at its work with the other workers
// of its kind over the same Store: name names the work, every is the
// length of a turn.
type turnTaker struct {
	c     Coordinator
	name  string
	owner string // random, this worker's own
	every time.Duration
	clock Clock
}

func newTurnTaker(c Coordinator, name string, every time.Duration, clock Clock) turnTaker {
	if clock == nil {
		clock = SystemClock{}
	}
	return turnTaker{c: c, name: name, owner: rand.Text(), every: every, clock: clock}
}

// current returns the number of the period of length every that the
// worker's clock is in.
func (t turnTaker) current() int64 {
	return t.clock.Now().UnixMilli() / max(t.every.Milliseconds(), 1)
}

// mine returns the current turn, the period of length every that the
// worker's clock is in, and whether this worker holds it.
func (t turnTaker) mine(ctx context.Context) (turn int64, held bool, err error) {
	turn = t.current()
	held, err = t.c.Claim(ctx, t.name, t.owner, turn, t.hold())
	return turn, held, err
}

// hold is how long a claim of a turn is kept: two periods, so that it
// spans the turn, but at least the millisecond Claim asks for (a period
// under half a millisecond would otherwise make every claim fail) and at
// most MaxClaimHold (twice a long period would otherwise overflow).
func (t turnTaker) hold() time.Duration {
	if t.every >= MaxClaimHold/2 {
		return MaxClaimHold
	}
	return max(2*t.every, time.Millisecond)
}
