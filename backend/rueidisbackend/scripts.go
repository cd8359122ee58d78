package rueidisbackend

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

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
// EVAL, all in a second round trip.
func (s *store) do(ctx context.Context, calls ...call) []rueidis.RedisResult {
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
