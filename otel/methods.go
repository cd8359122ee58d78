package retailotel

import (
	"context"
	"time"

	"github.com/retailkit/retail"
)

// Every method of retail.Store that takes a context, overridden the same
// way: begin a call, call the wrapped Store, end the call, in a deferred
// function so that a panic of the wrapped Store ends the span too.

// StartSession calls the wrapped Store's StartSession in a span of its own.
func (s *Store) StartSession(ctx context.Context, token, user string) (created bool, err error) {
	ctx, c := s.begin(ctx, "StartSession")
	defer func() { c.end(created, err, recover()) }()
	created, err = s.Store.StartSession(ctx, token, user)
	return created, err
}

// StartSessionFor calls the wrapped Store's StartSessionFor in a span of its own.
func (s *Store) StartSessionFor(ctx context.Context, token, user string, opts retail.SessionOptions) (created bool, err error) {
	ctx, c := s.begin(ctx, "StartSessionFor")
	defer func() { c.end(created, err, recover()) }()
	created, err = s.Store.StartSessionFor(ctx, token, user, opts)
	return created, err
}

// CheckToken calls the wrapped Store's CheckToken in a span of its own.
func (s *Store) CheckToken(ctx context.Context, token string) (user string, ok bool, err error) {
	ctx, c := s.begin(ctx, "CheckToken")
	defer func() { c.end(ok, err, recover()) }()
	user, ok, err = s.Store.CheckToken(ctx, token)
	return user, ok, err
}

// RefreshSession calls the wrapped Store's RefreshSession in a span of its own.
func (s *Store) RefreshSession(ctx context.Context, token, item string) (user string, ok bool, err error) {
	ctx, c := s.begin(ctx, "RefreshSession")
	defer func() { c.end(ok, err, recover()) }()
	user, ok, err = s.Store.RefreshSession(ctx, token, item)
	return user, ok, err
}

// UpdateToken calls the wrapped Store's UpdateToken in a span of its own.
func (s *Store) UpdateToken(ctx context.Context, token, user, item string) (err error) {
	ctx, c := s.begin(ctx, "UpdateToken")
	defer func() { c.end(true, err, recover()) }()
	err = s.Store.UpdateToken(ctx, token, user, item)
	return err
}

// RenewSession calls the wrapped Store's RenewSession in a span of its own.
func (s *Store) RenewSession(ctx context.Context, token, newToken, user string) (ok bool, err error) {
	ctx, c := s.begin(ctx, "RenewSession")
	defer func() { c.end(ok, err, recover()) }()
	ok, err = s.Store.RenewSession(ctx, token, newToken, user)
	return ok, err
}

// RenewSessionFor calls the wrapped Store's RenewSessionFor in a span of its own.
func (s *Store) RenewSessionFor(ctx context.Context, token, newToken, user string, opts retail.SessionOptions) (ok bool, err error) {
	ctx, c := s.begin(ctx, "RenewSessionFor")
	defer func() { c.end(ok, err, recover()) }()
	ok, err = s.Store.RenewSessionFor(ctx, token, newToken, user, opts)
	return ok, err
}

// RecentItems calls the wrapped Store's RecentItems in a span of its own.
func (s *Store) RecentItems(ctx context.Context, token string) (items []string, err error) {
	ctx, c := s.begin(ctx, "RecentItems")
	defer func() { c.end(true, err, recover()) }()
	items, err = s.Store.RecentItems(ctx, token)
	return items, err
}

// Logout calls the wrapped Store's Logout in a span of its own.
func (s *Store) Logout(ctx context.Context, token string) (err error) {
	ctx, c := s.begin(ctx, "Logout")
	defer func() { c.end(true, err, recover()) }()
	err = s.Store.Logout(ctx, token)
	return err
}

// UserSessions calls the wrapped Store's UserSessions in a span of its own.
func (s *Store) UserSessions(ctx context.Context, user string) (sessions []retail.SessionInfo, err error) {
	ctx, c := s.begin(ctx, "UserSessions")
	defer func() { c.end(true, err, recover()) }()
	sessions, err = s.Store.UserSessions(ctx, user)
	return sessions, err
}

// EndSession calls the wrapped Store's EndSession in a span of its own.
func (s *Store) EndSession(ctx context.Context, id string) (err error) {
	ctx, c := s.begin(ctx, "EndSession")
	defer func() { c.end(true, err, recover()) }()
	err = s.Store.EndSession(ctx, id)
	return err
}

// LogoutUser calls the wrapped Store's LogoutUser in a span of its own.
func (s *Store) LogoutUser(ctx context.Context, user string) (n int, err error) {
	ctx, c := s.begin(ctx, "LogoutUser")
	defer func() { c.end(true, err, recover()) }()
	n, err = s.Store.LogoutUser(ctx, user)
	return n, err
}

