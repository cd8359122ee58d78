package retail

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/retailkit/retail/driver"
	"github.com/retailkit/retail/internal/sessionid"
)

// NewStore returns the Store over a backend's driver: the one front door of
// every backend. It checks each call's arguments against the input rules
// (returning an [*InputError] before the driver sees them), returns a
// context's error if it has ended before the call, refuses calls after
// Close with [ErrClosed], reports a missing session as [ErrNoSession], and
// wraps every other error once in an [*OpError] naming the operation and
// its key argument. Backend constructors call it; users get its result from
// them (see the package documentation, "Writing a backend").
func NewStore(d driver.Store) Store { return NewStoreWith(d, StoreOptions{}) }

// StoreOptions are the settings of the Store that [NewStoreWith] makes
// over a driver.
type StoreOptions struct {
	// ViewFlush is how long the Store adds up the item views counted in
	// its process (by CountView, RefreshSession and UpdateToken) before it
	// sends them to the driver, as one increment per item:
	// [DefaultViewFlush] if zero. A negative ViewFlush sends each view at
	// once, which suits a driver whose data lives in the process (memory).
	// Reads of the counts (ItemRank, TopItems) and RescaleViews send the
	// process's views first, so a process reads its own views; other
	// processes see them within ViewFlush. If the process dies, the views
	// of its last window are lost. Views whose sending fails are sent
	// again, and counted once, for up to half an hour (half of
	// [driver.ViewFlushMemory]).
	ViewFlush time.Duration

	// Lifetime is the driver's session lifetime (its Lifetime option,
	// resolved): the longest lifetime StartSessionFor and RenewSessionFor
	// accept. [DefaultLifetime] if zero.
	Lifetime time.Duration

	// MaxSessionsPerUser, if positive, is how many live sessions one user
	// may hold (the driver's MaxSessionsPerUser option); 0 is no limit.
	// A login (StartSession or StartSessionFor with a user, RenewSession
	// or RenewSessionFor with a user) that leaves more ends the least
	// recently seen of the others before it returns: those whose LastSeen,
	// as UserSessions reports it, is oldest, ties broken by the older
	// Created, then by the greater ID. (A backend that writes a visit only
	// every TouchEvery reports a LastSeen up to TouchEvery early, so among
	// sessions seen within TouchEvery of each other the choice is
	// approximate.) The login's own session is never the one its login
	// ends, but a login running at the same time may end it, as it may any
	// other. However logins interleave, once they have returned the user
	// has at most MaxSessionsPerUser live sessions: each login reads the
	// user's sessions after its own is listed, so the last of them to read
	// sees every one. If enforcing the limit fails, the login returns the
	// driver's error and ends its own session, so that the limit holds
	// unless that fails too. UpdateToken, the book's, is not a login here:
	// it does not enforce the limit.
	MaxSessionsPerUser int
}

// NewStoreWith is [NewStore] with options.
func NewStoreWith(d driver.Store, opts StoreOptions) Store {
	s := &store{d: d, lifetime: opts.Lifetime, maxPerUser: max(opts.MaxSessionsPerUser, 0), done: make(chan struct{})}
	if s.lifetime == 0 {
		s.lifetime = DefaultLifetime
	}
	if opts.ViewFlush == 0 {
		opts.ViewFlush = DefaultViewFlush
	}
	if opts.ViewFlush > 0 {
		s.views = newViewBuffer(d, opts.ViewFlush, &s.stats.viewFlushFailures)
	}
	return s
}

type store struct {
	d      driver.Store
	closed atomic.Bool
	done   chan struct{} // closed when Close begins (see closing)
	stats  counters
	views  *viewBuffer // nil if views go to the driver at once

	lifetime   time.Duration // the longest a session lives
	maxPerUser int           // live sessions a user may hold; 0 for no limit
}

// countView counts one view of item: into the buffer, or at once. A view
// counted while Close runs goes to the driver at once, since Close may
// have flushed the buffer already.
func (s *store) countView(ctx context.Context, item string) error {
	if s.views != nil && s.views.add(item) {
		return nil
	}
	return s.d.CountViews(ctx, driver.ViewFlush{}, []driver.ItemViews{{Item: item, Views: 1}})
}

// flushViews sends the views this process counted, before a call that
// reads or rescales the counts.
func (s *store) flushViews(ctx context.Context) error {
	if s.views == nil {
		return nil
	}
	return s.views.flush(ctx)
}

