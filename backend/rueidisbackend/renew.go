package rueidisbackend

import (
	"context"
	_ "embed"
	"strings"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/driver"
	"github.com/retailkit/retail/internal/settings"
)

//go:embed read.lua
var readSrc string

var readSession = sessionScript(readSrc)

// RenewSession implements driver.Store in two steps, since the two tokens'
// keys live on different slots of a cluster (the same steps run on a single
// server, so that one code path is tested everywhere):
//
//  1. Create: read the old session, create the new one holding a copy of
//     its recent items, cart and values, with the login's values applied
//     (unless newToken names a live session), and index it.
//  2. Delete the old session; then remove its entries from the indexes
//     (the new one's were written in step 1). Once the old session is
//     deleted, the call succeeds whether or not the removals do.
//
// Between the steps both tokens are live, so a concurrent CheckToken finds
// one of them whenever it runs. If the process stops between the steps (a
// crash, an error, a context that ends), RenewSession returns an error and
// the caller hands the new token to nobody: the old session is unchanged and
// still works, and the new one, which its user's index lists (UserSessions
// shows it until it ends), expires by the idle timeout and is removed by
// cleaning or its key's TTL. If the old
// session is gone when step 2 runs (a concurrent Logout or RenewSession of
// the same token), the new one is deleted again and RenewSession reports
// NoSession. A write to the old token that lands between the copy and the
// deletion, a few round trips, is lost with the old session.
func (s *store) RenewSession(ctx context.Context, token, newToken, user string, opts driver.SessionOptions) (driver.Status, error) {
	// The login's instant is when the call began: a LogoutUser of user
	// that began in the same millisecond or later ends the new session.
	stamp, now := s.nextStamp()
	if out, err := s.endTokenIfRevoked(ctx, token); out || err != nil {
		return driver.NoSession, err
	}
	oldKey := s.k.session(token)
	reply, err := s.do(ctx, s.scriptCall(readSession, []string{oldKey}, s.sessionArgs(now)))[0].ToArray()
	if err != nil {
		return 0, err
	}
	if st, err := status(reply); err != nil || st != driver.OK {
		return st, err
	}
	if len(reply) < 3 {
		return 0, errShortReply
	}
	login, err := reply[1].ToString()
	if err != nil {
		return 0, err
	}
	fields, err := reply[2].AsStrSlice() // the recent items, the cart, the values and the label
	if err != nil {
		return 0, err
	}
	if opts.Label != "" {
		fields = withLabel(fields, opts.Label)
	}
	if opts.Values != nil {
		// The new session is written with its values in step 1, by one
		// script: it never holds the old values without the login's.
		// What it would hold is known here, from the read, so a login
		// that would overfill it is refused before anything is written.
		var n int
		if fields, n = withValues(fields, opts.Values); n > retail.MaxSessionValues {
			return driver.Full, nil
		}
	}
	l, _ := parseLogin(login)
	cfield, _, _ := strings.Cut(login, " ")
	newUser, cstamp := l.user, l.cstamp

	// Step 1: create.
	if user != "" { // a login starts the lifetime again, the one given or the Store's
		newUser, cstamp, cfield = user, formatStamp(stamp), withLife(createdField(stamp, now), settings.Millis(opts.Lifetime))
	}
	newLogin := loginValue(cfield, now+s.idle, newUser)
	// The new session joins its user's index before the old one is
	// deleted, so that a LogoutUser running between the steps, which may
	// no longer find the old one, finds the new one: on a single server in
	// start.lua's step; in a cluster after it, with the session index, and
	// the new session checked after (see indexNew), so that a Logout of the
	// new token landing first leaves no stray entry.
	st, dropped, err := s.start(ctx, newToken, newUser, seenValue(stamp, now), newLogin, fields)
	if err != nil || st != driver.OK {
		return st, err
	}
	if s.cluster {
		var indexing []call
		if newUser != "" {
			indexing = append(indexing, s.addUserCall(newUser, newToken, cstamp))
		}
		if err := s.indexNew(ctx, newToken, stamp, newUser, cstamp, indexing); err != nil {
			return 0, err
		}
	}

	// Step 2: delete the old session.
	if s.renewHook != nil {
		if err := s.renewHook(); err != nil {
			return 0, err
		}
	}
	// The old session's user may have logged out everywhere since step 1
	// read it: read the instant again, after the new session was indexed,
	// so that either that LogoutUser found the new session in the index or
	// this finds the LogoutUser.
	calls := []call{s.endCall(now, token, "")}
	if l.user != "" {
		calls = append(calls, call{cmd: s.c.B().Get().Key(s.k.loggedOut(l.user)).Build()})
	}
	res := s.do(ctx, calls...)
	s.sessionWritten(oldKey, true)
	e, ok, err := endReply(token, res[0])
	if err != nil {
		return 0, err
	}
	if ok && l.user != "" {
		at, out, err := loggedOutAt(res[1])
		if err != nil {
			return 0, err
		}
		if out && l.created <= at {
			if err := s.send(ctx, s.unindexEnded([]ended{e})); err != nil {
				return 0, err
			}
			ok = false
		}
	}
	if !ok {
		return driver.NoSession, s.Logout(ctx, newToken)
	}
	// The old session is gone and the new one holds what it held: the
	// caller must hand out the new token whatever happens next (failing
	// would leave the visitor with neither session). Removing the old
	// session's index entries only tidies up: entries without a session
	// are removed by cleaning and RepairSessions (the session index), or
	// never returned and pruned (a user's index). Waiting for a node that
	// is down would spend the deadline the caller still needs (to enforce
	// MaxSessionsPerUser, to set the cookie), so the tidying gets
	// renewCleanupWait, and a second try in the background.
	// The second try builds its commands anew: rueidis recycles those a
	// DoMulti answered (with a reply, a Redis error such as CLUSTERDOWN
	// among them), and sending one again panics.
	cleanup := func() []call {
		calls := s.unindexEnded([]ended{e})
		return append(calls, s.unindexDropped(newToken, dropped, newUser)...)
	}
	if calls = cleanup(); len(calls) > 0 {
		cctx, cancel := context.WithTimeout(ctx, renewCleanupWait)
		err := s.send(cctx, calls)
		cancel()
		if err != nil {
			s.cleanups.run(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				s.send(ctx, cleanup())
			})
		}
	}
	return driver.OK, nil
}

