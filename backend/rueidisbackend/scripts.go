package rueidisbackend

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

	"github.com/redis/rueidis"
)

// script is a Lua script sent as EVALSHA, so that it can be pipelined with
// other commands in one DoMulti; a server that does not know it yet answers
// NOSCRIPT and the command is sent again as EVAL (see Store.do).
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

func (s *Store) scriptCall(sc *script, keys, args []string) call {
	return call{cmd: sc.cmd(s.c, keys, args), script: sc, keys: keys, args: args}
}

// do sends calls in one round trip (auto-pipelined; in a cluster, one per
// node in parallel). Scripts the server did not know yet are sent again as
// EVAL, all in a second round trip.
func (s *Store) do(ctx context.Context, calls ...call) []rueidis.RedisResult {
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

// updateSession is UpdateToken's part on the session's slot. It writes the
// user only when it changes (so cached logins stay valid), keeps the largest
// last-seen stamp (so the stamp and the index agree whatever order
// concurrent updates land in), and moves the item to the front of the
// recent list. It returns 1 if the user changed.
//
// KEYS: login, seen, recent. ARGV: user, stamp, item ("" for none), limit.
var updateSession = newScript(`
local changed = 0
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1])
  changed = 1
end
local seen = redis.call('GET', KEYS[2])
if not seen or tonumber(ARGV[2]) > tonumber(seen) then
  redis.call('SET', KEYS[2], ARGV[2])
end
if ARGV[3] ~= '' and redis.call('LINDEX', KEYS[3], 0) ~= ARGV[3] then
  redis.call('LREM', KEYS[3], 1, ARGV[3])
  redis.call('LPUSH', KEYS[3], ARGV[3])
  redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[4]) - 1)
end
return changed
`)

// logoutSession deletes a session's keys and returns the stamp it had, or
// nil if there was no session.
//
// KEYS: login, seen, recent, cart.
var logoutSession = newScript(`
local seen = redis.call('GET', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return seen
`)

// cleanSessions deletes each given session whose last-seen stamp is still
// the one the pass read from the index: a session refreshed since is kept.
// It answers, per session, 1 (deleted), 0 (refreshed, kept) or 2 (no
// session: an index entry that outlived its keys).
//
// KEYS: login, seen, recent, cart of each session. ARGV: the stamp read for
// each session.
var cleanSessions = newScript(`
local out = {}
for i = 1, #ARGV do
  local b = (i - 1) * 4
  local seen = redis.call('GET', KEYS[b + 2])
  if not seen then
    out[i] = 2
  elseif tonumber(seen) == tonumber(ARGV[i]) then
    redis.call('DEL', KEYS[b + 1], KEYS[b + 2], KEYS[b + 3], KEYS[b + 4])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
`)

// oldestSessions returns up to ARGV[2] of the oldest index entries beyond
// the newest ARGV[1], with stamps below ARGV[3] (the pass's start), as
// token, stamp pairs.
//
// KEYS: index.
var oldestSessions = newScript(`
local n = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[1])
if n <= 0 then return {} end
n = math.min(n, tonumber(ARGV[2]))
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3], 'WITHSCORES', 'LIMIT', 0, n)
`)

// unindex removes each token whose stamp in the index is still the given
// one, and returns how many it removed.
//
// KEYS: index. ARGV: token, stamp pairs.
var unindex = newScript(`
local n = 0
for i = 1, #ARGV, 2 do
  local s = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if s and tonumber(s) == tonumber(ARGV[i + 1]) then
    n = n + redis.call('ZREM', KEYS[1], ARGV[i])
  end
end
return n
`)

// addToCart sets or removes a cart line, only while the session exists, so
// a cart never outlives its session. It returns 0 if there is no session.
//
// KEYS: login, cart. ARGV: item, count.
var addToCart = newScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if tonumber(ARGV[2]) <= 0 then
  redis.call('HDEL', KEYS[2], ARGV[1])
else
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
return 1
`)

// scheduleRow records a row's delay and makes it due now.
//
// KEYS: schedule, delay. ARGV: row, delay ms, now ms.
var scheduleRow = newScript(`
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1
`)

// claimRows claims up to ARGV[2] due rows, most overdue first, rescheduling
// each at now + its delay; due rows with no positive delay are unscheduled
// instead and returned apart, for their cached copies to be deleted.
//
// KEYS: schedule, delay. ARGV: now ms, limit. Returns {claimed, unscheduled}.
var claimRows = newScript(`
local now, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local claimed, dropped = {}, {}
while #claimed < limit do
  local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, limit - #claimed)
  if #due == 0 then break end
  for _, row in ipairs(due) do
    local d = tonumber(redis.call('ZSCORE', KEYS[2], row) or '0')
    if d <= 0 then
      redis.call('ZREM', KEYS[1], row)
      redis.call('ZREM', KEYS[2], row)
      dropped[#dropped + 1] = row
    else
      redis.call('ZADD', KEYS[1], string.format('%.17g', now + d), row)
      claimed[#claimed + 1] = row
    end
  end
end
return {claimed, dropped}
`)

// rescaleViews keeps the ARGV[1] most viewed items and multiplies the
// counts by ARGV[2]. ZINTERSTORE of the set with itself is the book's way to
// scale every score at once on the server.
//
// KEYS: viewed.
var rescaleViews = newScript(`
redis.call('ZREMRANGEBYRANK', KEYS[1], ARGV[1], -1)
if ARGV[2] ~= '1' then
  redis.call('ZINTERSTORE', KEYS[1], 1, KEYS[1], 'WEIGHTS', ARGV[2])
end
return 1
`)
