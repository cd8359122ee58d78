package retailhttp

// This file holds the responses of the page middleware (pagemw.go): how a
// handler's response is captured, which responses may be cached, and how a
// cached page is served. The format they are stored in is the retail
// package's.

import (
	"bufio"
	"bytes"
	"iter"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/retailkit/retail"
)

// pageRecorder captures a response so that it can be cached, until it
// turns out not to be cacheable: then it passes what it holds, and
// everything after, to w.
type pageRecorder struct {
	w      http.ResponseWriter
	header http.Header // what the handler sees; snapshot taken at WriteHeader

	wrote  bool        // WriteHeader happened
	status int         // the final status
	sent   http.Header // the header as of WriteHeader
	body   bytes.Buffer
	passed bool // writing through to w: the response will not be cached
}

var (
	_ http.Flusher  = (*pageRecorder)(nil)
	_ http.Hijacker = (*pageRecorder)(nil)
)

func (rec *pageRecorder) Header() http.Header { return rec.header }

func (rec *pageRecorder) WriteHeader(code int) {
	if rec.wrote {
		return
	}
	if code >= 100 && code < 200 {
		// Informational responses (103 Early Hints) are dropped: they
		// cannot be replayed from the cache.
		return
	}
	rec.wrote = true
	rec.status = code
	rec.sent = rec.header.Clone()
	if rec.sent == nil {
		rec.sent = make(http.Header)
	}
	switch {
	case rec.passed:
		// Passed before the header was written (see pass): it goes
		// straight out.
		rec.sendHeader()
	case code != http.StatusOK || !cacheableHeader(rec.sent):
		rec.pass()
	}
}

func (rec *pageRecorder) Write(p []byte) (int, error) {
	if !rec.wrote {
		rec.WriteHeader(http.StatusOK)
	}
	if !rec.passed && rec.body.Len()+len(p) > retail.MaxPageSize {
		rec.pass()
	}
	if rec.passed {
		return rec.w.Write(p)
	}
	return rec.body.Write(p)
}

// Flush makes the response stream: it is passed through and not cached.
func (rec *pageRecorder) Flush() {
	if !rec.wrote {
		rec.WriteHeader(http.StatusOK)
	}
	rec.pass()
	http.NewResponseController(rec.w).Flush()
}

// Hijack takes the connection from the server: the response is the
// handler's own business and is not cached.
func (rec *pageRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	rec.passed = true // nothing the recorder holds may be written now
	return http.NewResponseController(rec.w).Hijack()
}

// SetReadDeadline, SetWriteDeadline and EnableFullDuplex serve
// http.ResponseController; they do not touch the response.
func (rec *pageRecorder) SetReadDeadline(t time.Time) error {
	return http.NewResponseController(rec.w).SetReadDeadline(t)
}

func (rec *pageRecorder) SetWriteDeadline(t time.Time) error {
	return http.NewResponseController(rec.w).SetWriteDeadline(t)
}

func (rec *pageRecorder) EnableFullDuplex() error {
	return http.NewResponseController(rec.w).EnableFullDuplex()
}

// Unwrap gives http.ResponseController the underlying writer for what
// the recorder does not offer itself. Whoever holds it may write around
// the recorder, so the response is passed through and not cached.
// The header set through the recorder so far goes to w first, since what
// is written around the recorder goes out with w's header.
func (rec *pageRecorder) Unwrap() http.ResponseWriter {
	if !rec.wrote && !rec.passed {
		rec.copyHeader()
	}
	rec.pass()
	return rec.w
}

// copyHeader copies the header the handler has set to w, before it is
// written.
func (rec *pageRecorder) copyHeader() {
	h := rec.w.Header()
	maps.Copy(h, rec.header)
	h.Set("X-Cache", CacheMiss)
}

// pass sends what the recorder holds to w and makes it write through from
// now on. Before WriteHeader, it only marks the response: WriteHeader
// sends the header when it comes.
func (rec *pageRecorder) pass() {
	if rec.passed {
		return
	}
	rec.passed = true
	if !rec.wrote {
		return
	}
	rec.sendHeader()
	if rec.body.Len() > 0 {
		rec.w.Write(rec.body.Bytes())
		rec.body.Reset()
	}
}

// sendHeader writes the recorded header and status to w.
func (rec *pageRecorder) sendHeader() {
	h := rec.w.Header()
	maps.Copy(h, rec.sent)
	h.Set("X-Cache", CacheMiss)
	rec.w.WriteHeader(rec.status)
}

