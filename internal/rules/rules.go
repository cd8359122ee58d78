// Package rules holds the input rules that the retail package applies to
// every Store call and that its HTTP package needs too (to tell a usable item
// or user from junk before calling a Store). The retail package documents
// them (doc.go, "Input rules") and re-exports the limits.
package rules

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Limits; see the retail package's constants of the same names.
const (
	MaxIDLen      = 256
	MaxUserLen    = 1024
	MaxPageKeyLen = 2048
	MaxLabelLen   = 64
)

// ID returns why s is not a valid token, item or row id, or "" if it is:
// 1..MaxIDLen bytes, no ASCII control characters.
func ID(s string) string { return text(s, MaxIDLen) }

// PageKey returns why s is not a valid page key, or "" if it is:
// 1..MaxPageKeyLen bytes, no ASCII control characters.
func PageKey(s string) string { return text(s, MaxPageKeyLen) }

// User returns why s is not a valid user, or "" if it is: 1..MaxUserLen
// bytes of valid UTF-8.
func User(s string) string {
	switch {
	case s == "":
		return "empty"
	case len(s) > MaxUserLen:
		return "longer than " + strconv.Itoa(MaxUserLen) + " bytes"
	case !utf8.ValidString(s):
		return "not valid UTF-8"
	}
	return ""
}

func text(s string, maxLen int) string {
	switch {
	case s == "":
		return "empty"
	case len(s) > maxLen:
		return "longer than " + strconv.Itoa(maxLen) + " bytes"
	case hasControl(s):
		return "contains a control character"
	}
	return ""
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}

// Label returns why s is not a valid session label, or "" if it is:
// 0..MaxLabelLen bytes of valid, printable UTF-8 (spaces included).
func Label(s string) string {
	switch {
	case len(s) > MaxLabelLen:
		return "longer than " + strconv.Itoa(MaxLabelLen) + " bytes"
	case !utf8.ValidString(s):
		return "not valid UTF-8"
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return "contains a character that is not printable"
		}
	}
	return ""
}
