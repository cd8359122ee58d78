-- session.lua: what the scripts that read or write a session share. It is
-- put in front of each such script's own text (see sessionScript in
-- state.go), after a line that defines the statuses they answer with:
-- OK, NO_SESSION, EXISTS, FULL and TOO_MANY (driver.Status).
--
-- A session is one hash (see state.go):
--
--   login    "CREATED DEADLINE USER": CREATED is "STAMP" or "STAMP/MS",
--            then "+LIFE" if the session has a lifetime of its own (LIFE ms)
--   seen     "STAMP" or "STAMP MS": the last-seen stamp
--   recent   the recently viewed items, oldest first, each ending in "\n"
--   #cart    how many cart:ITEM fields it has (absent if none)
--   cart:ITEM  the count of a cart line
--   #values  how many value:KEY fields it has (absent if none)
--   value:KEY  a session value
--   label    the label the login gave it, if any
--
-- Every session script's ARGV starts with the settings that settings()
-- reads.

local NOW, IDLE, TOUCH, LIFE, SLACK, NEWD

-- settings reads ARGV[1] to ARGV[5]: the clock's Unix ms, then the idle
-- timeout, TouchEvery, the lifetime and the TTL slack, in ms. NEWD is the
-- idle deadline of a session seen now, formatted for a login.
local function settings()
  NOW, IDLE, TOUCH = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
  LIFE, SLACK = tonumber(ARGV[4]), tonumber(ARGV[5])
  NEWD = string.format('%d', NOW + IDLE)
end

-- stampMs returns the stamp and the ms of a seen value ("STAMP" or
-- "STAMP MS") or of a created field ("STAMP" or "STAMP/MS").
local function stampMs(v)
  local st, ms = string.match(v, '^([^ /]+)[ /]?(.*)$')
  st = tonumber(st)
  if not st then return nil end
  if ms == '' then return st, math.floor(st) end
  return st, tonumber(ms)
end

-- stampOf returns the stamp of a seen value, as the index holds it.
local function stampOf(seen)
  return string.match(seen, '^%S+')
end

-- createdOf returns the created field and stamp of a session logged in by
-- a call whose seen value is seen.
local function createdOf(seen)
  return (string.gsub(seen, ' ', '/')), stampOf(seen)
end

-- parseLogin returns a login's parts, or nil if this version did not
-- write it: created (the field, with its lifetime if any), cstamp (its
-- stamp, as the user's index scores it), createdMs, life (the session's
-- lifetime in ms: its own, or LIFE), deadline (the coarse idle deadline)
-- and user.
local function parseLogin(v)
  local cs, ms, lf, d, u = string.match(v, '^((%d+)%.?%d*/?%d*)(%+?%d*) (%-?%d+) (.*)$')
  if not cs then return nil end
  local life = LIFE
  if lf ~= '' then
    life = tonumber(string.match(lf, '^%+(%d+)$'))
    if not life or life <= 0 then return nil end
  end
  local cstamp, slash = cs, string.find(cs, '/', 1, true)
  if slash then
    cstamp = string.sub(cs, 1, slash - 1)
    if slash < #cs then ms = string.sub(cs, slash + 1) end
  end
  return {login = v, created = cs .. lf, cstamp = cstamp, createdMs = ms + 0, life = life, deadline = d + 0, user = u}
end

-- alive reports whether a session created at createdMs with lifetime
-- life, the given coarse deadline and seen value, is live: before the
-- deadline it surely is (within its lifetime); after it, it must have
-- been seen within the idle timeout.
local function alive(createdMs, life, deadline, seen)
  if NOW >= createdMs + life then return false end
  if NOW < deadline then return true end
  local last = createdMs
  if seen then
    local _, ms = stampMs(seen)
    last = ms or last
  end
  return NOW < last + IDLE
end

