package rueidisbackend

import (
	"cmp"
	"context"
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
redis.call('SREM', KEYS[3], ARGV[1])
return 1
`)

// ScheduleRowCache implements driver.Store.
func (s *store) ScheduleRowCache(ctx context.Context, row string, delay time.Duration) error {
	return s.do(ctx, s.scriptCall(scheduleRow, s.k.rowKeys(),
		[]string{row, i64(max(settings.Millis(delay), 0)), itoa(int(s.nowMs()))}))[0].Error()
}

// claimRows claims up to ARGV[2] due rows, most overdue first, rescheduling
// each at now + its delay; due rows with no positive delay are unscheduled
// instead and added to dropped, the rows whose copies are to be deleted.
// It returns the claimed rows and up to ARGV[2] of dropped: a claim that
// failed to delete some copies leaves them there, and a later claim
// deletes them.
//
// KEYS: schedule, delay, dropped. ARGV: now ms, limit. Returns {claimed,
// dropped}.
var claimRows = newScript(`
local now, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local claimed = {}
while #claimed < limit do
  local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, limit - #claimed)
  if #due == 0 then break end
  for _, row in ipairs(due) do
    local d = tonumber(redis.call('ZSCORE', KEYS[2], row) or '0')
    if d <= 0 then
      redis.call('ZREM', KEYS[1], row)
      redis.call('ZREM', KEYS[2], row)
      redis.call('SADD', KEYS[3], row)
    else
      redis.call('ZADD', KEYS[1], string.format('%.17g', now + d), row)
      claimed[#claimed + 1] = row
    end
  end
end
return {claimed, redis.call('SRANDMEMBER', KEYS[3], limit)}
`)

// ClaimDueRows implements driver.Store. The claim is one script on the
// {rows} slot; the cached copies of the rows unscheduled live on other
// slots and are deleted right after, before ClaimDueRows returns, and then
// taken out of dropped. If a delete fails, ClaimDueRows returns its error
// and a later claim deletes the copy.
func (s *store) ClaimDueRows(ctx context.Context, limit int) ([]string, error) {
	res, err := s.do(ctx, s.scriptCall(claimRows, s.k.rowKeys(),
		[]string{itoa(int(s.nowMs())), itoa(limit)}))[0].ToArray()
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
	if err != nil {
		return nil, err
	}
	if len(dropped) > 0 {
		calls := make([]call, len(dropped))
		for i, row := range dropped {
			calls[i] = call{cmd: s.c.B().Del().Key(s.k.row(row)).Build()}
		}
		var failed error
		for i, r := range s.do(ctx, calls...) {
			rec := recordOf(s.k.row(dropped[i]))
			if err := r.Error(); err != nil {
				s.own.changed(rec)
				failed = cmp.Or(failed, err)
			} else {
				s.own.deleted(rec)
			}
		}
		if failed != nil {
			return nil, failed
		}
		if err := s.c.Do(ctx, s.c.B().Srem().Key(s.k.dropped()).Member(dropped...).Build()).Error(); err != nil {
			return nil, err
		}
	}
	if len(claimed) == 0 {
		return nil, nil
	}
	return claimed, nil
}

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
// does. If a step fails once the SET was sent, the copy may be of a row
// unscheduled meanwhile, and nothing would delete it: it is deleted after
// the call returns (a row still scheduled then misses until its next
// refresh).
func (s *store) SetScheduledRow(ctx context.Context, row string, data []byte) (bool, error) {
	err := s.SetRow(ctx, row, data)
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
	go s.deleteRow(k)
	return false, err
}

// deleteRow deletes the row copy in key k, within a second, for a call
// that gave up.
func (s *store) deleteRow(k string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if s.c.Do(ctx, s.c.B().Del().Key(k).Build()).Error() == nil {
		s.own.deleted(recordOf(k))
	}
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
