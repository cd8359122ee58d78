package retailhttp_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/retailhttp"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, retailhttp.MinSigningKeyLen) }

func newSigner(t *testing.T, keys ...[]byte) *retailhttp.CookieSigner {
	t.Helper()
	s, err := retailhttp.NewCookieSigner(keys...)
	if err != nil {
		t.Fatalf("NewCookieSigner = %v", err)
	}
	return s
}

func sign(t *testing.T, s *retailhttp.CookieSigner, name, data string, expires time.Time) string {
	t.Helper()
	v, err := s.Sign(name, []byte(data), expires)
	if err != nil {
		t.Fatalf("Sign(%q, %q) = %v", name, data, err)
	}
	return v
}

func TestCookieSigner_VerifiesWhatItSigned(t *testing.T) {
	s := newSigner(t, key(1))
	for _, data := range []string{"", "alice", "x.y.z", strings.Repeat("ü", 500)} {
		v := sign(t, s, "session", data, epoch.Add(time.Hour))
		got, ok := s.Verify("session", v, epoch)
		if !ok || string(got) != data {
			t.Errorf("Verify(Sign(%q)) = %q, %v, want %q, true", data, got, ok, data)
		}
	}
}

func TestCookieSigner_RejectsTamperedValues(t *testing.T) {
	s := newSigner(t, key(1))
	v := sign(t, s, "session", "alice", epoch.Add(time.Hour))
	// Change every character in turn: none of the changed values may verify.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."
	for i := range len(v) {
		for _, c := range []byte(alphabet) {
			if c == v[i] {
				continue
			}
			tampered := v[:i] + string(c) + v[i+1:]
			if data, ok := s.Verify("session", tampered, epoch); ok {
				t.Fatalf("Verify(%q with byte %d set to %q) = %q, true, want false", v, i, c, data)
			}
		}
	}
	// A valid MAC moved onto other data does not verify either.
	other := sign(t, s, "session", "mallory", epoch.Add(time.Hour))
	payload, _, _ := strings.Cut(other, ".")
	_, mac, _ := strings.Cut(v, ".")
	if data, ok := s.Verify("session", payload+"."+mac, epoch); ok {
		t.Errorf("Verify(other payload, alice's MAC) = %q, true, want false", data)
	}
}

func TestCookieSigner_RejectsExpiredValues(t *testing.T) {
	s := newSigner(t, key(1))
	expires := epoch.Add(time.Hour)
	v := sign(t, s, "session", "alice", expires)
	for _, tc := range []struct {
		now  time.Time
		want bool
	}{
		{expires.Add(-time.Millisecond), true},
		{expires, false},
		{expires.Add(24 * time.Hour), false},
	} {
		if _, ok := s.Verify("session", v, tc.now); ok != tc.want {
			t.Errorf("Verify(at expiry%+v) ok = %v, want %v", tc.now.Sub(expires), ok, tc.want)
		}
	}
}

func TestCookieSigner_RotatesKeys(t *testing.T) {
	oldKey, newKey := key(1), key(2)
	before := newSigner(t, oldKey)
	after := newSigner(t, newKey, oldKey)
	expires := epoch.Add(time.Hour)

	oldValue := sign(t, before, "session", "alice", expires)
	if data, ok := after.Verify("session", oldValue, epoch); !ok || string(data) != "alice" {
		t.Errorf("rotated Verify(value signed with the old key) = %q, %v, want %q, true", data, ok, "alice")
	}
	newValue := sign(t, after, "session", "alice", expires)
	if _, ok := before.Verify("session", newValue, epoch); ok {
		t.Errorf("old-key Verify(value signed after rotation) = true, want false: the new key must sign")
	}
	if _, ok := newSigner(t, newKey).Verify("session", newValue, epoch); !ok {
		t.Errorf("new-key Verify(value signed after rotation) = false, want true")
	}
	retired := newSigner(t, newKey)
	if _, ok := retired.Verify("session", oldValue, epoch); ok {
		t.Errorf("Verify(value of a retired key) = true, want false")
	}
}

func TestCookieSigner_BindsTheCookieName(t *testing.T) {
	s := newSigner(t, key(1))
	v := sign(t, s, "session", "alice", epoch.Add(time.Hour))
	if _, ok := s.Verify("admin", v, epoch); ok {
		t.Errorf(`Verify("admin", value signed for "session") = true, want false`)
	}
}

func TestCookieSigner_RejectsGarbage(t *testing.T) {
	s := newSigner(t, key(1))
	valid := sign(t, s, "session", "alice", epoch.Add(time.Hour))
	payload, mac, _ := strings.Cut(valid, ".")
	for _, v := range []string{
		"",
		".",
		"alice",
		payload,
		payload + ".",
		"." + mac,
		payload + "." + mac[:len(mac)-1], // MAC one character short
		payload + "." + mac + "AA",       // MAC too long
		payload + "=." + mac,             // padding is not part of the format
		"AAAA." + mac,                    // payload shorter than the expiry
		payload + "." + mac + "." + mac,  // extra field
		"!!!!." + mac,                    // not base64
		strings.Repeat("A", retailhttp.MaxCookieLen+1),
		strings.Repeat("A", retailhttp.MaxCookieLen-44) + "." + mac, // long, wrong MAC
	} {
		if data, ok := s.Verify("session", v, epoch); ok {
			t.Errorf("Verify(%.40q...) = %q, true, want false", v, data)
		}
	}
}

func TestCookieSigner_SignRejectsOverlongData(t *testing.T) {
	s := newSigner(t, key(1))
	_, err := s.Sign("session", make([]byte, retailhttp.MaxCookieLen), epoch)
	if !errors.Is(err, retail.ErrInvalid) {
		t.Errorf("Sign(%d bytes) = %v, want %v", retailhttp.MaxCookieLen, err, retail.ErrInvalid)
	}
}

func TestNewCookieSigner_RejectsMissingOrShortKeys(t *testing.T) {
	for _, keys := range [][][]byte{
		nil,
		{make([]byte, retailhttp.MinSigningKeyLen-1)},
		{key(1), []byte("short")},
	} {
		if _, err := retailhttp.NewCookieSigner(keys...); !errors.Is(err, retail.ErrInvalid) {
			t.Errorf("NewCookieSigner(%d keys) = %v, want %v", len(keys), err, retail.ErrInvalid)
		}
	}
}

func TestNewCookieSigner_CopiesKeys(t *testing.T) {
	k := key(1)
	s := newSigner(t, k)
	v := sign(t, s, "session", "alice", epoch.Add(time.Hour))
	k[0] ^= 0xff
	if _, ok := s.Verify("session", v, epoch); !ok {
		t.Errorf("Verify after the caller changed its key slice = false, want true")
	}
}

// FuzzCookieSigner_Verify checks that Verify never panics and accepts
// nothing that Sign did not make.
func FuzzCookieSigner_Verify(f *testing.F) {
	s, err := retailhttp.NewCookieSigner(key(1))
	if err != nil {
		f.Fatal(err)
	}
	valid, _ := s.Sign("session", []byte("alice"), epoch.Add(time.Hour))
	for _, seed := range []string{"", ".", valid, valid + "x", "AAAAAAAAAAA.AAAA"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if data, ok := s.Verify("session", v, epoch); ok && v != valid {
			t.Errorf("Verify(%q) = %q, true, want false", v, data)
		}
	})
}
