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

// Valid takes every ID Of makes, and no other string of Len base64url
// characters: the last one of an ID carries two bits of the hash and four
// zero bits of padding, so "…B" or "…_" is no ID.
func TestValid_TakesIDsOnly(t *testing.T) {
	for i := range 10000 {
		token := strings.Repeat("t", i%40) + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		if id := Of(token); !Valid(id) {
			t.Fatalf("Valid(Of(%q)) = false for %q", token, id)
		}
	}
	for _, id := range []string{
		"AAAAAAAAAAAAAAAAAAAAAB", "AAAAAAAAAAAAAAAAAAAAA_", "ZdzxbqPfpJBpYoCJ60p1SB", // not canonical
		"ZdzxbqPfpJBpYoCJ60p1S", "ZdzxbqPfpJBpYoCJ60p1SAA", "ZdzxbqPfpJBpYoCJ60p1+A", "", // length, alphabet
	} {
		if Valid(id) {
			t.Errorf("Valid(%q) = true, want false", id)
		}
	}
	for _, id := range []string{"AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg", "AAAAAAAAAAAAAAAAAAAAAw"} {
		if !Valid(id) {
			t.Errorf("Valid(%q) = false, want true", id)
		}
	}
}
