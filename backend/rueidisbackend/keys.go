package rueidisbackend

import "strings"

// keys builds every key name the Store uses. The keys of one session share
// a hash tag, {TOKEN}, so the scripts that touch a session run on one slot of
// a cluster; a user's session index has its own tag, {USER}; the shared sets
// carry fixed tags so that each part of them is a single slot.
type keys struct {
	prefix string
	spread int // the number of parts of each shared set, at least 1 (see Options.Spread)
	// The keys of the parts of the session index and of the view counts,
	// built once.
	indexParts, viewedParts []string
}

// newKeys returns the key names of a Store with prefix whose shared sets
// are split into spread parts.
func newKeys(prefix string, spread int) keys {
	k := keys{prefix: prefix, spread: max(spread, 1)}
	k.indexParts = make([]string, k.spread)
	k.viewedParts = make([]string, k.spread)
	for p := range k.spread {
		k.indexParts[p] = k.sharedKey("sessions", p, ":seen")
		k.viewedParts[p] = k.sharedKey("views", p, ":viewed")
	}
	return k
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

// The kinds of a session's keys, named in its keys:
//   - login holds "CREATED DEADLINE USER" (see loginValue). It is written
//     when the session starts, when its user changes, and when its coarse
//     idle deadline needs moving (at most once every half idle timeout), so
//     client-side caches of it stay valid across page views.
//   - seen holds the last-seen stamp and the recently viewed items,
//     written on every refresh; it lives apart from login so that
//     refreshes do not invalidate cached logins.
//   - cart is the hash item -> count.
//   - values is the hash key -> value of the session's values.
const (
	loginKind  = "login"
	seenKind   = "seen"
	cartKind   = "cart"
	valuesKind = "values"
)

// sessionKey is the key of one kind of token's session.
func (k keys) sessionKey(kind, token string) string {
	return k.prefix + kind + ":{" + tag(token) + "}"
}

// sessionKeys are the keys of one session.
type sessionKeys struct{ login, seen, cart, values string }

// session returns all the keys of token's session, escaping the token
// once and building the four names in one allocation, as every session
// call does.
func (k keys) session(token string) sessionKeys {
	t := tag(token)
	all := k.prefix + loginKind + ":{" + t + "}" +
		k.prefix + seenKind + ":{" + t + "}" +
		k.prefix + cartKind + ":{" + t + "}" +
		k.prefix + valuesKind + ":{" + t + "}"
	n := len(k.prefix) + len(":{}") + len(t) // a name's length, less its kind's
	login := n + len(loginKind)
	seen := login + n + len(seenKind)
	cart := seen + n + len(cartKind)
	return sessionKeys{login: all[:login], seen: all[login:seen], cart: all[seen:cart], values: all[cart:]}
}

// all lists the keys in the order every session script takes them (see
// prelude): login, seen, cart, values.
func (sk sessionKeys) all() []string { return sk.allWith() }

// allWith lists the keys as all does, followed by extra, in one
// allocation.
func (sk sessionKeys) allWith(extra ...string) []string {
	return append(append(make([]string, 0, 4+len(extra)), sk.login, sk.seen, sk.cart, sk.values), extra...)
}

// The shared sets, the session index and the view counts, are each split
// into Options.Spread parts, so that in a cluster the writes of every
// request spread over that many slots instead of hitting one. With a
// spread of 1 each is the single set it always was, PREFIX{sessions}:seen
// and PREFIX{views}:viewed; with a spread of N > 1 part K (0 <= K < N) is
// PREFIX{sessions:K}:seen and PREFIX{views:K}:viewed, or with a suffix .J
// in the tag that places it in the K-th of N equal slot ranges (see
// partTag). A token's index entry
// and an item's view count live in the part partOf gives, which every
// process sharing the data must compute alike: the FNV-1a 32-bit hash of
// the token's or item's raw bytes, mod N. That hash is part of the data
// layout and must never change.

// partOf returns the part of the shared sets that holds name, a token or
// an item: FNV-1a 32 of its bytes mod spread (0 for a spread of 1).
func (k keys) partOf(name string) int {
	if k.spread <= 1 {
		return 0
	}
	return int(fnv1a32(name) % uint32(k.spread))
}

// fnv1a32 is the 32-bit FNV-1a hash of s (offset basis 2166136261, prime
// 16777619), written out so that it allocates nothing.
func fnv1a32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// sharedKey is the key of part p of the shared set named name ("sessions"
// or "views") with suffix.
func (k keys) sharedKey(name string, p int, suffix string) string {
	if k.spread <= 1 {
		return k.prefix + "{" + name + "}" + suffix
	}
	return k.prefix + "{" + partTag(name, p, k.spread) + "}" + suffix
}

// partTag is the hash tag of part p of n of the shared set named name:
// "NAME:P" if its hash slot lies in the p-th of n equal ranges of the 16384
// slots, else "NAME:P.J" for the smallest J >= 1 whose slot does. A cluster
// created by redis-cli gives its masters equal ranges of consecutive slots,
// so the parts fall evenly on the masters whenever n is a multiple of their
// number, instead of where their names happen to hash. The search is
// deterministic: every process finds the same tags.
func partTag(name string, p, n int) string {
	lo, hi := p*clusterSlots/n, (p+1)*clusterSlots/n
	base := name + ":" + itoa(p)
	tag := base
	for j := 1; ; j++ {
		if slot := int(crc16(tag) % clusterSlots); slot >= lo && slot < hi {
			return tag
		}
		tag = base + "." + itoa(j)
	}
}

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// crc16 is the CRC16 (XMODEM) of s, which Redis Cluster takes, modulo
// clusterSlots, as the hash slot of a key or its hash tag.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// index is the part of the session index, the sorted set token ->
// last-seen stamp that cleaning reads, that holds token.
func (k keys) index(token string) string { return k.indexPart(k.partOf(token)) }

// indexPart is part p of the session index.
func (k keys) indexPart(p int) string { return k.indexParts[p] }

// user is the sorted set token -> created (Unix ms) of the sessions logged
// in as user, on a slot of its own.
func (k keys) user(user string) string { return k.prefix + "user:{" + tag(user) + "}" }

// viewed is the part of the view counts that holds item: the sorted set
// item -> minus its view count, so that ZRANK gives rank 0 to the most
// viewed and breaks ties by name ascending (within the part; see views.go
// for the ranks across parts).
func (k keys) viewed(item string) string { return k.viewedPart(k.partOf(item)) }

// viewedPart is part p of the view counts.
func (k keys) viewedPart(p int) string { return k.viewedParts[p] }

func (k keys) page(key string) string { return k.prefix + "page:" + key }
func (k keys) row(row string) string  { return k.prefix + "row:" + row }

// schedule and delay share the {rows} slot so one script claims due rows.
func (k keys) schedule() string { return k.prefix + "{rows}:schedule" }
func (k keys) delay() string    { return k.prefix + "{rows}:delay" }

// itemPages is the set of the page keys (as given to SetItemPage, without
// the prefix) stored as item's pages, on a slot of its own. Its members
// may name pages that expired or were replaced: PurgeItemPages checks each
// page's owner before deleting it.
func (k keys) itemPages(item string) string { return k.prefix + "itempages:{" + tag(item) + "}" }

// claim is the key of the turns of the work named name (see claims.go), on
// a slot of its own.
func (k keys) claim(name string) string { return k.prefix + "claim:{" + tag(name) + "}" }

// tokenOf returns the token whose login key is key, undoing tag; ok is
// false if key is no login key of this prefix.
func (k keys) tokenOf(key string) (token string, ok bool) {
	t, ok := strings.CutPrefix(key, k.prefix+loginKind+":{")
	if !ok || !strings.HasSuffix(t, "}") {
		return "", false
	}
	return untag.Replace(t[:len(t)-1]), true
}

// untag undoes tag.
var untag = strings.NewReplacer("%25", "%", "%7D", "}")