// SessionCount calls the wrapped Store's SessionCount in a span of its own.
func (s *Store) SessionCount(ctx context.Context) (n int, err error) {
	ctx, c := s.begin(ctx, "SessionCount")
	defer func() { c.end(true, err, recover()) }()
	n, err = s.Store.SessionCount(ctx)
	return n, err
}

// CleanSessions calls the wrapped Store's CleanSessions in a span of its own.
func (s *Store) CleanSessions(ctx context.Context, keep, max int) (removed int, err error) {
	ctx, c := s.begin(ctx, "CleanSessions")
	defer func() { c.end(true, err, recover()) }()
	removed, err = s.Store.CleanSessions(ctx, keep, max)
	return removed, err
}

// RepairSessions calls the wrapped Store's RepairSessions in a span of its own.
func (s *Store) RepairSessions(ctx context.Context) (repaired int, err error) {
	ctx, c := s.begin(ctx, "RepairSessions")
	defer func() { c.end(true, err, recover()) }()
	repaired, err = s.Store.RepairSessions(ctx)
	return repaired, err
}

// SetValue calls the wrapped Store's SetValue in a span of its own.
func (s *Store) SetValue(ctx context.Context, token, key string, value []byte) (err error) {
	ctx, c := s.begin(ctx, "SetValue")
	defer func() { c.end(true, err, recover()) }()
	err = s.Store.SetValue(ctx, token, key, value)
	return err
}

// Value calls the wrapped Store's Value in a span of its own.
func (s *Store) Value(ctx context.Context, token, key string) (value []byte, ok bool, err error) {
	ctx, c := s.begin(ctx, "Value")
	defer func() { c.end(ok, err, recover()) }()
	value, ok, err = s.Store.Value(ctx, token, key)
	return value, ok, err
}

// PopValue calls the wrapped Store's PopValue in a span of its own.
func (s *Store) PopValue(ctx context.Context, token, key string) (value []byte, ok bool, err error) {
	ctx, c := s.begin(ctx, "PopValue")
	defer func() { c.end(ok, err, recover()) }()
	value, ok, err = s.Store.PopValue(ctx, token, key)
	return value, ok, err
}

// DeleteValue calls the wrapped Store's DeleteValue in a span of its own.
func (s *Store) DeleteValue(ctx context.Context, token, key string) (err error) {
	ctx, c := s.begin(ctx, "DeleteValue")
	defer func() { c.end(true, err, recover()) }()
	err = s.Store.DeleteValue(ctx, token, key)
	return err
}

// AddToCart calls the wrapped Store's AddToCart in a span of its own.
func (s *Store) AddToCart(ctx context.Context, token, item string, count int) (err error) {
	ctx, c := s.begin(ctx, "AddToCart")
	defer func() { c.end(true, err, recover()) }()
	err = s.Store.AddToCart(ctx, token, item, count)
	return err
}

// IncrementCart calls the wrapped Store's IncrementCart in a span of its own.
func (s *Store) IncrementCart(ctx context.Context, token, item string, n int) (count int, err error) {
	ctx, c := s.begin(ctx, "IncrementCart")
	defer func() { c.end(true, err, recover()) }()
	count, err = s.Store.IncrementCart(ctx, token, item, n)
	return count, err
}

// Cart calls the wrapped Store's Cart in a span of its own.
func (s *Store) Cart(ctx context.Context, token string) (cart map[string]int, err error) {
	ctx, c := s.begin(ctx, "Cart")
	defer func() { c.end(true, err, recover()) }()
	cart, err = s.Store.Cart(ctx, token)
	return cart, err
}

// Page calls the wrapped Store's Page in a span of its own.
func (s *Store) Page(ctx context.Context, key string) (body []byte, ok bool, err error) {
	ctx, c := s.begin(ctx, "Page")
	defer func() { c.end(ok, err, recover()) }()
	body, ok, err = s.Store.Page(ctx, key)
	return body, ok, err
}

// SetPage calls the wrapped Store's SetPage in a span of its own.
func (s *Store) SetPage(ctx context.Context, key string, body []byte, ttl time.Duration) (err error) {
	ctx, c := s.begin(ctx, "SetPage")
	defer func() { c.end(true, err, recover()) }()
	err = s.Store.SetPage(ctx, key, body, ttl)
	return err
}

// SetItemPage calls the wrapped Store's SetItemPage in a span of its own.
func (s *Store) SetItemPage(ctx context.Context, item, key string, body []byte, ttl time.Duration) (err error) {
	ctx, c := s.begin(ctx, "SetItemPage")
	defer func() { c.end(true, err, recover()) }()
	err = s.Store.SetItemPage(ctx, item, key, body, ttl)
	return err
}

