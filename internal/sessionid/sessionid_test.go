package sessionid

import (
	"strings"
	"testing"
)

func TestOf_IsShortStableAndHidesTheToken(t *testing.T) {
	token := "bfa5c3d1e0f24a6b9c8d7e6f5a4b3c2d"
	id := Of(token)
	if len(id) != Len {
		t.Errorf("len(Of(%q)) = %d, want %d", token, len(id), Len)
	}
	if Of(token) != id {
		t.Errorf("Of(%q) changed between calls", token)
	}
	if strings.Contains(id, token[:8]) || Of(id) == id {
		t.Errorf("Of(%q) = %q, want a hash that names no session when hashed again", token, id)
	}
	// Pinned: IDs are part of the data layout, shared by every process.
	if got, want := Of("tok-1"), "ZdzxbqPfpJBpYoCJ60p1SA"; got != want {
		t.Errorf("Of(%q) = %q, want %q", "tok-1", got, want)
	}
	if strings.ContainsAny(id, "{}%:/+=") {
		t.Errorf("Of(%q) = %q, want only base64url characters", token, id)
	}
}
