package retail

// This file holds how a page is named in the cache: the keys of
// PageCache (hosts, tracking and known parameters).

import (
	"net/url"
	"path"
	"strings"
)

// DefaultTrackingParams are the query parameters that [PageCacheOptions]
// leaves out of page keys by default: the campaign and click tags of the
// common ad, analytics and mail services. An entry ending in "*" is a
// prefix.
var DefaultTrackingParams = []string{
	"utm_*", "gclid", "dclid", "gbraid", "wbraid", "fbclid", "msclkid",
	"mc_cid", "mc_eid", "_ga", "_gl", "yclid", "igshid", "ttclid", "twclid",
	"li_fat_id",
}

// Key returns the key that the page at u is cached under: "GET ", the
// host (Hosts[0] for any of the Hosts option's names, nothing if Hosts is
// empty), the escaped path ("/" if empty) and, if any are left, "?" and
// the query parameters that tell pages apart ("item" and the Params
// option), sorted by name. Tracking parameters are dropped, and so are
// kept parameters without a value (color= reads as no color). The scheme,
// user information and fragment are not part of the key.
//
// A page has one key, so that a request cannot add a second entry for it
// by spelling its URL differently: the path must be in its canonical
// form, the one [url.URL] gives the decoded path cleaned of ".", ".."
// and repeated slashes, with no trailing slash (except "/"), escaped as
// [url.URL.EscapedPath] escapes it (upper-case hex digits, "!", "(", ")",
// "*" and "'" escaped). Routers decode and often clean the path, so
// /%69tem, /Item/../item, //item and /item/ may reach the handler of
// /item; such spellings have no key and are served but not cached. The
// query needs no such rule: it is decoded and encoded again.
//
// ok is false when the page may not be cached whatever the rule says: u is
// nil, its path is not canonical, its host is not one of Hosts, its query
// does not parse, has a parameter that is neither kept nor a tracking
// parameter, or a kept one repeated, or the key breaks the page key rule
// (for example by being longer than [MaxPageKeyLen]).
func (c *PageCache) Key(u *url.URL) (key string, ok bool) {
	key, canonical, ok := c.key(u)
	if !ok || !canonical {
		return "", false
	}
	return key, true
}

// key returns the key of the page at u as Key does, with the path in its
// canonical form, and whether u spells the path that way. ok is false if
// u has no key whatever its path.
func (c *PageCache) key(u *url.URL) (key string, canonical, ok bool) {
	if u == nil || u.Opaque != "" {
		return "", false, false
	}
	host := ""
	if len(c.opts.Hosts) > 0 {
		if !c.hosts[normalHost(u.Host)] {
			return "", false, false
		}
		host = c.opts.Hosts[0]
	}
	q, ok := c.keptQuery(u.RawQuery)
	if !ok {
		return "", false, false
	}
	p, canonical := canonicalPath(u)
	key = pageKey("GET", host, p, q.Encode())
	if checkPageKey("", key) != nil {
		return "", false, false
	}
	return key, canonical, true
}

// keptQuery parses a raw query and drops its tracking parameters and its
// page parameters without a value: ok is false if it does not parse, has a
// parameter that is neither a page parameter nor a tracking one, or a page
// parameter twice.
func (c *PageCache) keptQuery(raw string) (q url.Values, ok bool) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, false
	}
	for name, values := range q {
		switch {
		case c.params[name]:
			// A handler reads one value (Query().Get): with a second,
			// endless spellings would render its page. An empty one (a
			// form's unfilled field) reads as none, and is left out.
			switch {
			case len(values) != 1:
				return nil, false
			case values[0] == "":
				delete(q, name)
			}
		case c.tracking(name):
			delete(q, name)
		default:
			return nil, false
		}
	}
	return q, true
}

// keyedQuery returns u's query as its page's key spells it (without
// tracking parameters, sorted, escaped anew), and whether that differs from
// u's; if it does not, or u's query has no key, query is "".
func (c *PageCache) keyedQuery(u *url.URL) (query string, differs bool) {
	q, ok := c.keptQuery(u.RawQuery)
	if !ok {
		return "", false
	}
	if query = q.Encode(); query == u.RawQuery {
		return "", false
	}
	return query, true
}

// canonicalPath returns the canonical form of u's path (see
// [PageCache.Key]) and whether u's escaped path is that form. An empty
// path is "/".
func canonicalPath(u *url.URL) (p string, canonical bool) {
	escaped := u.EscapedPath()
	if escaped == "" {
		escaped = "/"
	}
	// path.Clean also drops a trailing slash.
	p = (&url.URL{Path: path.Clean("/" + u.Path)}).EscapedPath()
	return p, escaped == p
}

// tracking reports whether the query parameter name is a tracking
// parameter.
func (c *PageCache) tracking(name string) bool {
	for _, t := range c.opts.TrackingParams {
		if prefix, ok := strings.CutSuffix(t, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		} else if name == t {
			return true
		}
	}
	return false
}

// normalHost returns host lowercased, without the default ports of HTTP
// and HTTPS and without a trailing dot, so that the names a browser may
// send for one site compare equal.
func normalHost(host string) string {
	host = strings.ToLower(host)
	for _, port := range []string{":80", ":443"} {
		if h, ok := strings.CutSuffix(host, port); ok {
			host = h
			break
		}
	}
	return strings.TrimSuffix(host, ".")
}

// pageKey joins the parts of a page key.
func pageKey(method, host, path, query string) string {
	var b strings.Builder
	b.WriteString(method)
	b.WriteByte(' ')
	b.WriteString(host)
	if path != "" {
		b.WriteString(path)
	} else {
		b.WriteByte('/')
	}
	if query != "" {
		b.WriteByte('?')
		b.WriteString(query)
	}
	return b.String()
}