-- load returns the session in key, or nil: its login's parts (see
-- parseLogin), seen and recent (nil if absent), live (whether it is live),
-- and the fields named by more, in that order, as the list extra (false
-- for those absent; extra is nil if more names none).
local function load(key, ...)
  local f = redis.call('HMGET', key, 'login', 'seen', 'recent', ...)
  local s = f[1] and parseLogin(f[1])
  if not s then return nil end
  s.seen, s.recent = f[2] or nil, f[3] or nil
  s.live = alive(s.createdMs, s.life, s.deadline, s.seen)
  if f[4] ~= nil then s.extra = {unpack(f, 4)} end
  return s
end

-- due reports whether a session with the given coarse deadline is due to
-- have its login written again: the login was written TOUCH or more ago.
local function due(deadline)
  return NOW - (deadline - IDLE) >= TOUCH
end

-- loginNow returns the login of a session with the created field created
-- (with its lifetime, if any) and user, written now: its coarse deadline
-- is NEWD.
local function loginNow(created, user)
  return created .. ' ' .. NEWD .. ' ' .. user
end

-- keyTTL is the TTL in ms of the key of a session created at createdMs
-- with lifetime life whose login holds deadline (see state.go), formatted
-- as an integer: at least 1, since a TTL of 0 deletes and another
-- process's clock may run ahead of the one that set the deadline.
local function keyTTL(createdMs, life, deadline)
  return string.format('%d', math.max(math.min(deadline + TOUCH, createdMs + life) - NOW + SLACK, 1))
end

-- newerSeen returns the seen value to keep of old (nil for none) and new:
-- the one with the larger stamp, so that the stamp only grows whatever
-- order concurrent writes land in.
local function newerSeen(old, new)
  if not old then return new end
  -- Most seen values are a stamp alone, which tonumber reads as it is.
  local o, n = tonumber(old) or tonumber(stampOf(old)), tonumber(new) or tonumber(stampOf(new))
  if o >= n then return old end
  return new
end

-- withItem returns the recent items with item added or moved last (the
-- newest), keeping at most limit, or nil if they stay as they are: item
-- is '' (none), or already the newest.
local function withItem(recent, item, limit)
  if item == '' then return nil end
  if not recent then return item .. '\n' end
  local p = 0 -- where item stands as a whole line, if it does
  repeat
    p = string.find(recent, item, p + 1, true)
  until not p or (p == 1 or string.byte(recent, p - 1) == 10) and string.byte(recent, p + #item) == 10
  local rest = recent
  if p then
    if p + #item == #recent then return nil end
    rest = string.sub(recent, 1, p - 1) .. string.sub(recent, p + #item + 1)
  end
  -- Every item takes two bytes at least (a character and "\n"), so a
  -- list shorter than 2 * limit bytes holds fewer than limit items.
  if #rest < 2 * limit then return rest .. item .. '\n' end
  local n, at = 0, 0
  repeat
    at = string.find(rest, '\n', at + 1, true)
    if at then n = n + 1 end
  until not at
  local from = 1
  for _ = 1, n - (limit - 1) do
    from = string.find(rest, '\n', from, true) + 1
  end
  return string.sub(rest, from) .. item .. '\n'
end

-- indexUser adds token, logged in with created stamp cstamp, to the user's
-- index, drops entries of sessions whose lifetime has surely ended, and
-- sets the index's TTL beyond the end of every session it can hold.
local function indexUser(key, token, cstamp)
  redis.call('ZADD', key, cstamp, token)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', NOW - LIFE)
  redis.call('PEXPIRE', key, LIFE + SLACK)
end

-- keepOnly deletes the fields of the hash key that keep (a set of field
-- names) does not hold: what a replaced session held beyond what was just
-- written over it. A script that replaces a session writes the new one
-- first and then calls this, rather than deleting the key and writing it
-- again: on the source of a slot being migrated to another master a
-- script may not write a key it deleted (the slot's missing keys are the
-- target's; Redis stops the script with "Script attempted to access a non
-- local key" after the delete ran). Here the key exists throughout.
local function keepOnly(key, keep)
  local gone = {}
  for _, f in ipairs(redis.call('HKEYS', key)) do
    if not keep[f] then gone[#gone + 1] = f end
  end
  for i = 1, #gone, 1000 do
    redis.call('HDEL', key, unpack(gone, i, math.min(i + 999, #gone)))
  end
end
