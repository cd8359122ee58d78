-- cart.lua: AddToCart and IncrementCart, for one or more sessions in one
-- step (see batch.go). Each sets ("set") or adds to ("add") the count of a
-- cart line, only while the session is live, so that a cart never
-- outlives its session. A count that ends at zero or less removes the
-- line; a new line in a cart of MAX_LINES lines is refused (FULL), and so
-- is an addition that takes the count past MAX_COUNT (TOO_MANY). The key's
-- TTL is the session's already.
--
-- KEYS: each call's session.
-- ARGV: the settings (see session.lua), the most lines and the largest
-- count; then, per call, the item, the count or increment, and "set" or
-- "add".
-- Answers, per call: {NO_SESSION}, or {status, the line's count (0 if
-- removed, or refused), the session's user, its created ms}: the caller
-- checks that the user did not log out of it everywhere.
settings()
local MAX_LINES, MAX_COUNT = tonumber(ARGV[6]), tonumber(ARGV[7])

local function write(key, item, n, mode)
  local field = 'cart:' .. item
  local s = load(key, field, '#cart')
  if not s or not s.live then return {NO_SESSION} end
  local function answer(st, count) return {st, count, s.user, s.createdMs} end
  local old, lines = tonumber(s.extra[1] or 0), tonumber(s.extra[2] or 0)
  local count = tonumber(n)
  if mode == 'add' then count = old + count end
  if count <= 0 then
    if old ~= 0 then
      redis.call('HDEL', key, field)
      if lines <= 1 then redis.call('HDEL', key, '#cart') else redis.call('HINCRBY', key, '#cart', -1) end
    end
    return answer(OK, 0)
  end
  if count > MAX_COUNT then return answer(TOO_MANY, 0) end
  if mode == 'add' then n = string.format('%d', count) end
  if old ~= 0 then
    redis.call('HSET', key, field, n)
  elseif lines >= MAX_LINES then
    return answer(FULL, 0)
  else
    redis.call('HSET', key, field, n, '#cart', string.format('%d', lines + 1))
  end
  return answer(OK, count)
end

local out = {}
for j = 1, (#ARGV - 7) / 3 do
  local a = 7 + 3 * (j - 1)
  out[j] = write(KEYS[j], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3])
end
return out
