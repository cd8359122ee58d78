-- start.lua: StartSession, and the new session of RenewSession. Creates a
-- session unless a live one holds the key, writing over an expired one
-- (see keepOnly), and fills it with the fields given (those RenewSession copies: the
-- recent items, the cart and the values). On a single server (KEYS[2]
-- given) it also indexes the session, and its user's index (KEYS[3],
-- given if the session has a user).
--
-- KEYS: the session, then the session index and the user's index,
-- optional.
-- ARGV: the settings (see session.lua), the token, the seen value, the
-- login, then field-value pairs.
-- Answers {EXISTS} or {OK, the login of the session dropped, or false}.
settings()
local key, token, seen, login = KEYS[1], ARGV[6], ARGV[7], ARGV[8]
local s = load(key)
if s and s.live then return {EXISTS} end
-- What is left of a session that ended goes, once the new one is written
-- over it (see keepOnly).
local existed = s or redis.call('EXISTS', key) == 1
local l = parseLogin(login)
redis.call('HSET', key, 'login', login, 'seen', seen, unpack(ARGV, 9))
if existed then
  local keep = {login = true, seen = true}
  for i = 9, #ARGV, 2 do keep[ARGV[i]] = true end
  keepOnly(key, keep)
end
redis.call('PEXPIRE', key, keyTTL(l.createdMs, l.life, l.deadline))
if KEYS[2] then redis.call('ZADD', KEYS[2], stampOf(seen), token) end
if KEYS[3] then indexUser(KEYS[3], token, l.cstamp) end
return {OK, s and s.login or false}