// DeletePage calls the wrapped Store's DeletePage in a span of its own.
func (s *Store) DeletePage(ctx context.Context, key string) (err error) {
	ctx, c := s.begin(ctx, "DeletePage")
	defer func() { c.end(true, err, recover()) }()
	err = s.Store.DeletePage(ctx, key)
	return err
}

// PurgeItemPages calls the wrapped Store's PurgeItemPages in a span of its own.
func (s *Store) PurgeItemPages(ctx context.Context, item string) (n int, err error) {
	ctx, c := s.begin(ctx, "PurgeItemPages")
	defer func() { c.end(true, err, recover()) }()
	n, err = s.Store.PurgeItemPages(ctx, item)
	return n, err
}

// ScheduleRowCache calls the wrapped Store's ScheduleRowCache in a span of its own.
func (s *Store) ScheduleRowCache(ctx context.Context, row string, delay time.Duration) (err error) {
	ctx, c := s.begin(ctx, "ScheduleRowCache")
	defer func() { c.end(true, err, recover()) }()
	err = s.Store.ScheduleRowCache(ctx, row, delay)
	return err
}

// ClaimDueRows calls the wrapped Store's ClaimDueRows in a span of its own.
func (s *Store) ClaimDueRows(ctx context.Context, limit int) (rows []string, err error) {
	ctx, c := s.begin(ctx, "ClaimDueRows")
	defer func() { c.end(true, err, recover()) }()
	rows, err = s.Store.ClaimDueRows(ctx, limit)
	return rows, err
}

// Row calls the wrapped Store's Row in a span of its own.
func (s *Store) Row(ctx context.Context, row string) (data []byte, ok bool, err error) {
	ctx, c := s.begin(ctx, "Row")
	defer func() { c.end(ok, err, recover()) }()
	data, ok, err = s.Store.Row(ctx, row)
	return data, ok, err
}

// SetRow calls the wrapped Store's SetRow in a span of its own.
func (s *Store) SetRow(ctx context.Context, row string, data []byte) (err error) {
	ctx, c := s.begin(ctx, "SetRow")
	defer func() { c.end(true, err, recover()) }()
	err = s.Store.SetRow(ctx, row, data)
	return err
}

// SetScheduledRow calls the wrapped Store's SetScheduledRow in a span of its own.
func (s *Store) SetScheduledRow(ctx context.Context, row string, data []byte) (stored bool, err error) {
	ctx, c := s.begin(ctx, "SetScheduledRow")
	defer func() { c.end(stored, err, recover()) }()
	stored, err = s.Store.SetScheduledRow(ctx, row, data)
	return stored, err
}

// CountView calls the wrapped Store's CountView in a span of its own.
func (s *Store) CountView(ctx context.Context, item string) (err error) {
	ctx, c := s.begin(ctx, "CountView")
	defer func() { c.end(true, err, recover()) }()
	err = s.Store.CountView(ctx, item)
	return err
}

// FlushViews calls the wrapped Store's FlushViews in a span of its own.
func (s *Store) FlushViews(ctx context.Context) (err error) {
	ctx, c := s.begin(ctx, "FlushViews")
	defer func() { c.end(true, err, recover()) }()
	err = s.Store.FlushViews(ctx)
	return err
}

// ItemRank calls the wrapped Store's ItemRank in a span of its own.
func (s *Store) ItemRank(ctx context.Context, item string) (rank int, ok bool, err error) {
	ctx, c := s.begin(ctx, "ItemRank")
	defer func() { c.end(ok, err, recover()) }()
	rank, ok, err = s.Store.ItemRank(ctx, item)
	return rank, ok, err
}

// TopItems calls the wrapped Store's TopItems in a span of its own.
func (s *Store) TopItems(ctx context.Context, n int) (items []retail.ItemViews, err error) {
	ctx, c := s.begin(ctx, "TopItems")
	defer func() { c.end(true, err, recover()) }()
	items, err = s.Store.TopItems(ctx, n)
	return items, err
}

// RescaleViews calls the wrapped Store's RescaleViews in a span of its own.
func (s *Store) RescaleViews(ctx context.Context, keep int, factor float64) (err error) {
	ctx, c := s.begin(ctx, "RescaleViews")
	defer func() { c.end(true, err, recover()) }()
	err = s.Store.RescaleViews(ctx, keep, factor)
	return err
}

// Claim calls the wrapped Store's Claim in a span of its own.
func (s *Store) Claim(ctx context.Context, name, owner string, turn int64, hold time.Duration) (held bool, err error) {
	ctx, c := s.begin(ctx, "Claim")
	defer func() { c.end(held, err, recover()) }()
	held, err = s.Store.Claim(ctx, name, owner, turn, hold)
	return held, err
}
