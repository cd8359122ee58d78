-- settle.lua: a cleaning round on a single server (see cleanOnServer in
-- cleaning.go), where one script deletes the sessions and settles the
-- index together. It needs no stamps read from the index: each session
-- read is deleted with its index entry if its stamp lies below the delete
-- bound (or at it, if ARGV[3] is "1"), whatever its entry says. The entry
-- of any other session, refreshed since the pass read it or beyond what
-- the pass takes, is moved up to its stamp. The entry of a token without a
-- session is deleted if its stamp is below the stray bound (see stale),
-- and left otherwise: an update may be on its way.
--
-- KEYS: the index, then the sessions.
-- ARGV: the stray bound, the delete bound, "1" if that is the reach, then
-- the token of each session.
-- Answers, per session: DELETED; the stamp its entry was moved up to;
-- LEFT (kept, and its entry was at its stamp already); NO_SESSION (no
-- session: its entry removed, or gone already); or YOUNG (no session, and
-- its entry left: too young to be a stray).
local index = KEYS[1]
local stray, bound, at = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1'
local out, dels, unindexed = {}, {}, {}
for j = 1, #KEYS - 1 do
  local key, token = KEYS[j + 1], ARGV[3 + j]
  local seen = redis.call('HGET', key, 'seen')
  local stamp = seen and string.match(seen, '^%S+')
  local t = stamp and tonumber(stamp)
  if t and (t > bound or t == bound and not at) then
    local moved = redis.call('ZADD', index, 'XX', 'GT', 'CH', stamp, token)
    out[j] = moved == 1 and stamp or LEFT
  else
    dels[#dels + 1] = key
    out[j] = DELETED
    local unindex = stamp ~= nil
    if not stamp then
      local read = redis.call('ZSCORE', index, token)
      unindex = read and tonumber(read) < stray
      out[j] = (unindex or not read) and NO_SESSION or YOUNG
    end
    if unindex then unindexed[#unindexed + 1] = token end
  end
end
for i = 1, #dels, 1000 do
  redis.call('DEL', unpack(dels, i, math.min(i + 999, #dels)))
end
for i = 1, #unindexed, 1000 do
  redis.call('ZREM', index, unpack(unindexed, i, math.min(i + 999, #unindexed)))
end
return out
