package retailhttp

// This file holds the responses of the page middleware (pagemw.go): how a
// handler's response is captured, which responses may be cached, and how a
// cached page is served. The format they are stored in is the retail
// package's.

import (
	"bytes"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

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
	if code != http.StatusOK || !cacheableHeader(rec.sent) {
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
	if f, ok := rec.w.(http.Flusher); ok {
		f.Flush()
	}
}

// pass sends what the recorder holds to w and makes it write through from
// now on.
func (rec *pageRecorder) pass() {
	if rec.passed {
		return
	}
	rec.passed = true
	h := rec.w.Header()
	maps.Copy(h, rec.sent)
	h.Set("X-Cache", CacheMiss)
	rec.w.WriteHeader(rec.status)
	if rec.body.Len() > 0 {
		rec.w.Write(rec.body.Bytes())
		rec.body.Reset()
	}
}

// page returns the captured response, or nil if it was passed through. It
// is called once, when the handler has returned.
func (rec *pageRecorder) page() *retail.CachedPage {
	if !rec.wrote {
		rec.WriteHeader(http.StatusOK) // a handler that writes nothing sends 200
	}
	if rec.passed {
		return nil
	}
	h := rec.sent
	for _, k := range hopHeaders {
		h.Del(k) // Content-Length is set anew from the body on every serve
	}
	if _, ok := h["Content-Type"]; !ok {
		// What net/http would sniff, fixed now so that every serve of
		// the entry says the same.
		h.Set("Content-Type", http.DetectContentType(rec.body.Bytes()))
	}
	return &retail.CachedPage{Status: rec.status, Header: h, Body: rec.body.Bytes()}
}

// cacheableHeader reports whether a 200 response with header h may be
// cached and shared.
func cacheableHeader(h http.Header) bool {
	if len(h["Set-Cookie"]) > 0 || len(h["Vary"]) > 0 || len(h["Trailer"]) > 0 {
		return false
	}
	for _, v := range h["Cache-Control"] {
		for d := range strings.SplitSeq(v, ",") {
			name, _, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "private", "no-store", "no-cache":
				return false
			}
		}
	}
	for k, vs := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) || !encodableHeaderKey(k) {
			return false
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
// response, and net/http sets them when serving.
var hopHeaders = []string{"Connection", "Content-Length", "Date", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "X-Cache"}

// serve writes p to w with the given X-Cache value, without the body for
// HEAD requests. A page without a Content-Type (CacheRequest stores none)
// gets the one net/http would sniff from its body, for GET and HEAD alike.
func serve(w http.ResponseWriter, r *http.Request, p *retail.CachedPage, xcache string) {
	h := w.Header()
	for k, vs := range p.Header {
		// Other requests may be copying p (a render's page is copied for
		// each request waiting on it), and middleware around this one
		// may append to what w's header holds.
		h[k] = slices.Clone(vs)
	}
	if _, ok := h["Content-Type"]; !ok {
		h.Set("Content-Type", http.DetectContentType(p.Body))
	}
	h.Set("Content-Length", strconv.Itoa(len(p.Body)))
	h.Set("X-Cache", xcache)
	w.WriteHeader(p.Status)
	if r.Method != http.MethodHead {
		w.Write(p.Body)
	}
}