func (s *store) statCounters() *counters { return &s.stats }

func (s *store) closing() <-chan struct{} { return s.done }

func (s *store) Stats() Stats {
	st := s.stats.snapshot()
	st.ClientCacheHits, st.ClientCacheMisses = s.d.CacheCounts()
	return st
}

// begin is the gate every valid call passes: a live context and an open
// store. The caller wraps its error.
func (s *store) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

func fail(op, key string, err error) error { return &OpError{Op: op, Key: key, Err: err} }

func (s *store) CheckToken(ctx context.Context, token string) (string, bool, error) {
	const op = "CheckToken"
	if err := checkID(op, "token", token); err != nil {
		return "", false, err
	}
	if err := s.begin(ctx); err != nil {
		return "", false, fail(op, tokenArg(token), err)
	}
	user, ok, err := s.d.CheckToken(ctx, sessionid.Of(token))
	if err != nil {
		return "", false, fail(op, tokenArg(token), err)
	}
	return user, ok, nil
}

func (s *store) StartSession(ctx context.Context, token, user string) (bool, error) {
	return s.startSession(ctx, "StartSession", token, user, SessionOptions{})
}

func (s *store) StartSessionFor(ctx context.Context, token, user string, opts SessionOptions) (bool, error) {
	const op = "StartSessionFor"
	if err := checkSessionOptions(op, opts, s.lifetime); err != nil {
		return false, err
	}
	return s.startSession(ctx, op, token, user, opts)
}

// startSession starts a session with the options given.
func (s *store) startSession(ctx context.Context, op, token, user string, opts SessionOptions) (bool, error) {
	if err := checkID(op, "token", token); err != nil {
		return false, err
	}
	if err := checkGuestUser(op, user); err != nil {
		return false, err
	}
	if err := s.begin(ctx); err != nil {
		return false, fail(op, tokenArg(token), err)
	}
	id := sessionid.Of(token)
	st, err := s.d.StartSession(ctx, id, user, driver.SessionOptions(opts))
	switch {
	case err != nil:
		return false, fail(op, tokenArg(token), err)
	case st == driver.Full:
		return false, tooManyValues(op)
	case st != driver.OK:
		return false, nil
	}
	if err := s.limitSessions(ctx, user, id); err != nil {
		return false, fail(op, tokenArg(token), err)
	}
	s.stats.sessionsStarted.Add(1)
	return true, nil
}

func (s *store) RefreshSession(ctx context.Context, token, item string) (string, bool, error) {
	const op = "RefreshSession"
	if err := checkID(op, "token", token); err != nil {
		return "", false, err
	}
	if item != "" {
		if err := checkID(op, "item", item); err != nil {
			return "", false, err
		}
	}
	if err := s.begin(ctx); err != nil {
		return "", false, fail(op, tokenArg(token), err)
	}
	user, ok, err := s.d.RefreshSession(ctx, sessionid.Of(token), item)
	if err == nil && ok && item != "" {
		err = s.countView(ctx, item)
	}
	if err != nil {
		return "", false, fail(op, tokenArg(token), err)
	}
	return user, ok, nil
}

func (s *store) RenewSession(ctx context.Context, token, newToken, user string) (bool, error) {
	const op = "RenewSession"
	if err := checkRenewSession(op, token, newToken, user); err != nil {
		return false, err
	}
	return s.renewSession(ctx, op, token, newToken, user, SessionOptions{})
}

func (s *store) RenewSessionFor(ctx context.Context, token, newToken, user string, opts SessionOptions) (bool, error) {
	const op = "RenewSessionFor"
	if err := checkRenewSession(op, token, newToken, user); err != nil {
		return false, err
	}
	if user == "" {
		return false, invalid(op, "user", "empty: options are given at a login")
	}
	if err := checkSessionOptions(op, opts, s.lifetime); err != nil {
		return false, err
	}
	return s.renewSession(ctx, op, token, newToken, user, opts)
}

