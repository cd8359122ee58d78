-- view.lua: a visit that RefreshSession or UpdateToken can decide in the
-- process, for one or more sessions in one step (see batch.go). The caller
-- read the session's login and recent items (from the tracker's table or
-- through the client-side cache), found it surely live and its login
-- written less than TOUCH ago, and computed the recent items with the
-- item viewed. The seen stamp and those recent items are written only if
-- the session still holds the login and recent items the caller read;
-- otherwise nothing is, and the caller runs refresh.lua or update.lua,
-- which decide on the server. Nothing else a visit within TOUCH writes:
-- the login, the key's TTL and the index entries stay (see refresh.lua).
--
-- KEYS: per call, the session.
-- ARGV: the settings (see session.lua); then, per call, the login and the
-- recent items read ("" for none), the seen value to write and the recent
-- items to write ("" to leave them).
-- Answers, per call: 1 if it wrote, 0 if the session holds something else.
settings()

local function view(key, login, recent, seen, newRecent)
  local f = redis.call('HMGET', key, 'login', 'seen', 'recent')
  if f[1] ~= login or (f[3] or '') ~= recent then return 0 end
  seen = newerSeen(f[2] or nil, seen)
  if newRecent == '' then
    redis.call('HSET', key, 'seen', seen)
  else
    redis.call('HSET', key, 'seen', seen, 'recent', newRecent)
  end
  return 1
end

local out = {}
for j = 1, #KEYS do
  local a = 5 + 4 * (j - 1)
  out[j] = view(KEYS[j], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4])
end
return out
