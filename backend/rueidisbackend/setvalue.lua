-- setvalue.lua: SetValue. Stores a value while the session is live,
-- refusing a new key in a session of ARGV[8] values (FULL).
--
-- KEYS: the session.
-- ARGV: the settings (see session.lua), the key, the value, the most values.
-- Answers {NO_SESSION}, or {status, the session's user, its created ms}:
-- the caller checks that the user did not log out of it everywhere.
settings()
local key, field = KEYS[1], 'value:' .. ARGV[6]
local s = load(key, field, '#values')
if not s or not s.live then return {NO_SESSION} end
if s.extra[1] then
  redis.call('HSET', key, field, ARGV[7])
  return {OK, s.user, s.createdMs}
end
local n = tonumber(s.extra[2] or 0)
if n >= tonumber(ARGV[8]) then return {FULL, s.user, s.createdMs} end
redis.call('HSET', key, field, ARGV[7], '#values', string.format('%d', n + 1))
return {OK, s.user, s.createdMs}