// finish passes the response to w when the handler has returned without
// it being cached. A handler that wrote nothing through the recorder gets
// its header on w and the status net/http gives it (200).
func (rec *pageRecorder) finish() {
	if !rec.wrote && !rec.passed {
		rec.copyHeader()
	}
	rec.pass()
	rec.sendTrailers()
}

// sendTrailers copies to w the trailers the handler set after the header
// was written: the values of the keys its Trailer header declared, and
// the keys with http.TrailerPrefix, which net/http sends as trailers.
func (rec *pageRecorder) sendTrailers() {
	if !rec.wrote {
		return // finish copied the whole header
	}
	h := rec.w.Header()
	for _, v := range rec.sent["Trailer"] {
		for k := range strings.SplitSeq(v, ",") {
			if k = http.CanonicalHeaderKey(strings.TrimSpace(k)); k != "" {
				if vs, ok := rec.header[k]; ok {
					h[k] = vs
				}
			}
		}
	}
	for k, vs := range rec.header {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			h[k] = vs
		}
	}
}

// setTrailers reports whether the handler set a trailer by
// http.TrailerPrefix after the header was written.
func (rec *pageRecorder) setTrailers() bool {
	for k := range rec.header {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			return true
		}
	}
	return false
}

// page returns the captured response, or nil if it was passed through,
// never written through the recorder, or has trailers: a handler that
// wrote nothing through it may have written elsewhere (a router adapter's
// own writer), and an empty page cached for it would be served to
// everyone; a cached page has no trailers to replay. It is called once,
// when the handler has returned; a response it does not return goes to w
// whole, with the trailers the handler set.
func (rec *pageRecorder) page() *retail.CachedPage {
	if !rec.wrote || rec.passed || rec.setTrailers() {
		rec.finish()
		return nil
	}
	// Keys in their canonical form, as serve and the rules below compare
	// them: a handler may set a key in the map as it likes ("cache-control"),
	// and net/http sends it so.
	h := make(http.Header, len(rec.sent))
	for k, vs := range rec.sent {
		ck := http.CanonicalHeaderKey(k)
		h[ck] = append(h[ck], vs...)
	}
	for _, k := range hopHeaders {
		h.Del(k) // Content-Length is set anew from the body on every serve
	}
	sniff(h, rec.body.Bytes()) // now, so that every serve of the entry says the same
	return &retail.CachedPage{Status: rec.status, Header: h, Body: rec.body.Bytes()}
}

// cacheableHeader reports whether a 200 response with header h may be
// cached and shared. Keys are compared in any case: net/http sends a key
// set in the map directly as it is spelled there, and clients read it in
// any case.
func cacheableHeader(h http.Header) bool {
	for k, vs := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) || !encodableHeaderKey(k) {
			return false
		}
		switch http.CanonicalHeaderKey(k) {
		case "Set-Cookie", "Vary", "Trailer":
			if len(vs) > 0 {
				return false
			}
		case "Cache-Control":
			for _, v := range vs {
				for name := range directives(v) {
					switch name {
					case "private", "no-store", "no-cache":
						return false
					}
				}
			}
		}
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n") {
				return false
			}
		}
	}
	return true
}

func encodableHeaderKey(k string) bool {
	return k != "" && !strings.ContainsAny(k, ": \t\r\n")
}

// hopHeaders are not cached: they describe one connection or one
// response, and net/http or serve sets them when serving.
var hopHeaders = []string{"Age", "Connection", "Content-Length", "Date", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "X-Cache"}

