package rueidisbackend

import (
	"cmp"
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail/internal/settings"
)

// scheduleRow records a row's delay and makes it due now; a copy of the
// row that an earlier unscheduling left is no longer to be deleted (the
// next claim decides anew).
//
// KEYS: schedule, delay, dropped. ARGV: row, delay ms, now ms.
var scheduleRow = newScript(`
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return 1
`)

// ScheduleRowCache implements driver.Store.
func (s *store) ScheduleRowCache(ctx context.Context, row string, delay time.Duration) error {
	return s.do(ctx, s.scriptCall(scheduleRow, s.k.rowKeys(),
		[]string{row, i64(max(settings.Millis(delay), 0)), itoa(int(s.nowMs()))}))[0].Error()
}

// claimRows claims up to ARGV[2] due rows, most overdue first, rescheduling
// each at now + its delay; due rows with no positive delay are unscheduled
// instead and put in dropped, the hash of the rows whose copies are to be
// deleted, each with the claim (ARGV[3]) that put it there. It returns the
// claimed rows, and the rows it unscheduled and up to ARGV[2] more that
// earlier claims left in dropped, each followed by its claim: a claim
// whose deletes failed leaves its rows to later ones.
//
// KEYS: schedule, delay, dropped. ARGV: now ms, limit, this claim's ID.
// Returns {claimed, {row, claim, ...}}.
var claimRows = newScript(readsFirst + `
local now, limit, claim = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
-- Reads first (see readsFirst): the due rows, most overdue first, and
-- their delays, until limit rows are claimed or none is left.
local claimed, due, dropped, mine, gone, undelay = {}, {}, {}, {}, {}, {}
local offset = 0
while #claimed < limit do
  -- By rank: ZRANGEBYSCORE's LIMIT steps over its offset member by member,
  -- which over many unscheduled rows would make a claim quadratic.
  local page = redis.call('ZRANGE', KEYS[1], offset, offset + limit - #claimed - 1, 'WITHSCORES')
  local rows = {}
  for i = 1, #page, 2 do
    if tonumber(page[i + 1]) > now then break end
    rows[#rows + 1] = page[i]
  end
  if #rows == 0 then break end
  offset = offset + #rows
  local delays = zmscore(KEYS[2], rows)
  for i, row in ipairs(rows) do
    local d = tonumber(delays[i] or '0')
    if d <= 0 then
      gone[#gone + 1] = row
      if delays[i] then undelay[#undelay + 1] = row end
      dropped[#dropped + 1], dropped[#dropped + 2], mine[row] = row, claim, true
    else
      due[#due + 1], due[#due + 2] = string.format('%.17g', now + d), row
      claimed[#claimed + 1] = row
    end
  end
end
-- Then the writes: the schedule's last one may empty it, the delays' only
-- one too; dropped only grows.
inChunks('ZADD', KEYS[1], due)
inChunks('ZREM', KEYS[1], gone)
inChunks('ZREM', KEYS[2], undelay)
inChunks('HSET', KEYS[3], dropped)
local older = redis.call('HRANDFIELD', KEYS[3], limit, 'WITHVALUES')
for i = 1, #older, 2 do
  if not mine[older[i]] then
    dropped[#dropped + 1], dropped[#dropped + 2] = older[i], older[i + 1]
  end
end
return {claimed, dropped}
`)

// clearDropped takes rows out of dropped whose copies were deleted, each
// only if the claim that put it there is still the one given: a row that a
// later claim unscheduled again stays for that claim's delete.
//
// KEYS: dropped. ARGV: row, claim, ...
var clearDropped = newScript(readsFirst + `
local rows = odd(ARGV)
local claims = {}
for i = 1, #rows, 1000 do
  local part = redis.call('HMGET', KEYS[1], unpack(rows, i, math.min(i + 999, #rows)))
  for j = 1, #part do claims[i + j - 1] = part[j] end
end
local gone = {}
for i, row in ipairs(rows) do
  if claims[i] == ARGV[2 * i] then gone[#gone + 1] = row end
end
inChunks('HDEL', KEYS[1], gone)
return 1
`)

