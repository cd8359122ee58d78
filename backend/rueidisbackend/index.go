package rueidisbackend

import (
	"context"
)

// The session index ({sessions}:seen, token -> stamp) and the user indexes
// (user:{USER}, token -> created stamp) live on slots of their own. On a single
// server the session scripts write the session index themselves, in the
// same atomic step as the session; in a cluster they cannot, so the calls
// below follow or accompany them. Each is written so that, whatever order
// it lands in relative to the session writes of other calls, no session is
// left without its index entry, and no index entry is left for a session
// that is gone except as a stray that cleaning removes (see cleaning.go).

// indexCall creates token's index entry at stamp, or raises it: a session
// was just created or updated (in a cluster, next to the session script).
func (s *store) indexCall(token string, stamp float64) call {
	return call{cmd: s.c.B().Zadd().Key(s.k.index()).Gt().ScoreMember().ScoreMember(stamp, token).Build()}
}

// bumpCall raises token's index entry to stamp if there is one. It follows
// a refresh that found the session live, and never creates an entry: if a
// Logout deleted the session in between, either its unindex comes later
// and sees a stamp no newer than the one it read from the session, or it
// came first and there is no entry left to raise.
func (s *store) bumpCall(token, stamp string) call {
	return call{cmd: s.c.B().Arbitrary("ZADD").Keys(s.k.index()).Args("XX", "GT", stamp, token).Build()}
}

// unindex removes each token whose index stamp is at most the given one:
// the stamp its session had when it was deleted, so that a session created
// again under the token since (with a newer stamp) keeps its entry.
//
// KEYS: the index. ARGV: token, stamp pairs.
var unindex = newScript(readsFirst + `
local tokens = odd(ARGV)
local stamps = zmscore(KEYS[1], tokens)
local gone = {}
for i, token in ipairs(tokens) do
  if stamps[i] and tonumber(stamps[i]) <= tonumber(ARGV[2 * i]) then gone[#gone + 1] = token end
end
inChunks('ZREM', KEYS[1], gone)
return 1
`)

// unindexCall is the unindex call for token, stamp pairs.
func (s *store) unindexCall(pairs []string) call {
	return s.scriptCall(unindex, []string{s.k.index()}, pairs)
}

// addUser indexes a session under its user (see indexUser in
// session.lua).
//
// KEYS: the user's index. ARGV: the settings, token, created stamp.
var addUser = sessionScript(`
settings()
indexUser(KEYS[1], ARGV[6], ARGV[7])
return OK
`)

func (s *store) addUserCall(user, token, cstamp string) call {
	return s.scriptCall(addUser, []string{s.k.user(user)}, s.sessionArgs(s.nowMs(), token, cstamp))
}

// unindexUser removes, from a user's index, each token whose entry still
// holds the given created stamp, so that an entry written since, by a
// session created again under the token, stays.
//
// KEYS: the user's index. ARGV: token, created stamp pairs.
var unindexUser = newScript(readsFirst + `
local tokens = odd(ARGV)
local stamps = zmscore(KEYS[1], tokens)
local gone = {}
for i, token in ipairs(tokens) do
  if stamps[i] and tonumber(stamps[i]) == tonumber(ARGV[2 * i]) then gone[#gone + 1] = token end
end
inChunks('ZREM', KEYS[1], gone)
return 1
`)

// unindexUserCall is the unindexUser call for user's index and the given
// token, created stamp pairs.
func (s *store) unindexUserCall(user string, pairs []string) call {
	return s.scriptCall(unindexUser, []string{s.k.user(user)}, pairs)
}

// send sends calls in one round trip and returns the first error.
func (s *store) send(ctx context.Context, calls []call) error {
	if len(calls) == 0 {
		return nil
	}
	for _, r := range s.do(ctx, calls...) {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}

// readsFirst is Lua for the scripts that remove members of a key: they
// read all they need first and then write, each write a command on
// members the key holds. On the source of a slot that is moving to another
// master, Redis stops a script that touches a key after a command of the
// script emptied it (and so deleted it: "Script attempted to access a non
// local key"), with what it wrote so far applied. Removing only members
// the key holds, in chunks, empties it, if at all, with the last chunk;
// the members given must be distinct. (Scripts that add a member and then
// trim, as indexUser and addItemPage do, never trim the member they
// added, so the key stays.)
const readsFirst = `
local function odd(args)
  local t = {}
  for i = 1, #args, 2 do t[#t + 1] = args[i] end
  return t
end

local function zmscore(key, members)
  local scores = {}
  for i = 1, #members, 1000 do
    local part = redis.call('ZMSCORE', key, unpack(members, i, math.min(i + 999, #members)))
    for j = 1, #part do scores[i + j - 1] = part[j] end
  end
  return scores
end

local function inChunks(cmd, key, members)
  for i = 1, #members, 1000 do
    redis.call(cmd, key, unpack(members, i, math.min(i + 999, #members)))
  end
end
`
