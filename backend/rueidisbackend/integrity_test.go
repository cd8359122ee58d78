package rueidisbackend_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/rueidisbackend"
)

// TestCleanup_NoOrphanKeysAfterConcurrentStress runs every session call
// from many goroutines over a small set of tokens (so they collide), then
// scans the keyspace of every node: every key must belong to a session in
// the index, be a user's index or be a shared set; every indexed session
// must be whole (its login and last-seen keys exist); every session of a
// user must be in that user's index; and SessionCount must count exactly
// the sessions whose keys exist.
//
// A user's index may list a token whose session is gone: every session
// cleaning removes leaves one, and so can a creation and a deletion of the
// same token racing each other on a cluster, or a RenewSession to a token
// that is being logged out. Such
// entries are never returned (UserSessions checks each session) and go at
// the latest a lifetime later; the test counts them.
func TestCleanup_NoOrphanKeysAfterConcurrentStress(t *testing.T) {
	t.Parallel()
	forEachTarget(t, func(t *testing.T, tg target) {
		clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
		s, c, prefix := newStoreWith(t, tg, rueidisbackend.Options{Clock: clock})
		tokens := make([]string, 64)
		for i := range tokens {
			tokens[i] = fmt.Sprintf("stress-%02d", i)
		}
		tokens[0], tokens[1] = "odd}token", "odd%7Dtoken" // escaping must keep them apart
		userOf := func(tok string) string { return "user-" + tok }
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 1))
				for range 400 {
					tok := tokens[r.IntN(len(tokens))]
					item := fmt.Sprintf("item-%d", r.IntN(5))
					var err error
					switch op := r.IntN(14); {
					case op < 3:
						err = s.UpdateToken(bg, tok, userOf(tok), item)
					case op < 4:
						_, err = s.StartSession(bg, tok, userOf(tok))
					case op < 6:
						_, _, err = s.RefreshSession(bg, tok, item)
					case op < 7:
						err = s.AddToCart(bg, tok, item, 1+r.IntN(3))
					case op < 8:
						err = s.SetValue(bg, tok, "flash", []byte(item))
					case op < 9:
						other := tokens[r.IntN(len(tokens))]
						if other != tok {
							_, err = s.RenewSession(bg, tok, other, userOf(other))
						}
					case op < 11:
						_, err = s.CleanSessions(bg, r.IntN(20), 1+r.IntN(10))
					case op < 12:
						_, err = s.LogoutUser(bg, userOf(tok))
					case op < 13:
						clock.Advance(time.Millisecond)
					default:
						err = s.Logout(bg, tok)
					}
					if errors.Is(err, retail.ErrNoSession) || errors.Is(err, retail.ErrInvalid) {
						err = nil // no live session, or RenewSession to a live token
					}
					if err != nil {
						t.Errorf("stress op: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		wantWholeKeyspace(t, s, c, prefix)
	})
}

// wantWholeKeyspace scans the keyspace of every node and checks that it
// holds whole sessions only (see TestCleanup_NoOrphanKeysAfterConcurrentStress),
// returning the number of sessions.
func wantWholeKeyspace(t *testing.T, s *rueidisbackend.Store, c rueidis.Client, prefix string) int {
	t.Helper()
	indexed, err := c.Do(bg, c.B().Zrange().Key(indexKey(prefix)).Min("0").Max("-1").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	shared := map[string]bool{indexKey(prefix): true, viewedKey(prefix): true}
	owned := map[string]bool{}
	for _, tok := range indexed {
		owned[sessionKey(prefix, tok)] = true
	}
	keys := scanAll(t, c, prefix)
	exists := map[string]bool{}
	var userIndexes []string
	logins := 0 // sessions whose keys exist
	for _, k := range keys {
		exists[k] = true
		switch {
		case strings.HasPrefix(k, prefix+"session:{"):
			logins++
		case strings.HasPrefix(k, prefix+"user:{"):
			userIndexes = append(userIndexes, k)
			continue
		case strings.HasPrefix(k, prefix+"loggedout:{"), strings.HasPrefix(k, prefix+"logoutmark:{"):
			continue // a user's last LogoutUser, or a bucket of users', which no session owns
		case strings.HasPrefix(k, prefix+"{views}:flushed:"):
			continue // a process's last flush of views, which no session owns
		}
		if !shared[k] && !owned[k] {
			t.Errorf("orphan key %q: no indexed session owns it", k)
		}
	}
	userOfSession := map[string]string{} // token -> user, of the indexed sessions
	for _, tok := range indexed {
		key := sessionKey(prefix, tok)
		if !exists[key] {
			t.Errorf("indexed session %q has no key", tok)
			continue
		}
		f, err := c.Do(bg, c.B().Hmget().Key(key).Field("login", "seen").Build()).ToArray()
		if err != nil {
			t.Fatal(err)
		}
		login, err1 := f[0].ToString()
		_, err2 := f[1].ToString()
		if err1 != nil || err2 != nil {
			t.Errorf("indexed session %q is not whole: login %v, seen %v", tok, err1, err2)
			continue
		}
		if user := strings.SplitN(login, " ", 3)[2]; user != "" {
			userOfSession[tok] = user
		}
	}
	listed := map[string]bool{}
	dangling := 0 // entries of users' indexes whose session is gone or another user's
	for _, k := range userIndexes {
		user := strings.NewReplacer("%25", "%", "%7D", "}").Replace(strings.TrimSuffix(strings.TrimPrefix(k, prefix+"user:{"), "}"))
		toks, err := c.Do(bg, c.B().Zrange().Key(k).Min("0").Max("-1").Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range toks {
			if userOfSession[tok] != user {
				dangling++
				continue
			}
			listed[tok] = true
		}
	}
	for tok, user := range userOfSession {
		if !listed[tok] {
			t.Errorf("session %q of %q is missing from its user's index", tok, user)
		}
	}
	if n, err := s.SessionCount(bg); n != logins || err != nil {
		t.Errorf("SessionCount() = %d, %v; want %d (the session keys on the servers), nil", n, err, logins)
	}
	t.Logf("%d sessions, %d keys, %d users' index entries for sessions gone", logins, len(keys), dangling)
	return logins
}

// sessionKey repeats the backend's layout, as a user inspecting Redis would
// read it from the package doc: the key of the session of ID id
// (retail.SessionID).
func sessionKey(prefix, id string) string { return prefix + "session:{" + escapeTag(id) + "}" }

// indexKey is the key of the session index, as the package doc gives it.
func indexKey(prefix string) string { return prefix + "{sessions}:seen" }

// viewedKey is the key of the view counts, as the package doc gives it.
func viewedKey(prefix string) string { return prefix + "{views}:viewed" }

// userKey is the key of user's index, as the package doc gives it.
func userKey(prefix, user string) string { return prefix + "user:{" + escapeTag(user) + "}" }

// loggedOutKey is the key of user's last LogoutUser instant, as the
// package doc gives it.
func loggedOutKey(prefix, user string) string {
	return prefix + "loggedout:{" + escapeTag(user) + "}"
}

func escapeTag(s string) string { return strings.NewReplacer("%", "%25", "}", "%7D").Replace(s) }

// scanAll returns the keys that start with prefix on every master.
func scanAll(t *testing.T, c rueidis.Client, prefix string) []string {
	t.Helper()
	pattern := strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`).Replace(prefix) + "*"
	var keys []string
	for _, node := range masterNodes(t, c) {
		var cursor uint64
		for {
			e, err := node.Do(bg, node.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
			if err != nil {
				t.Fatalf("SCAN: %v", err)
			}
			keys = append(keys, e.Elements...)
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return keys
}

// masterNodes returns a client for each master c knows of: the one server,
// or the masters of a cluster, skipping replicas (which hold copies) and
// nodes that do not answer, as long as the masters that answer are as many
// as the cluster says serve slots.
func masterNodes(t *testing.T, c rueidis.Client) map[string]rueidis.Client {
	t.Helper()
	masters := map[string]rueidis.Client{}
	var errs []error
	for addr, node := range c.Nodes() {
		role, err := node.Do(bg, node.B().Role().Build()).ToArray()
		if e, ok := rueidis.IsRedisErr(err); ok && strings.Contains(e.Error(), "unknown command") {
			masters[addr] = node // miniredis, which has no replicas
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("ROLE on %s: %w", addr, err))
			continue
		}
		if r, _ := role[0].ToString(); r == "master" {
			masters[addr] = node
		}
	}
	if c.Mode() != rueidis.ClientModeCluster { // every node must have answered
		if len(errs) > 0 {
			t.Fatal(errors.Join(errs...))
		}
		return masters
	}
	var nodes string
	var err error = errors.New("no master answers")
	for _, node := range masters { // not c.Do: it may pick a node that failed
		if nodes, err = node.Do(bg, node.B().ClusterNodes().Build()).ToString(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	serving := 0
	for _, line := range strings.Split(nodes, "\n") {
		if f := strings.Fields(line); len(f) > 8 && strings.Contains(f[2], "master") && !strings.Contains(f[2], "fail") {
			serving++ // a master with slots
		}
	}
	if len(masters) != serving {
		t.Fatalf("%d masters answer, but the cluster has %d serving slots (%v)", len(masters), serving, errors.Join(errs...))
	}
	return masters
}

// TestKeys_TagsAreWholeTokensAndUsers checks that a session's key and a
// user's index are tagged with the whole escaped token or user, whatever
// it holds, so that distinct ones never share a key, and that the row sets
// share a slot (computed as Redis does).
func TestKeys_TagsAreWholeTokensAndUsers(t *testing.T) {
	for _, tok := range []string{"plain", "}", "}}", "{", "{x}", "a}b", "a%7Db", "%", "a{b}c", strings.Repeat("}", 256)} {
		k := sessionKey("retail:", tok)
		if i := strings.IndexByte(k, '{'); k[i+1:strings.IndexByte(k[i+1:], '}')+i+1] != escapeTag(tok) {
			t.Errorf("token %q: the hash tag of %q is not the whole escaped token", tok, k)
		}
	}
	if slot("retail:{rows}:schedule") != slot("retail:{rows}:delay") {
		t.Errorf("row schedule and delay sets are on different slots")
	}
	if sessionKey("p:", "a}b") == sessionKey("p:", "a%7Db") {
		t.Errorf("tokens %q and %q share a key", "a}b", "a%7Db")
	}
	for _, user := range []string{"alice", "}", "{x}", "a}b", "a%7Db", "ünïcødé}{"} {
		k := userKey("retail:", user)
		if i := strings.IndexByte(k, '{'); k[i+1:strings.IndexByte(k[i+1:], '}')+i+1] != escapeTag(user) {
			t.Errorf("user %q: the hash tag of %q is not the whole escaped user", user, k)
		}
	}
	if userKey("p:", "a}b") == userKey("p:", "a%7Db") {
		t.Errorf("users %q and %q share an index", "a}b", "a%7Db")
	}
}

// TestKeys_SharedSetsLayout checks that the session index and the view
// counts are the keys the package doc gives, PREFIX{sessions}:seen and
// PREFIX{views}:viewed, so that data written by earlier versions is read
// as before.
func TestKeys_SharedSetsLayout(t *testing.T) {
	mr := startMiniredis(t)
	s := mustNew(t, miniredisClientOf(t, mr, rueidis.ClientOption{}), rueidisbackend.Options{})
	prefix := rueidisbackend.DefaultPrefix
	if got, want := indexKey(prefix), "retail:{sessions}:seen"; got != want {
		t.Fatalf("indexKey(%q) = %q, want %q", prefix, got, want)
	}
	if got, want := viewedKey(prefix), "retail:{views}:viewed"; got != want {
		t.Fatalf("viewedKey(%q) = %q, want %q", prefix, got, want)
	}
	for _, tok := range []string{"a", "b", "}", "é"} {
		if err := s.UpdateToken(bg, tok, "user", "item-"+tok); err != nil {
			t.Fatal(err)
		}
		if err := s.FlushViews(bg); err != nil { // views wait in the process until then
			t.Fatal(err)
		}
		if _, err := mr.ZScore(indexKey(prefix), retail.SessionID(tok)); err != nil {
			t.Errorf("token %q is not in %s: %v", tok, indexKey(prefix), err)
		}
		if _, err := mr.ZScore(viewedKey(prefix), "item-"+tok); err != nil {
			t.Errorf("item %q is not in %s: %v", "item-"+tok, viewedKey(prefix), err)
		}
	}
}

// slot is Redis Cluster's key slot: CRC16 of the hash tag (or key) mod 16384.
func slot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

// TestErrors_RedisErrorReachableThroughStore corrupts a session's login key
// with the wrong type: the Store's error is one *retail.OpError naming the
// operation, directly over the server's *rueidis.RedisError (the driver
// returns it raw; the Store wraps it once).
func TestErrors_RedisErrorReachableThroughStore(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target) {
		s, c, prefix := newStore(t, tg, retail.SystemClock{})
		key := sessionKey(prefix, retail.SessionID("typed"))
		if err := c.Do(bg, c.B().Set().Key(key).Value("v").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		_, _, checkErr := s.CheckToken(bg, "typed")
		for op, err := range map[string]error{
			"CheckToken":  checkErr,
			"UpdateToken": s.UpdateToken(bg, "typed", "alice", ""),
		} {
			var opErr *retail.OpError
			var redisErr *rueidis.RedisError
			if !errors.As(err, &opErr) || opErr.Op != op || !errors.As(opErr.Err, &redisErr) || opErr.Err != error(redisErr) {
				t.Errorf("%s on a hash = %v, want a *retail.OpError for %s whose Err is a *rueidis.RedisError", op, err, op)
			}
		}
	})
}

// countingClient counts the commands a Store sends, and the round trips
// (calls of Do, DoMulti and DoCache) they go in.
type countingClient struct {
	rueidis.Client
	mu          sync.Mutex
	sent, trips int
}

func (c *countingClient) count(n int) { c.mu.Lock(); c.sent += n; c.trips++; c.mu.Unlock() }
func (c *countingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if !markTracker(cmd.Commands()) {
		c.count(1)
	}
	return c.Client.Do(ctx, cmd)
}

// markTracker reports whether args are a command that the tracker of a
// Store's logout marks sends through its client, once and then every
// second (see tracker.go), rather than one of a call's.
func markTracker(args []string) bool {
	return len(args) >= 2 && args[0] == "CLIENT" && args[1] == "TRACKINGINFO" ||
		len(args) >= 4 && strings.HasPrefix(args[0], "EVAL") && strings.Contains(args[3], "logoutprobe:{")
}
func (c *countingClient) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.count(len(cmds))
	return c.Client.DoMulti(ctx, cmds...)
}
func (c *countingClient) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	c.count(1)
	return c.Client.DoCache(ctx, cmd, ttl)
}

// TestErrors_InvalidInputSendsNothing calls every method with invalid
// input and checks that nothing reached the client.
func TestErrors_InvalidInputSendsNothing(t *testing.T) {
	inner, _ := miniredisClient(t, rueidis.ClientOption{})
	c := &countingClient{Client: inner}
	s, err := rueidisbackend.New(c, rueidisbackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", retail.MaxIDLen+1)
	calls := map[string]func() error{
		"CheckToken":       func() error { _, _, err := s.CheckToken(bg, ""); return err },
		"StartSession":     func() error { _, err := s.StartSession(bg, "t", "\xff"); return err },
		"RefreshSession":   func() error { _, _, err := s.RefreshSession(bg, "t", long); return err },
		"RenewSession":     func() error { _, err := s.RenewSession(bg, "t", "t", ""); return err },
		"UserSessions":     func() error { _, err := s.UserSessions(bg, ""); return err },
		"LogoutUser":       func() error { _, err := s.LogoutUser(bg, ""); return err },
		"SetValue":         func() error { return s.SetValue(bg, "t", "k", make([]byte, retail.MaxValueSize+1)) },
		"Value":            func() error { _, _, err := s.Value(bg, "t", ""); return err },
		"PopValue":         func() error { _, _, err := s.PopValue(bg, "", "k"); return err },
		"DeleteValue":      func() error { return s.DeleteValue(bg, "t", long) },
		"IncrementCart":    func() error { _, err := s.IncrementCart(bg, "t", "i", retail.MaxCartCount+1); return err },
		"CountView":        func() error { return s.CountView(bg, "") },
		"UpdateToken":      func() error { return s.UpdateToken(bg, "t", "", "i") },
		"RecentItems":      func() error { _, err := s.RecentItems(bg, long); return err },
		"Logout":           func() error { return s.Logout(bg, "a\nb") },
		"CleanSessions":    func() error { _, err := s.CleanSessions(bg, -1, 1); return err },
		"AddToCart":        func() error { return s.AddToCart(bg, "t", "", 1) },
		"Cart":             func() error { _, err := s.Cart(bg, ""); return err },
		"Page":             func() error { _, _, err := s.Page(bg, ""); return err },
		"SetPage":          func() error { return s.SetPage(bg, "k", nil, 0) },
		"SetItemPage":      func() error { return s.SetItemPage(bg, "", "k", nil, time.Second) },
		"DeletePage":       func() error { return s.DeletePage(bg, "") },
		"PurgeItemPages":   func() error { _, err := s.PurgeItemPages(bg, long); return err },
		"ScheduleRowCache": func() error { return s.ScheduleRowCache(bg, "", time.Second) },
		"ClaimDueRows":     func() error { _, err := s.ClaimDueRows(bg, 0); return err },
		"Row":              func() error { _, _, err := s.Row(bg, long); return err },
		"SetRow":           func() error { return s.SetRow(bg, "", nil) },
		"SetScheduledRow":  func() error { _, err := s.SetScheduledRow(bg, "", nil); return err },
		"ItemRank":         func() error { _, _, err := s.ItemRank(bg, ""); return err },
		"TopItems":         func() error { _, err := s.TopItems(bg, -1); return err },
		"RescaleViews":     func() error { return s.RescaleViews(bg, 1, 2) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, retail.ErrInvalid) {
			t.Errorf("%s(invalid) = %v, want ErrInvalid", name, err)
		}
	}
	if c.sent != 0 {
		t.Errorf("invalid calls sent %d commands, want 0", c.sent)
	}
	// The counter counts: a valid call sends.
	if _, _, err := s.CheckToken(bg, "t"); err != nil || c.sent == 0 {
		t.Errorf("CheckToken(valid) = %v after sending %d commands, want nil after at least 1", err, c.sent)
	}
}

// TestCleanSessions_StrayIndexEntries plants index entries that have no
// session keys: an old one, as a failed update leaves, is removed without
// being counted as a session; a fresh one, as an update in flight on a
// cluster shows for a moment, is left for its session write to land.
func TestCleanSessions_StrayIndexEntries(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target) {
		clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
		s, c, prefix := newStoreWith(t, tg, rueidisbackend.Options{Clock: clock})
		now := float64(clock.Now().UnixMilli())
		plant := map[string]float64{"old-stray": now - float64(2*time.Minute/time.Millisecond), "fresh-stray": now}
		for tok, stamp := range plant {
			if err := c.Do(bg, c.B().Zadd().Key(indexKey(prefix)).ScoreMember().ScoreMember(stamp, tok).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(time.Second)
		if n, err := s.CleanSessions(bg, 0, 10); n != 0 || err != nil {
			t.Errorf("CleanSessions(0, 10) = %d, %v; want 0, nil (strays are no sessions)", n, err)
		}
		left, err := c.Do(bg, c.B().Zrange().Key(indexKey(prefix)).Min("0").Max("-1").Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"fresh-stray"}; !slices.Equal(left, want) {
			t.Errorf("index after cleaning = %q, want %q", left, want)
		}
	})
}