// renewSession renews a session with the options given.
func (s *store) renewSession(ctx context.Context, op, token, newToken, user string, opts SessionOptions) (bool, error) {
	if err := s.begin(ctx); err != nil {
		return false, fail(op, tokenArg(token), err)
	}
	id := sessionid.Of(newToken)
	st, err := s.d.RenewSession(ctx, sessionid.Of(token), id, user, driver.SessionOptions(opts))
	switch {
	case err != nil:
		return false, fail(op, tokenArg(token), err)
	case st == driver.Full:
		return false, tooManyValues(op)
	case st == driver.Exists:
		return false, invalid(op, "newToken", "already names a session")
	case st != driver.OK:
		return false, nil
	}
	if err := s.limitSessions(ctx, user, id); err != nil {
		return false, fail(op, tokenArg(token), err)
	}
	return true, nil
}

// tooManyValues is the error of a login whose SessionOptions.Values would
// leave its session more than MaxSessionValues values.
func tooManyValues(op string) error {
	return invalid(op, "Values", "would leave the session more than "+strconv.Itoa(MaxSessionValues)+" values")
}

// limitSessions enforces MaxSessionsPerUser after user logged in to the
// session id (see StoreOptions): it ends the least recently seen of the
// others while user has more. If it fails, it ends the new session too,
// so that the limit holds unless that fails as well, and returns the
// error. A user "" (a guest, or a renewal) is no login: nothing to do.
//
// The new session is ended even if ctx has ended (the likely reason the
// limit failed), under a context of its own that lasts flushTimeout; the
// call waits for that only while ctx lasts, so that its deadline holds
// while the Store stalls.
func (s *store) limitSessions(ctx context.Context, user, id string) error {
	if s.maxPerUser == 0 || user == "" {
		return nil
	}
	err := s.endOverLimit(ctx, user, id)
	if err != nil {
		done := make(chan struct{})
		go func() {
			defer close(done)
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
			defer cancel()
			_ = s.d.Logout(lctx, id)
		}()
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	return err
}

func (s *store) endOverLimit(ctx context.Context, user, id string) error {
	infos, err := s.d.UserSessions(ctx, user)
	if err != nil || len(infos) <= s.maxPerUser {
		return err
	}
	// The login's own session first, then the most recently seen.
	slices.SortFunc(infos, func(a, b driver.SessionInfo) int {
		return cmp.Or(
			cmp.Compare(boolInt(b.ID == id), boolInt(a.ID == id)),
			b.LastSeen.Compare(a.LastSeen),
			b.Created.Compare(a.Created),
			cmp.Compare(a.ID, b.ID))
	})
	for _, in := range infos[s.maxPerUser:] {
		if err := s.d.Logout(ctx, in.ID); err != nil {
			return err
		}
		s.stats.logouts.Add(1)
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s *store) UserSessions(ctx context.Context, user string) ([]SessionInfo, error) {
	const op = "UserSessions"
	if err := checkUser(op, user); err != nil {
		return nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, fail(op, keyArg("user", user), err)
	}
	infos, err := s.d.UserSessions(ctx, user)
	if err != nil {
		return nil, fail(op, keyArg("user", user), err)
	}
	out := make([]SessionInfo, len(infos))
	for i, in := range infos {
		out[i] = SessionInfo(in)
	}
	return out, nil
}

func (s *store) LogoutUser(ctx context.Context, user string) (int, error) {
	const op = "LogoutUser"
	if err := checkUser(op, user); err != nil {
		return 0, err
	}
	if err := s.begin(ctx); err != nil {
		return 0, fail(op, keyArg("user", user), err)
	}
	n, err := s.d.LogoutUser(ctx, user)
	s.stats.logoutUserSessions.addCount(n)
	if err != nil {
		return n, fail(op, keyArg("user", user), err)
	}
	return n, nil
}

func (s *store) SetValue(ctx context.Context, token, key string, value []byte) error {
	const op = "SetValue"
	if err := checkSetValue(token, key, value); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return fail(op, tokenArg(token), err)
	}
	st, err := s.d.SetValue(ctx, sessionid.Of(token), key, value)
	switch {
	case err != nil:
		return fail(op, tokenArg(token), err)
	case st == driver.NoSession:
		return fail(op, tokenArg(token), ErrNoSession)
	case st == driver.Full:
		return invalid(op, "key", "a new value in a session of "+strconv.Itoa(MaxSessionValues)+" values")
	}
	return nil
}

func (s *store) Value(ctx context.Context, token, key string) ([]byte, bool, error) {
	return s.readValue(ctx, "Value", token, key, s.d.Value)
}

func (s *store) PopValue(ctx context.Context, token, key string) ([]byte, bool, error) {
	return s.readValue(ctx, "PopValue", token, key, s.d.PopValue)
}

func (s *store) readValue(ctx context.Context, op, token, key string, read func(context.Context, string, string) ([]byte, bool, error)) ([]byte, bool, error) {
	if err := checkTokenKey(op, token, key); err != nil {
		return nil, false, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, false, fail(op, tokenArg(token), err)
	}
	v, ok, err := read(ctx, sessionid.Of(token), key)
	if err != nil {
		return nil, false, fail(op, tokenArg(token), err)
	}
	return v, ok, nil
}

func (s *store) DeleteValue(ctx context.Context, token, key string) error {
	const op = "DeleteValue"
	if err := checkTokenKey(op, token, key); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return fail(op, tokenArg(token), err)
	}
	if err := s.d.DeleteValue(ctx, sessionid.Of(token), key); err != nil {
		return fail(op, tokenArg(token), err)
	}
	return nil
}

