package rueidisbackend

import "strings"

// keys builds every key name the Store uses. The keys of one session share
// a hash tag, {TOKEN}, so the scripts that touch a session run on one slot of
// a cluster; the shared sets carry fixed tags so that each is a single slot.
type keys struct{ prefix string }

// tag escapes s for use inside a hash tag. Redis ends a tag at the first
// "}", so "}" must not appear inside; "%" is escaped too so that the mapping
// stays one-to-one. Tokens from crypto/rand in hex or base64url pass
// through unchanged.
func tag(s string) string {
	if !strings.ContainsAny(s, "%}") {
		return s
	}
	return strings.NewReplacer("%", "%25", "}", "%7D").Replace(s)
}

// The kinds of a session's keys, named in its keys:
//   - login holds the user. It is written only when the user changes, so
//     client-side caches of it stay valid across page views.
//   - seen holds the last-seen stamp, written on every view; it lives apart
//     from login so that views do not invalidate cached logins.
//   - recent is the list of recently viewed items, newest first.
//   - cart is the hash item -> count.
const (
	loginKind  = "login"
	seenKind   = "seen"
	recentKind = "recent"
	cartKind   = "cart"
)

// sessionKey is the key of one kind of token's session.
func (k keys) sessionKey(kind, token string) string {
	return k.prefix + kind + ":{" + tag(token) + "}"
}

// sessionKeys are the keys of one session.
type sessionKeys struct{ login, seen, recent, cart string }

// session returns all the keys of token's session, escaping the token once.
func (k keys) session(token string) sessionKeys {
	t := ":{" + tag(token) + "}"
	return sessionKeys{
		login:  k.prefix + loginKind + t,
		seen:   k.prefix + seenKind + t,
		recent: k.prefix + recentKind + t,
		cart:   k.prefix + cartKind + t,
	}
}

// all lists the keys in the order the scripts that delete a whole session
// take them (logoutSession, cleanSessions): login, seen, recent, cart.
func (sk sessionKeys) all() []string { return []string{sk.login, sk.seen, sk.recent, sk.cart} }

// index is the sorted set token -> last-seen stamp that cleaning reads.
func (k keys) index() string { return k.prefix + "{sessions}:seen" }

// viewed is the sorted set item -> minus its view count, so that ZRANK
// gives rank 0 to the most viewed and breaks ties by name ascending.
func (k keys) viewed() string { return k.prefix + "{views}:viewed" }

func (k keys) page(key string) string { return k.prefix + "page:" + key }
func (k keys) row(row string) string  { return k.prefix + "row:" + row }

// schedule and delay share the {rows} slot so one script claims due rows.
func (k keys) schedule() string { return k.prefix + "{rows}:schedule" }
func (k keys) delay() string    { return k.prefix + "{rows}:delay" }
