// Package sessionid turns a session's token, the secret a visitor's cookie
// carries, into the ID the session is stored under. Stores keep only IDs:
// whoever reads a store's data (a replica, a backup, MONITOR, SCAN) learns
// no token, and an ID sent as a cookie names no session, since it is hashed
// again.
package sessionid

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// Len is the length of every ID: 16 bytes of SHA-256, in unpadded
// base64url.
const Len = 22

// Of returns the ID of token: the first 16 bytes of its SHA-256, in
// unpadded base64url (letters, digits, '-' and '_'). Tokens are meant to be
// 128 random bits or more, so 128 bits of hash keep IDs as unique as the
// tokens and make finding a token from its ID as hard as guessing one.
func Of(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// Valid reports whether id has the form of an ID: Len base64url
// characters that encode 16 bytes exactly (the last character's low four
// bits, beyond the 128 of an ID, are zero, as Of writes them).
func Valid(id string) bool {
	if len(id) != Len {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	// The last character carries 2 bits of the hash and 4 of padding.
	return strings.IndexByte(canonicalLast, id[Len-1]) >= 0
}

// canonicalLast are the base64url characters whose low four bits are
// zero: those that can end an ID.
const canonicalLast = "AQgw"
