-- deletevalue.lua: DeleteValue. Deletes a value, live session or not:
-- deleting a value of a session that is not live deletes what would
-- never be read again.
--
-- KEYS: the session.
-- ARGV: the key.
-- Answers 1 if a value was deleted, else 0.
local key = KEYS[1]
if redis.call('HDEL', key, 'value:' .. ARGV[1]) == 0 then return 0 end
if redis.call('HINCRBY', key, '#values', -1) <= 0 then redis.call('HDEL', key, '#values') end
return 1
