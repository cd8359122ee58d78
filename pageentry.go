package retail

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CachedPage is a page as [PageCache] keeps it: a response's status, header
// and body. Header has the type of net/http's Header (convert with
// http.Header(p.Header)); keys are expected in canonical form.
type CachedPage struct {
	Status int                 // an HTTP status; 200 for the pages CacheRequest caches
	Header map[string][]string // may be nil
	Body   []byte

	// Stored and Expires are when the page was cached and when it stops
	// being served, by the PageCache's clock, at millisecond resolution.
	// [PageCache.Fetch] sets them when it stores a page; they are zero on
	// a page that was not stored.
	Stored, Expires time.Time
}

// clone returns a deep copy of p, or nil if p is nil.
func (p *CachedPage) clone() *CachedPage {
	if p == nil {
		return nil
	}
	h := make(map[string][]string, len(p.Header))
	for k, vs := range p.Header {
		h[k] = slices.Clone(vs)
	}
	return &CachedPage{Status: p.Status, Header: h, Body: bytes.Clone(p.Body), Stored: p.Stored, Expires: p.Expires}
}

// stamped returns a copy of p to store at stored until expires, with a
// strong ETag header computed from its body unless p has one. The body
// and header values are shared with p.
func (p *CachedPage) stamped(stored, expires time.Time) *CachedPage {
	q := *p
	q.Header = maps.Clone(p.Header)
	if q.Header == nil {
		q.Header = make(map[string][]string, 1)
	}
	if _, ok := q.Header["Etag"]; !ok {
		q.Header["Etag"] = []string{bodyETag(p.Body)}
	}
	q.Stored = stored.Truncate(time.Millisecond)
	q.Expires = expires.Truncate(time.Millisecond)
	return &q
}

// bodyETag returns a strong entity tag for body: the quoted base64url of
// the first 16 bytes of its SHA-256, so that equal bodies get equal tags
// whichever server rendered them.
func bodyETag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

// pageFormat starts every stored entry. The format is
//
//	retail-page/2 STATUS STORED_MS EXPIRES_MS\n
//	Key: value\n        (one line a value, keys sorted)
//	\n
//	body
//
// where STORED_MS and EXPIRES_MS are Unix times in milliseconds. A later
// format changes the version, so that old entries miss.
const pageFormat = "retail-page/2 "

// encode returns p's entry, or ok == false if p cannot be stored: a status
// outside 200..599, or a header line that would not read back the same.
func (p *CachedPage) encode() (data []byte, ok bool) {
	if p.Status < 200 || p.Status > 599 {
		return nil, false
	}
	var b bytes.Buffer
	b.Grow(len(p.Body) + 256)
	b.WriteString(pageFormat)
	b.WriteString(strconv.Itoa(p.Status))
	b.WriteByte(' ')
	b.WriteString(strconv.FormatInt(p.Stored.UnixMilli(), 10))
	b.WriteByte(' ')
	b.WriteString(strconv.FormatInt(p.Expires.UnixMilli(), 10))
	b.WriteByte('\n')
	for _, k := range slices.Sorted(maps.Keys(p.Header)) {
		if !headerKeyOK(k) {
			return nil, false
		}
		for _, v := range p.Header[k] {
			if strings.ContainsAny(v, "\r\n") {
				return nil, false
			}
			b.WriteString(k)
			b.WriteString(": ")
			b.WriteString(v)
			b.WriteByte('\n')
		}
	}
	b.WriteByte('\n')
	b.Write(p.Body)
	return b.Bytes(), true
}

// headerKeyOK reports whether k can be a header line's key in an entry.
func headerKeyOK(k string) bool {
	return k != "" && !strings.ContainsAny(k, ": \t\r\n")
}

// decodePage reads an entry that encode made; ok is false for anything
// else.
func decodePage(data []byte) (*CachedPage, bool) {
	rest, ok := bytes.CutPrefix(data, []byte(pageFormat))
	if !ok {
		return nil, false
	}
	line, rest, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok {
		return nil, false
	}
	fields := strings.Split(string(line), " ")
	if len(fields) != 3 || len(fields[0]) != 3 {
		return nil, false
	}
	status, err := strconv.Atoi(fields[0])
	if err != nil || status < 200 || status > 599 {
		return nil, false
	}
	stored, ok := decodeMilli(fields[1])
	if !ok {
		return nil, false
	}
	expires, ok := decodeMilli(fields[2])
	if !ok {
		return nil, false
	}
	p := &CachedPage{Status: status, Header: make(map[string][]string), Stored: stored, Expires: expires}
	for {
		line, rest, ok = bytes.Cut(rest, []byte{'\n'})
		if !ok {
			return nil, false
		}
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(": "))
		if !ok || !headerKeyOK(string(k)) || bytes.IndexByte(v, '\r') >= 0 {
			return nil, false
		}
		p.Header[string(k)] = append(p.Header[string(k)], string(v))
	}
	p.Body = rest
	return p, true
}

// decodeMilli reads a time that encode wrote, in its one spelling.
func decodeMilli(s string) (time.Time, bool) {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(ms, 10) != s {
		return time.Time{}, false
	}
	return time.UnixMilli(ms).UTC(), true
}
