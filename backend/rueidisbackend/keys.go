package rueidisbackend

import "strings"

// keys builds every key name the Store uses. A session is one key, tagged
// {TOKEN}; a user's session index has its own tag, {USER}; the shared sets,
// the session index and the view counts, carry fixed tags.
type keys struct {
	prefix string
	// The keys of the session index and of the view counts, built once.
	indexKey, viewedKey string
}

// newKeys returns the key names of a Store with prefix.
func newKeys(prefix string) keys {
	return keys{prefix: prefix, indexKey: prefix + "{sessions}:seen", viewedKey: prefix + "{views}:viewed"}
}

// tag escapes s for use inside a hash tag. Redis ends a tag at the first
// "}", so "}" must not appear inside; "%" is escaped too so that the mapping
// stays one-to-one. Tokens from crypto/rand in hex or base64url pass
// through unchanged.
func tag(s string) string {
	if strings.IndexByte(s, '%') < 0 && strings.IndexByte(s, '}') < 0 {
		return s // the common case, checked on every call that names a session
	}
	return strings.NewReplacer("%", "%25", "}", "%7D").Replace(s)
}

// session is the key of token's session, a hash (see state.go).
func (k keys) session(token string) string { return k.prefix + "session:{" + tag(token) + "}" }

// index is the session index, the sorted set token -> last-seen stamp
// that cleaning reads, shared by every session on a slot of its own.
func (k keys) index() string { return k.indexKey }

// user is the sorted set token -> created stamp of the sessions logged
// in as user, on a slot of its own.
func (k keys) user(user string) string { return k.prefix + "user:{" + tag(user) + "}" }

// viewed is the view counts: the sorted set item -> minus its view count,
// so that ZRANK gives rank 0 to the most viewed and breaks ties by name
// ascending, on a slot of its own.
func (k keys) viewed() string { return k.viewedKey }

// viewFlushes is the number of the last flush of views that the Store
// named process counted (see driver.ViewFlush), on the counts' slot.
func (k keys) viewFlushes(process string) string { return k.prefix + "{views}:flushed:" + process }

func (k keys) page(key string) string { return k.prefix + "page:" + key }
func (k keys) row(row string) string  { return k.prefix + "row:" + row }

// schedule, delay and dropped share the {rows} slot so one script claims
// due rows. dropped is the set of the rows unscheduled whose copies may
// not be deleted yet.
func (k keys) schedule() string { return k.prefix + "{rows}:schedule" }
func (k keys) delay() string    { return k.prefix + "{rows}:delay" }
func (k keys) dropped() string  { return k.prefix + "{rows}:dropped" }

// rowKeys are the keys of the row scripts.
func (k keys) rowKeys() []string { return []string{k.schedule(), k.delay(), k.dropped()} }

// itemPages is the sorted set of the page keys (as given to SetItemPage,
// without the prefix) stored as item's pages, each scored with when it
// expires, on a slot of its own. Its members may name pages that expired
// lately or were replaced: PurgeItemPages checks each page's owner before
// deleting it. (Before the index was sorted it was a set under
// itempages:{I}; the new name keeps the two types apart.)
func (k keys) itemPages(item string) string { return k.prefix + "pages:{" + tag(item) + "}" }

// claim is the key of the turns of the work named name (see claims.go), on
// a slot of its own.
func (k keys) claim(name string) string { return k.prefix + "claim:{" + tag(name) + "}" }

// tokenOf returns the token whose session is key, undoing tag; ok is
// false if key is no session key of this prefix.
func (k keys) tokenOf(key string) (token string, ok bool) { return k.tagOf(key, "session") }

// tagOf returns what a key of this prefix named kind+":{TAG}" names, undoing
// tag; ok is false if key is no such key.
func (k keys) tagOf(key, kind string) (string, bool) {
	t, ok := strings.CutPrefix(key, k.prefix+kind+":{")
	if !ok || !strings.HasSuffix(t, "}") {
		return "", false
	}
	return untag.Replace(t[:len(t)-1]), true
}

// untag undoes tag.
var untag = strings.NewReplacer("%25", "%", "%7D", "}")