func (s *store) UpdateToken(ctx context.Context, token, user, item string) error {
	const op = "UpdateToken"
	if err := checkUpdateToken(token, user, item); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return fail(op, tokenArg(token), err)
	}
	err := s.d.UpdateToken(ctx, sessionid.Of(token), user, item)
	if err == nil && item != "" {
		err = s.countView(ctx, item)
	}
	if err != nil {
		return fail(op, tokenArg(token), err)
	}
	return nil
}

func (s *store) RecentItems(ctx context.Context, token string) ([]string, error) {
	const op = "RecentItems"
	if err := checkID(op, "token", token); err != nil {
		return nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, fail(op, tokenArg(token), err)
	}
	items, err := s.d.RecentItems(ctx, sessionid.Of(token))
	if err != nil {
		return nil, fail(op, tokenArg(token), err)
	}
	return items, nil
}

func (s *store) Logout(ctx context.Context, token string) error {
	const op = "Logout"
	if err := checkID(op, "token", token); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return fail(op, tokenArg(token), err)
	}
	if err := s.d.Logout(ctx, sessionid.Of(token)); err != nil {
		return fail(op, tokenArg(token), err)
	}
	s.stats.logouts.Add(1)
	return nil
}

// EndSession ends the session that UserSessions lists with id, as Logout
// ends a token's.
func (s *store) EndSession(ctx context.Context, id string) error {
	const op = "EndSession"
	if !sessionid.Valid(id) {
		return invalid(op, "id", "not a session ID from UserSessions")
	}
	if err := s.begin(ctx); err != nil {
		return fail(op, keyArg("id", id), err)
	}
	if err := s.d.Logout(ctx, id); err != nil {
		return fail(op, keyArg("id", id), err)
	}
	s.stats.logouts.Add(1)
	return nil
}

func (s *store) SessionCount(ctx context.Context) (int, error) {
	const op = "SessionCount"
	if err := s.begin(ctx); err != nil {
		return 0, fail(op, "", err)
	}
	n, err := s.d.SessionCount(ctx)
	if err != nil {
		return 0, fail(op, "", err)
	}
	return n, nil
}

func (s *store) CleanSessions(ctx context.Context, keep, max int) (int, error) {
	const op = "CleanSessions"
	if err := checkNotNegative(op, "keep", keep); err != nil {
		return 0, err
	}
	if err := checkNotNegative(op, "max", max); err != nil {
		return 0, err
	}
	if err := s.begin(ctx); err != nil {
		return 0, fail(op, "", err)
	}
	removed, err := s.d.CleanSessions(ctx, keep, max)
	s.stats.sessionsCleaned.addCount(removed)
	if err != nil {
		return removed, fail(op, "", err)
	}
	return removed, nil
}

func (s *store) RepairSessions(ctx context.Context) (int, error) {
	const op = "RepairSessions"
	if err := s.begin(ctx); err != nil {
		return 0, fail(op, "", err)
	}
	repaired, err := s.d.RepairSessions(ctx)
	s.stats.sessionsRepaired.addCount(repaired)
	if err != nil {
		return repaired, fail(op, "", err)
	}
	return repaired, nil
}

