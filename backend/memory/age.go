package memory

// sessionList orders the sessions of a shard by age: by last-seen time,
// oldest first, and among sessions seen in the same millisecond by seq, the
// order they were seen in.
//
// A refresh does not move its session in the list, which would write to
// the session's two neighbours and to the newest session on every request:
// memory seldom in the CPU's cache, and often in another CPU's. It only
// marks the session moved, younger than its place says. Only the old end
// of the list is read, by cleaning, and settle puts it right first: a moved
// session found there goes to its place. Each refresh costs at most one
// such move, however long the list.
//
// So the list keeps this order: every session is younger than each session
// before it that is not moved. Once settled, the oldest session is not
// moved, and so is the least recently seen of all.
type sessionList struct{ oldest, newest *session }

// before reports whether a is older than b.
func before(a, b *session) bool {
	return a.lastSeen < b.lastSeen || a.lastSeen == b.lastSeen && a.seq < b.seq
}

func (l *sessionList) remove(x *session) {
	if x.older != nil {
		x.older.newer = x.newer
	} else {
		l.oldest = x.newer
	}
	if x.newer != nil {
		x.newer.older = x.older
	} else {
		l.newest = x.older
	}
	x.older, x.newer = nil, nil
}

// insert puts x at its place and clears its mark. It walks back from the
// newest end, past the sessions younger than x; usually there are none.
func (l *sessionList) insert(x *session) {
	x.moved = false
	after := l.newest
	for after != nil && before(x, after) {
		after = after.older
	}
	x.older = after
	if after == nil {
		x.newer = l.oldest
		l.oldest = x
	} else {
		x.newer = after.newer
		after.newer = x
	}
	if x.newer != nil {
		x.newer.older = x
	} else {
		l.newest = x
	}
}

// settle moves the moved sessions at the old end to their places, until
// the oldest session is not moved, and returns how many it moved.
func (l *sessionList) settle() int {
	n := 0
	for x := l.oldest; x != nil && x.moved; x = l.oldest {
		l.remove(x)
		l.insert(x)
		n++
	}
	return n
}
