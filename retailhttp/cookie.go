package retailhttp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"strings"
	"time"
)

// MinSigningKeyLen is the shortest key a [CookieSigner] accepts, in bytes:
// the output size of SHA-256, as RFC 2104 recommends for HMAC-SHA256.
const MinSigningKeyLen = 32

// MaxCookieLen is the longest cookie value [CookieSigner.Sign] produces and
// [CookieSigner.Verify] reads, in bytes. Browsers keep cookies of at most
// 4096 bytes, name and attributes included.
const MaxCookieLen = 4096

// cookieMACDomain starts every signed message, so that a MAC made by this
// format can never be taken for one made by another use of the same key,
// and so that a later format can change it.
const cookieMACDomain = "retail-cookie/1"

// CookieSigner signs cookie values with HMAC-SHA256 and verifies them: the
// book's "signed cookie", where the data travels in the cookie and the
// server only checks that it wrote it. A signed value carries its expiry;
// it cannot be revoked before then, since the server keeps no copy.
//
// A value is base64url(expiry || data) "." base64url(MAC), where expiry is
// the Unix time in milliseconds (8 bytes, big-endian) and the MAC covers a
// format tag, the cookie's name and the decoded payload. Binding the name
// keeps a value signed for one cookie from being accepted as another. The
// data is signed, not encrypted: the client can read it.
//
// Keys rotate: the first key signs, and every key verifies. To rotate, put
// the new key first and keep the old one after it until the cookies it
// signed have expired. A CookieSigner is safe for concurrent use.
type CookieSigner struct {
	keys [][]byte
}

// NewCookieSigner returns a signer that signs with keys[0] and verifies with
// any of keys. It returns an error matching [retail.ErrInvalid] if there is
// no key or a key is shorter than [MinSigningKeyLen]. Keys should come from
// crypto/rand; the signer keeps copies.
func NewCookieSigner(keys ...[]byte) (*CookieSigner, error) {
	if err := checkSigningKeys("NewCookieSigner", "keys", keys); err != nil {
		return nil, err
	}
	s := &CookieSigner{keys: make([][]byte, len(keys))}
	for i, k := range keys {
		s.keys[i] = append([]byte(nil), k...)
	}
	return s, nil
}

// checkSigningKeys returns an error if keys, the argument or option arg of
// op, cannot make a CookieSigner.
func checkSigningKeys(op, arg string, keys [][]byte) error {
	if len(keys) == 0 {
		return invalid(op, arg, "none given")
	}
	for i, k := range keys {
		if len(k) < MinSigningKeyLen {
			return invalid(op, arg+"["+strconv.Itoa(i)+"]", "shorter than "+strconv.Itoa(MinSigningKeyLen)+" bytes")
		}
	}
	return nil
}

var cookieEncoding = base64.RawURLEncoding.Strict()

// Sign returns a value for the cookie called name that carries data until
// expires. It returns an error matching [retail.ErrInvalid] if the value
// would be longer than [MaxCookieLen], or if s was not made by
// [NewCookieSigner] (a zero CookieSigner has no key; it verifies nothing).
func (s *CookieSigner) Sign(name string, data []byte, expires time.Time) (string, error) {
	if len(s.keys) == 0 {
		return "", invalid("CookieSigner.Sign", "signer", "has no key (make one with NewCookieSigner)")
	}
	payload := make([]byte, 8, 8+len(data))
	binary.BigEndian.PutUint64(payload, uint64(expires.UnixMilli()))
	payload = append(payload, data...)
	n := cookieEncoding.EncodedLen(len(payload)) + 1 + cookieEncoding.EncodedLen(sha256.Size)
	if n > MaxCookieLen {
		return "", invalid("CookieSigner.Sign", "data", "makes a value longer than "+strconv.Itoa(MaxCookieLen)+" bytes")
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(cookieEncoding.EncodeToString(payload))
	b.WriteByte('.')
	b.WriteString(cookieEncoding.EncodeToString(cookieMAC(s.keys[0], name, payload)))
	return b.String(), nil
}

// Verify returns the data of a value that Sign made for the cookie called
// name with one of s's keys, if it has not expired by now: a value expires
// at its expiry instant. Any other value (tampered, truncated, signed for
// another name or with an unknown key, expired, or not a signed value at
// all) yields ok == false. MACs are compared in constant time
// (hmac.Equal). The returned data belongs to the caller.
func (s *CookieSigner) Verify(name, value string, now time.Time) (data []byte, ok bool) {
	payload, ok := s.open(name, value)
	if !ok {
		return nil, false
	}
	expires := int64(binary.BigEndian.Uint64(payload))
	if now.UnixMilli() >= expires {
		return nil, false
	}
	return payload[8:], true
}

// open checks value's MAC and returns its payload, expiry included.
func (s *CookieSigner) open(name, value string) (payload []byte, ok bool) {
	if len(value) > MaxCookieLen {
		return nil, false
	}
	// base64's decoder skips CR and LF, even in strict mode: refuse them, so
	// that Sign's value is the only one that verifies.
	if strings.ContainsAny(value, "\r\n") {
		return nil, false
	}
	dot := strings.LastIndexByte(value, '.')
	if dot < 0 {
		return nil, false
	}
	mac, err := cookieEncoding.DecodeString(value[dot+1:])
	if err != nil || len(mac) != sha256.Size {
		return nil, false
	}
	payload, err = cookieEncoding.DecodeString(value[:dot])
	if err != nil || len(payload) < 8 {
		return nil, false
	}
	for _, k := range s.keys {
		if hmac.Equal(mac, cookieMAC(k, name, payload)) {
			return payload, true
		}
	}
	return nil, false
}

// cookieMAC is HMAC-SHA256(key, domain || len(name) || name || payload). The
// length prefix keeps the name and payload from running into each other.
func cookieMAC(key []byte, name string, payload []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(cookieMACDomain))
	m.Write(binary.AppendUvarint(nil, uint64(len(name))))
	m.Write([]byte(name))
	m.Write(payload)
	return m.Sum(nil)
}
