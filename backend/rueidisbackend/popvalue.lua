-- popvalue.lua: PopValue. Returns and deletes a value of a live session,
-- so that of concurrent pops one gets it.
--
-- KEYS: the session.
-- ARGV: the settings (see session.lua), the key.
-- Answers {NO_SESSION} if there is no live session or no value, else {OK,
-- value}.
settings()
local key, field = KEYS[1], 'value:' .. ARGV[6]
local s = load(key, field, '#values')
if not s or not s.live or not s.extra[1] then return {NO_SESSION} end
redis.call('HDEL', key, field)
if tonumber(s.extra[2] or 0) <= 1 then
  redis.call('HDEL', key, '#values')
else
  redis.call('HINCRBY', key, '#values', -1)
end
return {OK, s.extra[1]}
