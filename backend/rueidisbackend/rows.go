package rueidisbackend

import (
	"bytes"
	"context"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
)

// ScheduleRowCache implements retail.Rows.
func (s *Store) ScheduleRowCache(ctx context.Context, row string, delay time.Duration) error {
	if err := s.begin(ctx, retail.ValidateScheduleRowCache(row, delay)); err != nil {
		return err
	}
	err := s.do(ctx, s.scriptCall(scheduleRow, []string{s.k.schedule(), s.k.delay()},
		[]string{row, itoa(int(max(delay.Milliseconds(), 0))), itoa(int(s.nowMs()))}))[0].Error()
	return wrap("ScheduleRowCache", err)
}

// ClaimDueRows implements retail.Rows. The claim is one script on the {rows}
// slot; the cached copies of rows it unscheduled live on other slots and are
// deleted right after, before ClaimDueRows returns.
func (s *Store) ClaimDueRows(ctx context.Context, limit int) ([]string, error) {
	if err := s.begin(ctx, retail.ValidateClaimDueRows(limit)); err != nil {
		return nil, err
	}
	res, err := s.do(ctx, s.scriptCall(claimRows, []string{s.k.schedule(), s.k.delay()},
		[]string{itoa(int(s.nowMs())), itoa(limit)}))[0].ToArray()
	if err != nil {
		return nil, wrap("ClaimDueRows", err)
	}
	if len(res) != 2 {
		return nil, wrap("ClaimDueRows", errShortReply)
	}
	claimed, err := res[0].AsStrSlice()
	if err != nil {
		return nil, wrap("ClaimDueRows", err)
	}
	dropped, err := res[1].AsStrSlice()
	if err != nil {
		return nil, wrap("ClaimDueRows", err)
	}
	if len(dropped) > 0 {
		calls := make([]call, len(dropped))
		for i, row := range dropped {
			calls[i] = call{cmd: s.c.B().Del().Key(s.k.row(row)).Build()}
		}
		for i, r := range s.do(ctx, calls...) {
			if err := r.Error(); err != nil {
				return nil, wrap("ClaimDueRows", err)
			}
			s.own.deleted(s.k.row(dropped[i]))
		}
	}
	if len(claimed) == 0 {
		return nil, nil
	}
	return claimed, nil
}

// Row implements retail.Rows, reading through the client-side cache.
func (s *Store) Row(ctx context.Context, row string) ([]byte, bool, error) {
	if err := s.begin(ctx, retail.ValidateRow(row)); err != nil {
		return nil, false, err
	}
	msg, err := s.cachedGet(ctx, s.k.row(row))
	if rueidis.IsRedisNil(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, wrap("Row", err)
	}
	data, err := msg.AsBytes()
	if err != nil {
		return nil, false, wrap("Row", err)
	}
	// AsBytes may share memory with the client-side cache: copy.
	return bytes.Clone(data), true, nil
}

// SetRow implements retail.Rows.
func (s *Store) SetRow(ctx context.Context, row string, data []byte) error {
	if err := s.begin(ctx, retail.ValidateSetRow(row, data)); err != nil {
		return err
	}
	k := s.k.row(row)
	if err := s.c.Do(ctx, s.c.B().Set().Key(k).Value(rueidis.BinaryString(data)).Build()).Error(); err != nil {
		return wrap("SetRow", err)
	}
	s.own.wrote(k, data)
	return nil
}
