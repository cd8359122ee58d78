-- read.lua: RenewSession's read of the session it renews.
--
-- KEYS: the session.
-- ARGV: the settings (see session.lua).
-- Answers {NO_SESSION} or {OK, login, the fields to copy: field-value
-- pairs of all but login and seen}.
settings()
local s = load(KEYS[1])
if not s or not s.live then return {NO_SESSION} end
local all, copy = redis.call('HGETALL', KEYS[1]), {}
for i = 1, #all, 2 do
  if all[i] ~= 'login' and all[i] ~= 'seen' then
    copy[#copy + 1], copy[#copy + 2] = all[i], all[i + 1]
  end
end
return {OK, s.login, copy}
