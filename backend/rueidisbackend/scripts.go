package rueidisbackend

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"time"

	"github.com/redis/rueidis"
)

// script is a Lua script sent as EVALSHA, so that it can be pipelined with
// other commands in one DoMulti; a server that does not know it yet answers
// NOSCRIPT and the command is sent again as EVAL (see store.do).
type script struct{ src, sha string }

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}

func (s *script) cmd(c rueidis.Client, keys, args []string) rueidis.Completed {
	return c.B().Evalsha().Sha1(s.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

func (s *script) evalCmd(c rueidis.Client, keys, args []string) rueidis.Completed {
	return c.B().Eval().Script(s.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// call is one command of a round trip; scripted calls keep what is needed
// to resend them as EVAL.
type call struct {
	cmd    rueidis.Completed
	script *script
	keys   []string
	args   []string
}

func (s *store) scriptCall(sc *script, keys, args []string) call {
	return call{cmd: sc.cmd(s.c, keys, args), script: sc, keys: keys, args: args}
}

// do sends calls in one round trip (auto-pipelined; in a cluster, one per
// node in parallel). Scripts the server did not know yet are sent again as
// EVAL, all in a second round trip. Scripts refused with TRYAGAIN are sent
// again after a pause, until they are not, for maxTryAgainWait at most, or
// until ctx ends, when they answer its error. A script sent again carries
// the arguments it was built with, the Store's clock reading among them.
func (s *store) do(ctx context.Context, calls ...call) []rueidis.RedisResult {
	res := s.doOnce(ctx, calls...)
	giveUp := time.Now().Add(maxTryAgainWait)
	for pause := minTryAgainPause; ; pause = min(2*pause, maxTryAgainPause) {
		var again []int
		for i, r := range res {
			if e, ok := rueidis.IsRedisErr(r.Error()); ok && e.IsTryAgain() && calls[i].script != nil {
				again = append(again, i)
			}
		}
		if len(again) == 0 || time.Now().Add(pause).After(giveUp) {
			return res
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		// rueidis may have recycled the commands answered: built anew.
		retry := make([]call, len(again))
		for j, i := range again {
			retry[j] = s.scriptCall(calls[i].script, calls[i].keys, calls[i].args)
		}
		for j, r := range s.doOnce(ctx, retry...) {
			res[again[j]] = r // the context's error if it ended
		}
		if ctx.Err() != nil {
			return res
		}
	}
}

// In a cluster, while a slot migrates, a command that names several keys of
// the slot is refused with TRYAGAIN when one of them is on the other node
// (or on neither): so are the scripts with several keys (LogoutUser's,
// the view counts', the row schedule's) until the slot has moved, which
// takes milliseconds to seconds. TRYAGAIN means the command did not run,
// so it is sent again; rueidis does that for reads only, and a script is
// a write to it. A call gives up after maxTryAgainWait even if its context
// has no deadline: a migration left half done (redis-cli stopped midway)
// answers TRYAGAIN until an operator fixes it.
const (
	minTryAgainPause = 5 * time.Millisecond
	maxTryAgainPause = 200 * time.Millisecond
	maxTryAgainWait  = 10 * time.Second
)

// doOnce sends calls in one round trip, and the scripts the server did not
// know yet again as EVAL, all in a second round trip.
func (s *store) doOnce(ctx context.Context, calls ...call) []rueidis.RedisResult {
	cmds := make(rueidis.Commands, len(calls))
	for i := range calls {
		cmds[i] = calls[i].cmd
	}
	res := s.c.DoMulti(ctx, cmds...)
	var again []int
	for i, r := range res {
		if e, ok := rueidis.IsRedisErr(r.Error()); ok && e.IsNoScript() && calls[i].script != nil {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return res
	}
	evals := make(rueidis.Commands, len(again))
	for j, i := range again {
		evals[j] = calls[i].script.evalCmd(s.c, calls[i].keys, calls[i].args)
	}
	for j, r := range s.c.DoMulti(ctx, evals...) {
		res[again[j]] = r
	}
	return res
}