// serve writes p to w with the given X-Cache value, without the body for
// HEAD requests. A page without a Content-Type (CacheRequest stores none)
// gets the one net/http would sniff from its body, for GET and HEAD alike
// (none if it has a Content-Encoding, as with net/http).
// A stored page (with Stored and Expires) gets Age and Cache-Control by
// now: no-cache, or public for at most publicMaxAge if that is not zero;
// private instead of public, and in front of no-cache, if w's header sets
// a cookie already.
// It answers 304 to a request whose If-None-Match matches its ETag.
func serve(w http.ResponseWriter, r *http.Request, p *retail.CachedPage, xcache string, now time.Time, publicMaxAge time.Duration) {
	h := w.Header()
	// A cookie set around the middleware (the session manager clearing a
	// dead one) is this visitor's: no shared cache may keep the response
	// and hand it to others.
	personal := setsCookie(h)
	stored := !p.Expires.IsZero()
	if stored {
		h.Set("Age", strconv.FormatInt(wholeSeconds(now.Sub(p.Stored)), 10))
		cc := "no-cache"
		if publicMaxAge > 0 {
			cc = "public, max-age=" + strconv.FormatInt(wholeSeconds(min(publicMaxAge, p.Expires.Sub(now))), 10)
		}
		if personal {
			cc = private(cc) // before the 304 below, which carries the cookie too
		}
		h.Set("Cache-Control", cc)
		if etag := firstValue(p.Header, "Etag"); etag != "" {
			h.Set("Etag", etag)
			if etagMatches(r.Header.Values("If-None-Match"), etag) {
				h.Set("X-Cache", xcache)
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
	}
	for k, vs := range p.Header {
		if stored && k == "Cache-Control" {
			continue
		}
		// Other requests may be copying p (a render's page is copied for
		// each request waiting on it), and middleware around this one
		// may append to what w's header holds.
		h[k] = slices.Clone(vs)
	}
	sniff(h, p.Body)
	if personal && !stored {
		makePrivate(h)
	}
	h.Set("Content-Length", strconv.Itoa(len(p.Body)))
	h.Set("X-Cache", xcache)
	w.WriteHeader(p.Status)
	if r.Method != http.MethodHead {
		w.Write(p.Body)
	}
}

// sniff sets in h the Content-Type that net/http would give body: none if h
// has one, or a Content-Encoding (the body's bytes are not the content's),
// or if body is empty.
func sniff(h http.Header, body []byte) {
	if _, ok := h["Content-Type"]; !ok && h.Get("Content-Encoding") == "" && len(body) > 0 {
		h.Set("Content-Type", http.DetectContentType(body))
	}
}

// setsCookie reports whether h sets a cookie, under its key in any case.
func setsCookie(h http.Header) bool {
	for k, vs := range h {
		if len(vs) > 0 && http.CanonicalHeaderKey(k) == "Set-Cookie" {
			return true
		}
	}
	return false
}

// makePrivate makes the Cache-Control of h private (see private), from all
// its values, under its key in any case: a handler may have added several
// (max-age=60, then no-store), each of which still holds.
func makePrivate(h http.Header) {
	var values []string
	for k, vs := range h {
		if http.CanonicalHeaderKey(k) == "Cache-Control" {
			values = append(values, vs...)
			delete(h, k)
		}
	}
	h.Set("Cache-Control", private(strings.Join(values, ", ")))
}

// private returns the Cache-Control cc for a response that only its
// visitor may keep: public made private, or private added.
func private(cc string) string {
	out := []string{"private"}
	for name, d := range directives(cc) {
		switch name {
		case "", "public", "private":
			continue
		}
		out = append(out, d)
	}
	return strings.Join(out, ", ")
}

// directives yields the directives of the Cache-Control value cc: each
// one's name in lower case, and the directive as written, trimmed.
func directives(cc string) iter.Seq2[string, string] {
	return func(yield func(name, directive string) bool) {
		for d := range strings.SplitSeq(cc, ",") {
			d = strings.TrimSpace(d)
			name, _, _ := strings.Cut(d, "=")
			if !yield(strings.ToLower(strings.TrimSpace(name)), d) {
				return
			}
		}
	}
}

// wholeSeconds returns d in whole seconds, rounded down, and 0 if d is
// negative.
func wholeSeconds(d time.Duration) int64 {
	return int64(max(d, 0) / time.Second)
}

func firstValue(h map[string][]string, k string) string {
	if vs := h[k]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// etagMatches reports whether the If-None-Match header values match etag
// by the weak comparison of RFC 9110: the opaque tags are equal, whether
// either is weak or not, or a value is "*".
func etagMatches(ifNoneMatch []string, etag string) bool {
	want := strings.TrimPrefix(etag, "W/")
	for _, v := range ifNoneMatch {
		for {
			v = strings.TrimLeft(v, " \t,")
			if v == "" {
				break
			}
			if v[0] == '*' {
				return true
			}
			tag, rest, ok := scanETag(v)
			if !ok {
				break // a malformed list matches nothing from here on
			}
			if strings.TrimPrefix(tag, "W/") == want {
				return true
			}
			v = rest
		}
	}
	return false
}

// scanETag reads the entity tag at the start of s: an optional W/, then a
// quoted opaque tag without quotes inside. It returns the tag and the rest
// of s.
func scanETag(s string) (tag, rest string, ok bool) {
	start := s
	s = strings.TrimPrefix(s, "W/")
	if len(s) < 2 || s[0] != '"' {
		return "", "", false
	}
	end := strings.IndexByte(s[1:], '"')
	if end < 0 {
		return "", "", false
	}
	n := len(start) - len(s) + end + 2
	return start[:n], start[n:], true
}