// ClaimDueRows implements driver.Store. The claim is one script on the
// {rows} slot; the cached copies of the rows unscheduled live on other
// slots and are deleted right after, before ClaimDueRows returns, and then
// taken out of dropped. A delete that fails leaves its row in dropped for
// a later claim: it is not this call's error, whose claimed rows are
// already rescheduled and would otherwise miss their refresh.
func (s *store) ClaimDueRows(ctx context.Context, limit int) ([]string, error) {
	res, err := s.do(ctx, s.scriptCall(claimRows, s.k.rowKeys(),
		[]string{itoa(int(s.nowMs())), itoa(limit), claimID()}))[0].ToArray()
	if err != nil {
		return nil, err
	}
	if len(res) != 2 {
		return nil, errShortReply
	}
	claimed, err := res[0].AsStrSlice()
	if err != nil {
		return nil, err
	}
	dropped, err := res[1].AsStrSlice()
	if err != nil || len(dropped)%2 != 0 {
		return nil, cmp.Or(err, errShortReply)
	}
	if len(dropped) > 0 {
		s.deleteDropped(ctx, dropped)
	}
	if len(claimed) == 0 {
		return nil, nil
	}
	return claimed, nil
}

// deleteDropped deletes the copies of the rows in dropped (row, claim,
// ...), and takes the ones deleted out of the dropped hash. It gives up
// after a second (a node that does not answer would hold up every
// claim): what it did not finish, a later claim does.
func (s *store) deleteDropped(ctx context.Context, dropped []string) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	calls := make([]call, 0, len(dropped)/2)
	for i := 0; i < len(dropped); i += 2 {
		calls = append(calls, call{cmd: s.c.B().Del().Key(s.k.row(dropped[i])).Build()})
	}
	var cleared []string
	for i, r := range s.do(ctx, calls...) {
		row := dropped[2*i]
		rec := recordOf(s.k.row(row))
		if r.Error() != nil {
			s.own.changed(rec)
			continue
		}
		s.own.deleted(rec)
		cleared = append(cleared, row, dropped[2*i+1])
	}
	if len(cleared) > 0 {
		s.do(ctx, s.scriptCall(clearDropped, []string{s.k.dropped()}, cleared)) // if it fails, the deletes are repeated
	}
}

// claimID returns an ID for a claim of due rows, unique among claims.
func claimID() string { return strconv.FormatUint(rand.Uint64(), 36) }

// Row implements driver.Store, reading through the client-side cache.
func (s *store) Row(ctx context.Context, row string) ([]byte, bool, error) {
	data, ok, err := s.cachedString(ctx, s.k.row(row))
	if !ok {
		return nil, false, err
	}
	return []byte(data), true, nil
}

// SetScheduledRow implements driver.Store: SET, then ZSCORE of the row's
// delay, then DEL if the row has none. The row's copy and its schedule are
// on different slots, so no one script sees both; the order does the work.
// A claim that unschedules the row removes its delay and then deletes its
// copy: if the ZSCORE, which follows the SET, still finds the delay, that
// claim's DEL comes after the SET and deletes it; if not, the DEL here
// does. If a step fails once the SET may have been applied, the copy may
// be of a row unscheduled meanwhile, and nothing would delete it: see
// dropRow. A row still scheduled then misses until its next refresh.
func (s *store) SetScheduledRow(ctx context.Context, row string, data []byte) (bool, error) {
	err := s.SetRow(ctx, row, data)
	if _, refused := rueidis.IsRedisErr(err); refused {
		return false, err // the server did not apply it
	}
	if err == nil {
		err = s.c.Do(ctx, s.c.B().Zscore().Key(s.k.delay()).Member(row).Build()).Error()
		if err == nil {
			return true, nil
		}
	}
	k := s.k.row(row)
	if rueidis.IsRedisNil(err) { // unscheduled
		if err = s.c.Do(ctx, s.c.B().Del().Key(k).Build()).Error(); err == nil {
			s.own.deleted(recordOf(k))
			return false, nil
		}
	}
	s.own.changed(recordOf(k))
	s.cleanups.run(func() { s.dropRow(row) })
	return false, err
}

// dropRow, after a call that gave up once it may have stored row's copy,
// names the row in dropped under an ID of its own and deletes the copy as
// a claim does (deleteDropped): if the delete fails, a later claim
// deletes the copy. It gives up after a second; Close waits for it. Only
// if neither the row's node nor the {rows} node answers in that second
// can the copy stay.
func (s *store) dropRow(row string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	id := claimID()
	s.c.Do(ctx, s.c.B().Hset().Key(s.k.dropped()).FieldValue().FieldValue(row, id).Build()) // if it fails, only the delete below is left
	s.deleteDropped(ctx, []string{row, id})
}

// SetRow implements driver.Store.
func (s *store) SetRow(ctx context.Context, row string, data []byte) error {
	k := s.k.row(row)
	if err := s.c.Do(ctx, s.c.B().Set().Key(k).Value(rueidis.BinaryString(data)).Build()).Error(); err != nil {
		return err
	}
	s.own.wrote(recordOf(k), data)
	return nil
}
