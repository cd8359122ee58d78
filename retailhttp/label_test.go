package retailhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/retailhttp"
)

// labels returns the labels of user's sessions, oldest first.
func (r *rememberRig) labels(user string) []string {
	r.t.Helper()
	infos, err := r.s.UserSessions(context.Background(), user)
	if err != nil {
		r.t.Fatalf("UserSessions(%q) = %v", user, err)
	}
	var out []string
	for _, in := range infos {
		out = append(out, in.Label)
	}
	return out
}

func TestLoginWith_LabelNamesTheSession(t *testing.T) {
	r := newRememberRig(t)
	// A login without a session starts one with the label.
	r.opts = retailhttp.LoginOptions{Label: "Firefox on Linux"}
	c := r.do("/login?user=alice", nil)
	if got := r.labels("alice"); len(got) != 1 || got[0] != "Firefox on Linux" {
		t.Fatalf("labels after a login = %q, want [Firefox on Linux]", got)
	}
	// Renew keeps it; a login without one keeps it too.
	c = r.do("/renew", c)
	r.opts = retailhttp.LoginOptions{Lifetime: day}
	c = r.do("/login?user=alice", c)
	if got := r.labels("alice"); len(got) != 1 || got[0] != "Firefox on Linux" {
		t.Errorf("labels after Renew and a login without a label = %q, want [Firefox on Linux]", got)
	}
	// A login with a label, renewing the session it came with, gives it
	// the new one.
	r.opts = retailhttp.LoginOptions{Label: "Chrome on Android"}
	r.do("/login?user=alice", c)
	if got := r.labels("alice"); len(got) != 1 || got[0] != "Chrome on Android" {
		t.Errorf("labels after a login with another label = %q, want [Chrome on Android]", got)
	}
}

func TestLoginWith_BadLabelLogsNothingIn(t *testing.T) {
	r := newRememberRig(t)
	for _, label := range []string{strings.Repeat("x", retail.MaxLabelLen+1), "a\nb", "\xff"} {
		r.opts = retailhttp.LoginOptions{Label: label}
		rec := httptest.NewRecorder()
		r.h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/login?user=alice", nil))
		resp := rec.Result()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("login with Label %q: status %d, want 400 (an error matching ErrInvalid)", label, resp.StatusCode)
		}
		if len(resp.Cookies()) != 0 {
			t.Errorf("login with Label %q set cookies %q, want none", label, resp.Header["Set-Cookie"])
		}
	}
	if got := r.labels("alice"); len(got) != 0 {
		t.Errorf("alice's sessions after bad logins: %q, want none", got)
	}
}