func (s *store) AddToCart(ctx context.Context, token, item string, count int) error {
	const op = "AddToCart"
	if err := checkAddToCart(token, item, count); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return fail(op, tokenArg(token), err)
	}
	st, err := s.d.AddToCart(ctx, sessionid.Of(token), item, count)
	return cartStatus(op, token, st, err)
}

func (s *store) IncrementCart(ctx context.Context, token, item string, n int) (int, error) {
	const op = "IncrementCart"
	if err := checkIncrementCart(token, item, n); err != nil {
		return 0, err
	}
	if err := s.begin(ctx); err != nil {
		return 0, fail(op, tokenArg(token), err)
	}
	count, st, err := s.d.IncrementCart(ctx, sessionid.Of(token), item, n)
	if err := cartStatus(op, token, st, err); err != nil {
		return 0, err
	}
	return count, nil
}

// cartStatus turns a driver's answer to a cart write into the Store's.
func cartStatus(op, token string, st driver.Status, err error) error {
	switch {
	case err != nil:
		return fail(op, tokenArg(token), err)
	case st == driver.NoSession:
		return fail(op, tokenArg(token), ErrNoSession)
	case st == driver.Full:
		return invalid(op, "item", "a new line in a cart of "+strconv.Itoa(MaxCartLines)+" lines")
	case st == driver.TooMany:
		return invalid(op, "n", "makes the count more than "+strconv.Itoa(MaxCartCount))
	}
	return nil
}

func (s *store) Cart(ctx context.Context, token string) (map[string]int, error) {
	const op = "Cart"
	if err := checkID(op, "token", token); err != nil {
		return nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, fail(op, tokenArg(token), err)
	}
	cart, err := s.d.Cart(ctx, sessionid.Of(token))
	if err != nil {
		return nil, fail(op, tokenArg(token), err)
	}
	if cart == nil {
		cart = map[string]int{}
	}
	return cart, nil
}

func (s *store) Page(ctx context.Context, key string) ([]byte, bool, error) {
	const op = "Page"
	if err := checkPageKey(op, key); err != nil {
		return nil, false, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, false, fail(op, keyArg("key", key), err)
	}
	body, ok, err := s.d.Page(ctx, key)
	if err != nil {
		return nil, false, fail(op, keyArg("key", key), err)
	}
	return body, ok, nil
}

func (s *store) SetPage(ctx context.Context, key string, body []byte, ttl time.Duration) error {
	const op = "SetPage"
	if err := checkSetPage(key, body, ttl); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return fail(op, keyArg("key", key), err)
	}
	if err := s.d.SetPage(ctx, key, body, ttl); err != nil {
		return fail(op, keyArg("key", key), err)
	}
	return nil
}

func (s *store) SetItemPage(ctx context.Context, item, key string, body []byte, ttl time.Duration) error {
	const op = "SetItemPage"
	if err := checkSetItemPage(item, key, body, ttl); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return fail(op, keyArg("key", key), err)
	}
	if err := s.d.SetItemPage(ctx, item, key, body, ttl); err != nil {
		return fail(op, keyArg("key", key), err)
	}
	return nil
}

func (s *store) DeletePage(ctx context.Context, key string) error {
	const op = "DeletePage"
	if err := checkPageKey(op, key); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return fail(op, keyArg("key", key), err)
	}
	if err := s.d.DeletePage(ctx, key); err != nil {
		return fail(op, keyArg("key", key), err)
	}
	return nil
}

func (s *store) PurgeItemPages(ctx context.Context, item string) (int, error) {
	const op = "PurgeItemPages"
	if err := checkID(op, "item", item); err != nil {
		return 0, err
	}
	if err := s.begin(ctx); err != nil {
		return 0, fail(op, keyArg("item", item), err)
	}
	n, err := s.d.PurgeItemPages(ctx, item)
	if err != nil {
		return 0, fail(op, keyArg("item", item), err)
	}
	return n, nil
}

func (s *store) ScheduleRowCache(ctx context.Context, row string, delay time.Duration) error {
	const op = "ScheduleRowCache"
	if err := checkScheduleRowCache(row, delay); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return fail(op, keyArg("row", row), err)
	}
	if err := s.d.ScheduleRowCache(ctx, row, delay); err != nil {
		return fail(op, keyArg("row", row), err)
	}
	return nil
}

