// Package hooks lets the packages of this module reach what package retail
// keeps for them alone, without exporting a method that one caller would
// use. Package retail sets each hook when it is initialized, so a package
// that imports retail finds them set.
package hooks

import "net/url"

// CountPageBypass counts one request in the Stats of the Store under cache,
// a *retail.PageCache, as a page bypass (Stats.PageBypasses): a request the
// retailhttp page middleware answered without consulting the cache.
var CountPageBypass func(cache any)

// KeyedQuery returns the query of u as the page key that cache, a
// *retail.PageCache, gives u spells it, and whether that differs from u's;
// if it does not, or u's query has no key, query is "".
var KeyedQuery func(cache any, u *url.URL) (query string, differs bool)
