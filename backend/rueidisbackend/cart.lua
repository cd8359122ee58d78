-- cart.lua: AddToCart and IncrementCart, for one or more sessions in one
-- step (see batch.go). The caller read the session and found it live; each
-- call sets ("set") or adds to ("add") the count of a cart line only if
-- the session still holds the login the caller read, so that a cart never
-- outlives its session (a session that ended, or moved to another token,
-- holds no login, and one the caller must read again holds another). A
-- count that ends at zero or less removes the line; a new line in a cart
-- of MAX_LINES lines is refused (FULL), and so is an addition that takes
-- the count past MAX_COUNT (TOO_MANY). The key's TTL is the session's
-- already.
--
-- KEYS: each call's session.
-- ARGV: the settings (see session.lua), the most lines and the largest
-- count; then, per call, the login read, the item, the count or
-- increment, and "set" or "add".
-- Answers, per call: {status, the line's count (0 if removed, or
-- refused)}; the status is NO_SESSION if the session holds another login.
local MAX_LINES, MAX_COUNT = tonumber(ARGV[6]), tonumber(ARGV[7])

local function write(key, login, item, n, mode)
  local field = 'cart:' .. item
  local f = redis.call('HMGET', key, 'login', field, '#cart')
  if f[1] ~= login then return {NO_SESSION, 0} end
  local old, lines = tonumber(f[2] or 0), tonumber(f[3] or 0)
  local count = tonumber(n)
  if mode == 'add' then count = old + count end
  if count <= 0 then
    if old ~= 0 then
      redis.call('HDEL', key, field)
      if lines <= 1 then redis.call('HDEL', key, '#cart') else redis.call('HINCRBY', key, '#cart', -1) end
    end
    return {OK, 0}
  end
  if count > MAX_COUNT then return {TOO_MANY, 0} end
  if mode == 'add' then n = string.format('%d', count) end
  if old ~= 0 then
    redis.call('HSET', key, field, n)
  elseif lines >= MAX_LINES then
    return {FULL, 0}
  else
    redis.call('HSET', key, field, n, '#cart', string.format('%d', lines + 1))
  end
  return {OK, count}
end

local out = {}
for j = 1, (#ARGV - 7) / 4 do
  local a = 7 + 4 * (j - 1)
  out[j] = write(KEYS[j], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4])
end
return out
