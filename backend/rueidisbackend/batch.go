package rueidisbackend

import (
	"context"
	"strconv"
	"sync"

	"github.com/redis/rueidis"
)

// On a single server, the session scripts that every request runs
// (refreshSession, updateToken, cartWrite) are group-committed: calls that
// arrive while maxInFlight batches of the same script are on their way
// wait, and go out together as one call of the script's batched form (see
// batchScript), which runs the script for each in turn as one atomic step.
// Under load this replaces many small script calls by few large ones,
// saving the server the fixed cost of each call (parsing, the script
// lookup, the shared arguments) and the client a command per call; a lone
// caller is sent at once, in a batch of one. Each call still gets its own
// answer, exactly as the script alone would give it: batching changes when
// a call reaches the server, never what it does there. In a cluster the
// sessions of a batch would live on different slots, so calls go one by
// one.
const (
	maxInFlight = 2   // batches of one script on their way at once
	maxBatch    = 256 // calls in one batch
)

// batcher group-commits the calls of one session script.
type batcher struct {
	s      *store
	one    *script // the script, for a batch of one
	many   *script // its batched form
	nk, na int     // KEYS and ARGV a call takes
	// lay holds the values every call of the Store passes at some
	// positions, which a batch sends once; a call that passes others is
	// sent on its own.
	lay     layout
	mu      sync.Mutex
	queue   []*pending
	sending int // batches on their way
}

// pending is a call waiting for its answer.
type pending struct {
	keys, args []string
	done       chan struct{} // closed once reply and err are set
	reply      rueidis.RedisMessage
	err        error
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

// common is the value of a call's KEYS[pos] or ARGV[pos] (as a script body
// names them) that every call of a Store passes.
type common struct {
	pos int
	val string
}

// newBatcher returns the batcher of the script one, whose body takes nk
// KEYS and na ARGV, with the common values keys and args. Only positions
// past the session's keys and past sessionArgs can be common: the
// prelude's functions name the session's keys by position (a programming
// error panics).
func newBatcher(s *store, body string, one *script, nk, na int, keys, args []common) *batcher {
	for _, c := range keys {
		if c.pos <= len(sessionKeys{}.all()) || c.pos > nk {
			panic("rueidisbackend: a common key at KEYS[" + itoa(c.pos) + "]")
		}
	}
	for _, c := range args {
		if c.pos <= sessionArgCount || c.pos > na {
			panic("rueidisbackend: a common argument at ARGV[" + itoa(c.pos) + "]")
		}
	}
	lay := layout{keys: keys, args: args}
	return &batcher{s: s, one: one, many: batchScript(body, lay), nk: nk, na: na, lay: lay}
}

// fits reports whether a call with keys and args can go in a batch: it
// has the shape of the batcher's calls and the common values.
func (b *batcher) fits(keys, args []string) bool {
	if len(keys) != b.nk || len(args) != b.na {
		return false
	}
	for _, c := range b.lay.keys {
		if keys[c.pos-1] != c.val {
			return false
		}
	}
	for _, c := range b.lay.args {
		if args[c.pos-1] != c.val {
			return false
		}
	}
	return true
}

// runScript runs the session script sc with keys and args and returns its
// answer: through b, its batcher, if it has one (on a single server).
func (s *store) runScript(ctx context.Context, b *batcher, sc *script, keys, args []string) (rueidis.RedisMessage, error) {
	if b == nil || !b.fits(keys, args) {
		return s.do(ctx, s.scriptCall(sc, keys, args))[0].ToMessage()
	}
	return b.do(ctx, keys, args)
}

// do runs the script on keys and args, in a batch with whatever other calls
// are waiting, and returns its answer. Batches are sent by goroutines of
// their own, so that a caller can leave while its call is queued or on its
// way: if ctx ends first, do returns its error at once. A call that left
// the queue before its batch went out is never sent; one on its way may
// still run.
func (b *batcher) do(ctx context.Context, keys, args []string) (rueidis.RedisMessage, error) {
	p := &pending{keys: keys, args: args, done: make(chan struct{})}
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
		for i, p := range batch {
			if err != nil {
				p.err = err
			} else {
				p.reply = replies[i]
			}
			close(p.done)
		}
		b.mu.Lock()
	}
}

// run sends one batch: a batch of one as the script itself, more as its
// batched form.
func (b *batcher) run(ctx context.Context, batch []*pending) ([]rueidis.RedisMessage, error) {
	if len(batch) == 1 {
		msg, err := b.s.do(ctx, b.s.scriptCall(b.one, batch[0].keys, batch[0].args))[0].ToMessage()
		return []rueidis.RedisMessage{msg}, err
	}
	// The shared arguments are those of the latest call: the clock's ms
	// read last, which every call of the batch has reached.
	latest, now := batch[0].args, int64(0)
	for _, p := range batch {
		if ms, err := strconv.ParseInt(p.args[0], 10, 64); err == nil && ms >= now {
			latest, now = p.args, ms
		}
	}
	// What each call sends: its keys but the common ones, and its seen
	// value and arguments past sessionArgs but the common ones.
	lay := b.lay
	nk, na := b.nk-len(lay.keys), 1+b.na-sessionArgCount-len(lay.args)
	keys := make([]string, 0, len(lay.keys)+len(batch)*nk)
	for _, c := range lay.keys {
		keys = append(keys, c.val)
	}
	args := make([]string, 0, batchHead+len(lay.args)+len(batch)*na)
	args = append(args, itoa(nk), itoa(na), latest[0]) // all of sessionArgs but the seen value
	args = append(args, latest[2:sessionArgCount]...)
	for _, c := range lay.args {
		args = append(args, c.val)
	}
	for _, p := range batch {
		keys = appendOwn(keys, p.keys, lay.keys, 0)
		args = append(args, p.args[1])
		args = appendOwn(args, p.args, lay.args, sessionArgCount)
	}
	replies, err := b.s.do(ctx, b.s.scriptCall(b.many, keys, args))[0].ToArray()
	if err == nil && len(replies) != len(batch) {
		err = errShortReply
	}
	return replies, err
}

// appendOwn appends to dst the values of vals past the first from that are
// at no common position (positions count from 1).
func appendOwn(dst, vals []string, common []common, from int) []string {
	for i := from; i < len(vals); i++ {
		if commonAt(common, i+1) < 0 {
			dst = append(dst, vals[i])
		}
	}
	return dst
}
