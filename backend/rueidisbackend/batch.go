package rueidisbackend

import (
	"context"
	"strconv"
	"sync"

	"github.com/redis/rueidis"
)

// On a single server, the session scripts that every request runs
// (refresh.lua, update.lua, view.lua, cart.lua) are group-committed: calls
// that arrive while maxInFlight batches of the same script are on their
// way wait, and go out together as one call of the script, which takes any
// number of calls and runs them in turn as one atomic step. Under load
// this replaces many small script calls by few large ones, saving the
// server the fixed cost of each call (parsing, the script lookup, the
// shared arguments) and the client a command per call; a lone caller is
// sent at once, in a batch of one. Each call still gets its own answer,
// exactly as the script alone would give it: batching changes when a call
// reaches the server, never what it does there. In a cluster the sessions
// of a batch would live on different slots, so calls go one by one.
const (
	maxInFlight = 2   // batches of one script on their way at once
	maxBatch    = 256 // calls in one batch
)

// batchCall is a call of a script that takes many: its KEYS are shared
// (the same in every call of a Store), then the call's own; its ARGV are
// head (the same in every call but for the clock's ms, which comes first),
// then the call's own. Every group-committed script writes the session
// named by its call's first key.
type batchCall struct{ shared, head, keys, args []string }

// batcher group-commits the calls of one script.
type batcher struct {
	s       *store
	sc      *script
	mu      sync.Mutex
	queue   []*pending
	sending int // batches on their way
}

func newBatcher(s *store, sc *script) *batcher { return &batcher{s: s, sc: sc} }

// runBatched runs c, a call of sc, and returns its answer: through b, the
// script's batcher, if it has one (on a single server), else alone.
func (s *store) runBatched(ctx context.Context, b *batcher, sc *script, c batchCall) (rueidis.RedisMessage, error) {
	if b != nil {
		return b.do(ctx, c)
	}
	replies, err := s.do(ctx, s.scriptCall(sc, concat(c.shared, c.keys), concat(c.head, c.args)))[0].ToArray()
	if err == nil && len(replies) != 1 {
		err = errShortReply
	}
	if err != nil {
		return rueidis.RedisMessage{}, err
	}
	return replies[0], nil
}

// concat returns a followed by b, in a new slice.
func concat(a, b []string) []string {
	return append(append(make([]string, 0, len(a)+len(b)), a...), b...)
}

// pending is a call waiting for its answer.
type pending struct {
	call  batchCall
	done  chan struct{} // closed once reply and err are set
	reply rueidis.RedisMessage
	err   error
	// Under the batcher's mu: left is whether the caller gave up waiting
	// (its context ended), flight the batch it went out in (nil while it
	// is queued).
	left   bool
	flight *flight
}

// flight is a batch on its way. It is sent under a context of its own,
// which ends when every caller in it has given up waiting: a caller whose
// context ends leaves at once, and the batch goes on for the others.
type flight struct {
	waiting int // callers in it still waiting, under the batcher's mu
	cancel  context.CancelFunc
}

// do runs c, in a batch with whatever other calls are waiting, and
// returns its answer. Batches are sent by goroutines of
// their own, so that a caller can leave while its call is queued or on its
// way: if ctx ends first, do returns its error at once. A call that left
// the queue before its batch went out is never sent; one on its way may
// still run.
func (b *batcher) do(ctx context.Context, c batchCall) (rueidis.RedisMessage, error) {
	p := &pending{call: c, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, p)
	if b.sending < maxInFlight {
		b.sending++
		go b.send(context.WithoutCancel(ctx))
	}
	b.mu.Unlock()
	select {
	case <-p.done:
		return p.reply, p.err
	case <-ctx.Done():
		return b.leave(ctx, p)
	}
}

// leave gives up waiting for p, whose caller's ctx has ended, and returns
// ctx's error, or p's answer if it came meanwhile and reported success.
// The last caller to leave a batch on its way ends the batch's context.
func (b *batcher) leave(ctx context.Context, p *pending) (rueidis.RedisMessage, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-p.done:
		if p.err == nil {
			return p.reply, nil
		}
		return rueidis.RedisMessage{}, ctx.Err()
	default:
	}
	p.left = true
	if f := p.flight; f != nil {
		if f.waiting--; f.waiting == 0 {
			f.cancel()
		}
	}
	return rueidis.RedisMessage{}, ctx.Err()
}

// take removes the next batch from the queue, dropping the calls whose
// callers left; b.mu is held.
func (b *batcher) take() []*pending {
	var batch []*pending
	i := 0
	for ; i < len(b.queue) && len(batch) < maxBatch; i++ {
		if p := b.queue[i]; !p.left {
			batch = append(batch, p)
		}
	}
	n := copy(b.queue, b.queue[i:])
	clear(b.queue[n:])
	b.queue = b.queue[:n]
	return batch
}

// send sends the queued calls, batch after batch, and answers them, until
// the queue is empty; it holds one of the maxInFlight places. Each batch is
// sent under a context derived from base (which carries the values of the
// call that started send, not its end) that ends when all its callers left.
func (b *batcher) send(base context.Context) {
	b.mu.Lock()
	for {
		batch := b.take()
		if len(batch) == 0 {
			b.sending--
			b.mu.Unlock()
			return
		}
		ctx, cancel := context.WithCancel(base)
		f := &flight{waiting: len(batch), cancel: cancel}
		for _, p := range batch {
			p.flight = f
		}
		b.mu.Unlock()
		if b.s.batchHook != nil {
			b.s.batchHook(len(batch))
		}
		replies, err := b.run(ctx, batch)
		cancel()
		// Answered under mu, so that a caller leaving now gets its answer
		// and the write of one that left before is recorded here, after
		// the script ran, and before any caller of the batch reads on.
		b.mu.Lock()
		for i, p := range batch {
			if err != nil {
				p.err = err
			} else {
				p.reply = replies[i]
			}
			if p.left {
				// The script may have run after the caller's own record
				// of its write (see ownWrites): recorded again.
				b.s.sessionWritten(p.call.keys[0], false)
			}
		}
		for _, p := range batch {
			close(p.done)
		}
	}
}

// run sends one batch as one call of the script.
func (b *batcher) run(ctx context.Context, batch []*pending) ([]rueidis.RedisMessage, error) {
	// The head is that of the latest call: the clock's ms read last,
	// which every call of the batch has reached.
	head, now := batch[0].call.head, int64(0)
	nk, na := len(batch[0].call.shared), len(head)
	for _, p := range batch {
		if ms, err := strconv.ParseInt(p.call.head[0], 10, 64); err == nil && ms >= now {
			head, now = p.call.head, ms
		}
		nk, na = nk+len(p.call.keys), na+len(p.call.args)
	}
	keys := append(make([]string, 0, nk), batch[0].call.shared...)
	args := append(make([]string, 0, na), head...)
	for _, p := range batch {
		keys = append(keys, p.call.keys...)
		args = append(args, p.call.args...)
	}
	replies, err := b.s.do(ctx, b.s.scriptCall(b.sc, keys, args))[0].ToArray()
	if err == nil && len(replies) != len(batch) {
		err = errShortReply
	}
	return replies, err
}
