package conformance

import (
	"context"
	"fmt"
	"strings"

	"github.com/retailkit/retail"
)

// Log out everywhere holds: LogoutUser ends every session of the user that
// was live when it began, and any that a RenewSession or StartSession for
// the user running at the same time creates. A store that reads the user's
// index once, and deletes what it lists, loses this race to a RenewSession
// that indexes the new token after the read: the session lives on under
// its new token, after a password change that was meant to end it.
//
// The suite's clock stands still, so every login of a trial falls in the
// millisecond in which its LogoutUser began: LogoutUser must end it
// whichever of the two reaches the store first (see Sessions.LogoutUser).

var logoutUserTests = []behaviour{
	{name: "LogoutUser_HoldsAgainstConcurrentRenewSession", test: logoutUserHolds(0)},
	{name: "LogoutUser_HoldsAgainstConcurrentLoginRenewal", test: logoutUserHolds(1)},
	{name: "LogoutUser_HoldsAgainstConcurrentGuestLogin", test: logoutUserHolds(2)},
	{name: "LogoutUser_HoldsAgainstConcurrentStartSession", test: logoutUserHolds(3)},
}

// logoutUserRacer is a call that may give user a session under newToken,
// raced against LogoutUser(user). Before the race, token holds a session
// of user, or of a guest if guest is set.
type logoutUserRacer struct {
	name  string
	guest bool
	call  func(ctx context.Context, s retail.Store, token, newToken, user string) error
}

var logoutUserRacers = []logoutUserRacer{
	{name: "RenewSession (keeping the user)", call: func(ctx context.Context, s retail.Store, token, newToken, _ string) error {
		_, err := s.RenewSession(ctx, token, newToken, "")
		return err
	}},
	{name: "RenewSession (a login as the same user)", call: func(ctx context.Context, s retail.Store, token, newToken, user string) error {
		_, err := s.RenewSession(ctx, token, newToken, user)
		return err
	}},
	{name: "RenewSession (a guest's login)", guest: true, call: func(ctx context.Context, s retail.Store, token, newToken, user string) error {
		_, err := s.RenewSession(ctx, token, newToken, user)
		return err
	}},
	{name: "StartSession", call: func(ctx context.Context, s retail.Store, _, newToken, user string) error {
		_, err := s.StartSession(ctx, newToken, user)
		return err
	}},
}

func logoutUserHolds(i int) func(h *harness) {
	return func(h *harness) { raceLogoutUser(h, logoutUserRacers[i]) }
}

// raceLogoutUser runs h.trials trials, logoutBatch at once, each with a
// user of its own: start a session for the user (or a guest), then race
// LogoutUser against racer. After both return, neither token may have a
// session, cart or value, and the user may list none.
func raceLogoutUser(h *harness, racer logoutUserRacer) {
	var (
		ctx, s, t = h.ctx, h.s, h.t
		survived  failures // trials that left the user a session
	)
	trials := inBatches(t, h.trials, func(i int) {
		user := fmt.Sprintf("everywhere-%05d", i)
		token, newToken := fmt.Sprintf("lu-old-%05d", i), fmt.Sprintf("lu-new-%05d", i)
		owner := user
		if racer.guest {
			owner = ""
		}
		if created, err := s.StartSession(ctx, token, owner); err != nil || !created {
			t.Errorf("StartSession(%q, %q) = %v, %v, want true, nil", token, owner, created, err)
			return
		}
		if err := s.AddToCart(ctx, token, "item-x", 1); err != nil {
			t.Errorf("AddToCart(%q) = %v, want nil", token, err)
			return
		}
		var logoutErr, rErr error
		race(func() { _, logoutErr = s.LogoutUser(ctx, user) },
			func() { rErr = racer.call(ctx, s, token, newToken, user) })
		if logoutErr != nil || rErr != nil {
			t.Errorf("LogoutUser(%q) = %v and concurrent %s = %v, want nil and nil", user, logoutErr, racer.name, rErr)
			return
		}
		var left []string
		for _, tok := range []string{token, newToken} {
			if racer.guest && tok == token {
				continue // the guest's session is not the user's; the renewal moved it anyway
			}
			l, err := leftOf(ctx, s, tok)
			if err != nil {
				t.Error(err)
				return
			}
			if l != "" {
				left = append(left, l)
			}
		}
		infos, err := s.UserSessions(ctx, user)
		if err != nil {
			t.Errorf("UserSessions(%q) = %v, want nil error", user, err)
			return
		}
		if len(infos) != 0 {
			left = append(left, fmt.Sprintf("UserSessions(%q) lists %d sessions, want none", user, len(infos)))
		}
		if len(left) != 0 {
			survived.add(strings.Join(left, "; "))
		}
	}, nil)
	if n, first := survived.result(); n != 0 {
		t.Errorf("LogoutUser did not hold against a concurrent %s: %d of %d trials left the user a session (0 allowed); the first: %s",
			racer.name, n, trials, first)
		return
	}
	t.Logf("LogoutUser against %s: %d trials, 0 survived", racer.name, trials)
}
