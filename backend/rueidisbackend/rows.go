package rueidisbackend

import (
	"context"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail/internal/settings"
)

// scheduleRow records a row's delay and makes it due now.
//
// KEYS: schedule, delay. ARGV: row, delay ms, now ms.
var scheduleRow = newScript(`
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1
`)

// ScheduleRowCache implements driver.Store.
func (s *store) ScheduleRowCache(ctx context.Context, row string, delay time.Duration) error {
	return s.do(ctx, s.scriptCall(scheduleRow, []string{s.k.schedule(), s.k.delay()},
		[]string{row, i64(max(settings.Millis(delay), 0)), itoa(int(s.nowMs()))}))[0].Error()
}

// claimRows claims up to ARGV[2] due rows, most overdue first, rescheduling
// each at now + its delay; due rows with no positive delay are unscheduled
// instead and returned apart, for their cached copies to be deleted.
//
// KEYS: schedule, delay. ARGV: now ms, limit. Returns {claimed, unscheduled}.
var claimRows = newScript(`
local now, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local claimed, dropped = {}, {}
while #claimed < limit do
  local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, limit - #claimed)
  if #due == 0 then break end
  for _, row in ipairs(due) do
    local d = tonumber(redis.call('ZSCORE', KEYS[2], row) or '0')
    if d <= 0 then
      redis.call('ZREM', KEYS[1], row)
      redis.call('ZREM', KEYS[2], row)
      dropped[#dropped + 1] = row
    else
      redis.call('ZADD', KEYS[1], string.format('%.17g', now + d), row)
      claimed[#claimed + 1] = row
    end
  end
end
return {claimed, dropped}
`)

// ClaimDueRows implements driver.Store. The claim is one script on the
// {rows} slot; the cached copies of rows it unscheduled live on other slots
// and are deleted right after, before ClaimDueRows returns.
func (s *store) ClaimDueRows(ctx context.Context, limit int) ([]string, error) {
	res, err := s.do(ctx, s.scriptCall(claimRows, []string{s.k.schedule(), s.k.delay()},
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
		for i, r := range s.do(ctx, calls...) {
			if err := r.Error(); err != nil {
				return nil, err
			}
			s.own.deleted(recordOf(s.k.row(dropped[i])))
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
// does.
func (s *store) SetScheduledRow(ctx context.Context, row string, data []byte) (bool, error) {
	if err := s.SetRow(ctx, row, data); err != nil {
		return false, err
	}
	err := s.c.Do(ctx, s.c.B().Zscore().Key(s.k.delay()).Member(row).Build()).Error()
	if !rueidis.IsRedisNil(err) {
		return err == nil, err
	}
	k := s.k.row(row)
	if err := s.c.Do(ctx, s.c.B().Del().Key(k).Build()).Error(); err != nil {
		return false, err
	}
	s.own.deleted(recordOf(k))
	return false, nil
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
