-- update.lua: UpdateToken, for one or more sessions in one step (see
-- batch.go). A live session is seen now (its stamp written), gets the user
-- and item put last in its recent items (the view itself is counted by the
-- retail package); an absent or expired one is replaced by a new session.
-- The login is written only when the session is new, its user changes (a
-- login: its lifetime starts again) or TOUCH has passed since it was last
-- written. On a single server the same step writes the session index when
-- it writes the login, and the user's index when the session is new or
-- changes user.
--
-- KEYS: the session index on a single server (ARGV[6] is then "1"); then,
-- per call, the session and, on a single server, its user's index and the
-- user's loggedout key.
-- ARGV: the settings (see session.lua), "1" if KEYS[1] is the index, the
-- recent limit; then, per call, the token, the seen value to write, the
-- user, the item ("" for none) and, in a cluster, the Unix ms of the
-- user's last LogoutUser ("" if none; on a single server the script reads
-- it from the loggedout key): a session of the user logged in at or before
-- it is over, and replaced as an expired one is (see loggedout.go).
-- Answers, per call: {fresh, login, recent, cstamp, replaced, stamp}:
-- fresh is 1 if the session is new, else 0; login and recent what the
-- session now holds (recent false if none); cstamp its created stamp;
-- replaced the login of the session it replaced, or of the session whose
-- user it changed, or false; stamp the session's stamp if the login was
-- written (its index entry is due to move), else false.
settings()
local index = ARGV[6] == '1' and KEYS[1]
local limit = tonumber(ARGV[7])

local function update(key, users, token, seen, user, item, out)
  local s = load(key)
  local fresh, login, replaced, clear = 0, false, false, false
  local cstamp, createdMs, life
  if s and s.live and not (s.user == user and out ~= '' and s.createdMs <= tonumber(out)) then
    cstamp, createdMs, life = s.cstamp, s.createdMs, s.life
    if s.user ~= user then -- a login: the Store's lifetime starts again
      local created
      created, cstamp = createdOf(seen)
      createdMs, life, replaced = NOW, LIFE, s.login
      login = loginNow(created, user)
    elseif due(s.deadline) then
      login = loginNow(s.created, user)
    end
    seen = newerSeen(s.seen, seen)
  else
    if s then replaced = s.login end
    -- What is left of a session that ended goes, once the new one is
    -- written over it (see keepOnly).
    clear = s or redis.call('EXISTS', key) == 1
    local created
    created, cstamp = createdOf(seen)
    fresh, createdMs, life, s = 1, NOW, LIFE, nil
    login = loginNow(created, user)
  end
  local recent = withItem(s and s.recent, item, limit)
  if login and recent then
    redis.call('HSET', key, 'seen', seen, 'login', login, 'recent', recent)
  elseif login then
    redis.call('HSET', key, 'seen', seen, 'login', login)
  elseif recent then
    redis.call('HSET', key, 'seen', seen, 'recent', recent)
  else
    redis.call('HSET', key, 'seen', seen)
  end
  if clear then keepOnly(key, {seen = true, login = login and true, recent = recent and true}) end
  local stamp = false
  if login then
    redis.call('PEXPIRE', key, keyTTL(createdMs, life, NOW + IDLE))
    stamp = stampOf(seen)
    if index then redis.call('ZADD', index, stamp, token) end
  end
  if index and user ~= '' and (fresh == 1 or replaced) then indexUser(users, token, cstamp) end
  return {fresh, login or s.login, recent or (s and s.recent) or false, cstamp, replaced, stamp}
end

local first, per, out = index and 1 or 0, index and 3 or 1, {}
for j = 1, (#ARGV - 7) / 5 do
  local k, a = first + per * (j - 1), 7 + 5 * (j - 1)
  local user, loggedOut = ARGV[a + 3], ARGV[a + 5]
  if index and user ~= '' then loggedOut = redis.call('GET', KEYS[k + 3]) or '' end
  out[j] = update(KEYS[k + 1], KEYS[k + 2], ARGV[a + 1], ARGV[a + 2], user, ARGV[a + 4], loggedOut)
end
return out