// renewCleanupWait bounds how long RenewSession waits, once the new session
// holds the old one's data, for the old one's index entries to be removed.
const renewCleanupWait = 200 * time.Millisecond

// withLabel returns the field-value pairs fields with label as the label.
func withLabel(fields []string, label string) []string {
	out := make([]string, 0, len(fields)+2)
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i] != "label" {
			out = append(out, fields[i], fields[i+1])
		}
	}
	return append(out, "label", label)
}

// withValues returns the field-value pairs fields, a session's as read.lua
// copies them (or none, for a new session), with values applied: a nil
// value deletes its key's field, any other replaces or adds it. It counts
// the values again for #values, and returns how many there are.
func withValues(fields []string, values map[string][]byte) ([]string, int) {
	out := make([]string, 0, len(fields)+2*len(values)+2)
	n := 0
	for i := 0; i+1 < len(fields); i += 2 {
		f := fields[i]
		if f == "#values" {
			continue
		}
		if key, ok := strings.CutPrefix(f, "value:"); ok {
			if _, given := values[key]; given {
				continue
			}
			n++
		}
		out = append(out, f, fields[i+1])
	}
	for key, v := range values {
		if v != nil {
			out = append(out, "value:"+key, string(v))
			n++
		}
	}
	if n > 0 {
		out = append(out, "#values", itoa(n))
	}
	return out, n
}
