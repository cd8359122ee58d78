package retail

import (
	"bytes"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// CachedPage is a page as [PageCache] keeps it: a response's status, header
// and body. Header has the type of net/http's Header (convert with
// http.Header(p.Header)); keys are expected in canonical form.
type CachedPage struct {
	Status int                 // an HTTP status; 200 for the pages CacheRequest caches
	Header map[string][]string // may be nil
	Body   []byte
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
	return &CachedPage{Status: p.Status, Header: h, Body: bytes.Clone(p.Body)}
}

// pageFormat starts every stored entry. The format is
//
//	retail-page/1 STATUS\n
//	Key: value\n        (one line a value, keys sorted)
//	\n
//	body
//
// A later format changes the version, so that old entries miss.
const pageFormat = "retail-page/1 "

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
	if !ok || len(line) != 3 {
		return nil, false
	}
	status, err := strconv.Atoi(string(line))
	if err != nil || status < 200 || status > 599 {
		return nil, false
	}
	p := &CachedPage{Status: status, Header: make(map[string][]string)}
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
