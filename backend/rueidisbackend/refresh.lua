-- refresh.lua: RefreshSession, for one or more sessions in one step (see
-- batch.go). Each live session is refreshed and item put last in its
-- recent items. A visit within TOUCH of the login's last write that views
-- no new item writes nothing; one that views a new item writes the seen
-- stamp and the recent items; only once TOUCH has passed is the login
-- rewritten with a new coarse deadline, the key's TTL moved, and (on a
-- single server) the session index written (cleaning moves entries that
-- lag behind, see cleaning.go).
--
-- KEYS: the session index on a single server (ARGV[6] is then "1"), then
-- each call's session.
-- ARGV: the settings (see session.lua), "1" if KEYS[1] is the index, the
-- recent limit; then, per call, the token, the seen value to write and the
-- item ("" for none).
-- Answers, per call: {NO_SESSION}, or {OK, user, login, recent, stamp}:
-- the login and recent items the session now holds (recent false if none),
-- and its stamp if the login was rewritten, else false.
settings()
local index = ARGV[6] == '1' and KEYS[1]
local limit = tonumber(ARGV[7])

local function refresh(key, token, seen, item)
  local s = load(key)
  if not s or not s.live then return {NO_SESSION} end
  local recent = withItem(s.recent, item, limit)
  local touch = due(s.deadline)
  if not touch and not recent then return {OK, s.user, s.login, s.recent or false, false} end
  seen = newerSeen(s.seen, seen)
  if not touch then
    redis.call('HSET', key, 'seen', seen, 'recent', recent)
    return {OK, s.user, s.login, recent, false}
  end
  local login = loginNow(s.created, s.user)
  if recent then
    redis.call('HSET', key, 'login', login, 'seen', seen, 'recent', recent)
  else
    redis.call('HSET', key, 'login', login, 'seen', seen)
  end
  redis.call('PEXPIRE', key, keyTTL(s.createdMs, s.life, NOW + IDLE))
  local stamp = stampOf(seen)
  if index then redis.call('ZADD', index, stamp, token) end
  return {OK, s.user, login, recent or s.recent or false, stamp}
end

local first, out = index and 1 or 0, {}
for j = 1, (#ARGV - 7) / 3 do
  local a = 7 + 3 * (j - 1)
  out[j] = refresh(KEYS[first + j], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3])
end
return out
