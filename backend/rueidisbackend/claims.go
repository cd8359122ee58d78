package rueidisbackend

import (
	"context"
	"strconv"
	"time"

	"github.com/retailkit/retail/internal/settings"
)

// claimTurn claims turn ARGV[1] of a work for owner ARGV[2], unless it or
// a later turn was claimed, and keeps the claim ARGV[3] ms. The key holds
// "TURN OWNER". Answers 1 if the owner holds the turn, else 0.
//
// KEYS: the work's claim key.
var claimTurn = newScript(`
local turn = tonumber(ARGV[1])
local v = redis.call('GET', KEYS[1])
if v then
  local t, owner = string.match(v, '^(%-?%d+) (.*)$')
  t = tonumber(t)
  if t and t > turn then return 0 end
  if t == turn then return owner == ARGV[2] and 1 or 0 end
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[2], 'PX', ARGV[3])
return 1
`)

// Claim implements driver.Store with one script on the work's key, so
// that the workers of every process sharing the server or cluster take
// turns (see retail.Coordinator). The key lives hold plus TTLSlack: its
// TTL, as every TTL the Store sets, is a safety net beyond the time the
// Store's clock gives (see Options.TTLSlack). The hold is rounded up to
// whole milliseconds, as every time the Store keeps: a claim is kept for
// at least hold.
func (s *store) Claim(ctx context.Context, name, owner string, turn int64, hold time.Duration) (bool, error) {
	held, err := s.do(ctx, s.scriptCall(claimTurn, []string{s.k.claim(name)},
		[]string{strconv.FormatInt(turn, 10), owner, i64(settings.Millis(hold) + s.ttlSlack.Milliseconds())}))[0].AsInt64()
	return held == 1, err
}
