package rueidisbackend_test

import (
	"slices"
	"testing"

	"github.com/retailkit/retail/backend/rueidisbackend"
)

// TestRefreshSession_ViewOverAStaleReadIsDecidedOnTheServer: A serves a
// session from its table, which has not heard (A is deaf to the server's
// messages) that B changed it since. A's visit, decided from what A read,
// finds the session holding something else, writes nothing over it, and is
// decided on the server instead: no item is lost, and the session's new
// user is answered.
func TestRefreshSession_ViewOverAStaleReadIsDecidedOnTheServer(t *testing.T) {
	t.Run("RecentItems", func(t *testing.T) {
		a, b := tableProcesses(t, "tok")
		rueidisbackend.DeafToSessions(a)
		if _, ok, err := b.RefreshSession(bg, "tok", "kettle"); !ok || err != nil {
			t.Fatalf("B: RefreshSession = %v, %v; want a live session", ok, err)
		}
		if user, ok, err := a.RefreshSession(bg, "tok", "teapot"); user != "alice" || !ok || err != nil {
			t.Fatalf("A: RefreshSession = %q, %v, %v; want alice", user, ok, err)
		}
		want := []string{"teapot", "kettle"}
		if got, err := b.RecentItems(bg, "tok"); err != nil || !slices.Equal(got, want) {
			t.Errorf("RecentItems = %q, %v; want %q: a view was lost", got, err, want)
		}
	})
	t.Run("Login", func(t *testing.T) {
		a, b := tableProcesses(t, "tok")
		rueidisbackend.DeafToSessions(a)
		if err := b.UpdateToken(bg, "tok", "bob", ""); err != nil {
			t.Fatal(err)
		}
		if user, ok, err := a.RefreshSession(bg, "tok", "teapot"); user != "bob" || !ok || err != nil {
			t.Fatalf("A: RefreshSession = %q, %v, %v; want bob, the session's user now", user, ok, err)
		}
		want := []string{"teapot"}
		if got, err := b.RecentItems(bg, "tok"); err != nil || !slices.Equal(got, want) {
			t.Errorf("RecentItems = %q, %v; want %q", got, err, want)
		}
	})
}