func (s *store) ClaimDueRows(ctx context.Context, limit int) ([]string, error) {
	const op = "ClaimDueRows"
	if err := checkClaimLimit(op, "limit", limit); err != nil {
		return nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, fail(op, "", err)
	}
	rows, err := s.d.ClaimDueRows(ctx, limit)
	if err != nil {
		return nil, fail(op, "", err)
	}
	return rows, nil
}

func (s *store) Row(ctx context.Context, row string) ([]byte, bool, error) {
	const op = "Row"
	if err := checkID(op, "row", row); err != nil {
		return nil, false, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, false, fail(op, keyArg("row", row), err)
	}
	data, ok, err := s.d.Row(ctx, row)
	if err != nil {
		return nil, false, fail(op, keyArg("row", row), err)
	}
	return data, ok, nil
}

func (s *store) SetRow(ctx context.Context, row string, data []byte) error {
	const op = "SetRow"
	if err := checkRow(op, row, data); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return fail(op, keyArg("row", row), err)
	}
	if err := s.d.SetRow(ctx, row, data); err != nil {
		return fail(op, keyArg("row", row), err)
	}
	return nil
}

func (s *store) SetScheduledRow(ctx context.Context, row string, data []byte) (bool, error) {
	const op = "SetScheduledRow"
	if err := checkRow(op, row, data); err != nil {
		return false, err
	}
	if err := s.begin(ctx); err != nil {
		return false, fail(op, keyArg("row", row), err)
	}
	stored, err := s.d.SetScheduledRow(ctx, row, data)
	if err != nil {
		return false, fail(op, keyArg("row", row), err)
	}
	return stored, nil
}

func (s *store) CountView(ctx context.Context, item string) error {
	const op = "CountView"
	if err := checkID(op, "item", item); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return fail(op, keyArg("item", item), err)
	}
	if err := s.countView(ctx, item); err != nil {
		return fail(op, keyArg("item", item), err)
	}
	return nil
}

func (s *store) FlushViews(ctx context.Context) error {
	const op = "FlushViews"
	if err := s.begin(ctx); err != nil {
		return fail(op, "", err)
	}
	if err := s.flushViews(ctx); err != nil {
		return fail(op, "", err)
	}
	return nil
}

func (s *store) ItemRank(ctx context.Context, item string) (int, bool, error) {
	const op = "ItemRank"
	if err := checkID(op, "item", item); err != nil {
		return 0, false, err
	}
	if err := s.begin(ctx); err != nil {
		return 0, false, fail(op, keyArg("item", item), err)
	}
	err := s.flushViews(ctx)
	var rank int
	var ok bool
	if err == nil {
		rank, ok, err = s.d.ItemRank(ctx, item)
	}
	if err != nil {
		return 0, false, fail(op, keyArg("item", item), err)
	}
	return rank, ok, nil
}

func (s *store) TopItems(ctx context.Context, n int) ([]ItemViews, error) {
	const op = "TopItems"
	if err := checkTopItems(n); err != nil {
		return nil, err
	}
	if err := s.begin(ctx); err != nil {
		return nil, fail(op, "", err)
	}
	err := s.flushViews(ctx)
	var top []driver.ItemViews
	if err == nil {
		top, err = s.d.TopItems(ctx, n)
	}
	if err != nil {
		return nil, fail(op, "", err)
	}
	out := make([]ItemViews, len(top))
	for i, t := range top {
		out[i] = ItemViews(t)
	}
	return out, nil
}

func (s *store) RescaleViews(ctx context.Context, keep int, factor float64) error {
	const op = "RescaleViews"
	if err := checkRescale(op, keep, factor); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return fail(op, "", err)
	}
	if err := s.flushViews(ctx); err != nil {
		return fail(op, "", err)
	}
	if err := s.d.RescaleViews(ctx, keep, factor); err != nil {
		return fail(op, "", err)
	}
	s.stats.rescales.Add(1)
	return nil
}

func (s *store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(s.done)
	var flushErr error
	if s.views != nil {
		flushErr = s.views.close()
	}
	if err := errors.Join(flushErr, s.d.Close()); err != nil {
		return fail("Close", "", err)
	}
	return nil
}

// SessionID returns the ID under which a Store keeps token's session, as
// [SessionInfo].ID gives it: a hash of the token, from which the token
// cannot be found. A "your devices" page uses it to tell the visitor's own
// session among those UserSessions lists.
func SessionID(token string) string { return sessionid.Of(token) }
