package retail

import (
	"context"
	"crypto/rand"
	"sync"
	"time"

	"github.com/retailkit/retail/driver"
)

// Coordinator lets the workers of every process sharing a Store divide
// recurring work, so that N servers each running a [ViewRescaler] and a
// [SessionCleaner] act as one: one rescale per period, one cleaner at work
// at a time. Every Store is one; a Store on Redis coordinates the processes
// sharing the Redis, the memory Store the goroutines sharing it.
type Coordinator interface {
	// Claim reports whether owner holds turn number turn of the work named
	// name. The first owner to claim a turn holds it, and keeps it; a turn
	// is lost to everybody once a later one has been claimed. The caller
	// numbers the turns: the workers number them by their clock's time, so
	// that turn n is the nth period of their interval. A claim is kept for
	// at least hold, after which the Store may forget it (a late claim of
	// a forgotten turn can then succeed again, so hold should span the
	// turn). name and owner follow the rules of tokens; hold must be at
	// least a millisecond.
	Claim(ctx context.Context, name, owner string, turn int64, hold time.Duration) (bool, error)
}

// Claim implements Coordinator: through the driver if it is a
// [driver.Claimer] (a store shared by processes), else in process memory.
func (s *store) Claim(ctx context.Context, name, owner string, turn int64, hold time.Duration) (bool, error) {
	const op = "Claim"
	if err := checkID(op, "name", name); err != nil {
		return false, err
	}
	if err := checkID(op, "owner", owner); err != nil {
		return false, err
	}
	if hold < time.Millisecond {
		return false, invalid(op, "hold", "under a millisecond")
	}
	if err := s.begin(ctx); err != nil {
		return false, fail(op, keyArg("name", name), err)
	}
	c, ok := s.d.(driver.Claimer)
	if !ok {
		return s.claims.claim(name, owner, turn), nil
	}
	held, err := c.Claim(ctx, name, owner, turn, hold)
	if err != nil {
		return false, fail(op, keyArg("name", name), err)
	}
	return held, nil
}

// claims are the turns claimed in process memory, for a driver that is no
// driver.Claimer: its data lives in this process, so its workers do too.
type claims struct {
	mu   sync.Mutex
	last map[string]claim // by name: the latest turn claimed
}

type claim struct {
	turn  int64
	owner string
}

func (c *claims) claim(name, owner string, turn int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if last, ok := c.last[name]; ok && last.turn >= turn {
		return last.turn == turn && last.owner == owner
	}
	if c.last == nil {
		c.last = map[string]claim{}
	}
	c.last[name] = claim{turn: turn, owner: owner}
	return true
}

// turnTaker is how a worker takes turns at its work with the other workers
// of its kind over the same Store: name names the work, every is the
// length of a turn.
type turnTaker struct {
	c     Coordinator // nil if the worker's store is none: it works alone
	name  string
	owner string // random, this worker's own
	every time.Duration
	clock Clock
}

func newTurnTaker(s any, name string, every time.Duration, clock Clock) turnTaker {
	c, _ := s.(Coordinator)
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
// worker's clock is in, and whether this worker holds it. A worker over a
// store that is no Coordinator holds every turn.
func (t turnTaker) mine(ctx context.Context) (turn int64, held bool, err error) {
	turn = t.current()
	if t.c == nil {
		return turn, true, nil
	}
	held, err = t.c.Claim(ctx, t.name, t.owner, turn, 2*t.every)
	return turn, held, err
}
