-- end.lua: Logout, and LogoutUser's and RenewSession's end of a session.
-- Deletes the session, unless ARGV[7] names a user and the session belongs
-- to another. On a single server (KEYS[2] given) it also removes the
-- token's index entry, in the same step.
--
-- KEYS: the session, then the session index, optional.
-- ARGV: the settings (see session.lua), the token, the only user whose
-- session may be deleted ("" for any).
-- Answers {NO_SESSION} (there was none, and whatever was left of one is
-- gone), {EXISTS} (another user's session, left alone) or {OK, login, seen
-- or false, 1 if it was live else 0}.
settings()
local key = KEYS[1]
local s = load(key)
if s and ARGV[7] ~= '' and s.user ~= ARGV[7] then return {EXISTS} end
redis.call('DEL', key)
if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[6]) end
if not s then return {NO_SESSION} end
return {OK, s.login, s.seen or false, s.live and 1 or 0}
