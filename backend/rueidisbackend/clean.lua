-- clean.lua: a cleaning pass's deletion of sessions in a cluster (see
-- cleaning.go). Deletes each session whose last-seen stamp is still the
-- one the pass read from the index: a session refreshed since is kept.
--
-- KEYS: the sessions.
-- ARGV: the stamp read for each.
-- Answers, per session, DELETED, the session's stamp if it was kept, or
-- NO_SESSION (whatever was left of a session is deleted).
local out = {}
for i = 1, #KEYS do
  local seen = redis.call('HGET', KEYS[i], 'seen')
  local stamp = seen and string.match(seen, '^%S+')
  if stamp and tonumber(stamp) ~= tonumber(ARGV[i]) then
    out[i] = stamp
  else
    redis.call('DEL', KEYS[i])
    out[i] = stamp and DELETED or NO_SESSION
  end
end
return out
