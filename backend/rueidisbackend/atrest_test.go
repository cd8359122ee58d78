package rueidisbackend_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail"
)

// TestAtRest_NoTokenInTheKeyspace runs every call that stores a session,
// then reads every key name and every value the Store wrote (strings,
// hashes, sorted sets), and finds no token in any of them: whoever reads
// the keyspace (a replica, a backup, SCAN) cannot take a session over.
func TestAtRest_NoTokenInTheKeyspace(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg target) {
		clock := retail.NewManualClock(time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC))
		s, c, prefix := newStore(t, tg, clock)
		var tokens []string
		for i := range 20 {
			token := fmt.Sprintf("secret-token-%02d-b7c1e0", i)
			tokens = append(tokens, token)
			user := ""
			if i%2 == 0 {
				user = fmt.Sprintf("user-%d", i%4)
			}
			if _, err := s.StartSession(bg, token, user); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.RefreshSession(bg, token, "item-a"); err != nil {
				t.Fatal(err)
			}
			if err := s.AddToCart(bg, token, "item-a", 2); err != nil {
				t.Fatal(err)
			}
			if err := s.SetValue(bg, token, "flash", []byte("hello")); err != nil {
				t.Fatal(err)
			}
		}
		renewed := "secret-token-renewed-4f2a"
		tokens = append(tokens, renewed)
		if _, err := s.RenewSession(bg, tokens[0], renewed, "user-0"); err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateToken(bg, "secret-token-updated-9d3e", "user-9", "item-b"); err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, "secret-token-updated-9d3e")

		keys := scanKeys(t, c, prefix)
		if len(keys) == 0 {
			t.Fatalf("SCAN found no key under %q: the test shows nothing", prefix)
		}
		var stored []string
		for _, key := range keys {
			stored = append(stored, key)
			stored = append(stored, contents(t, c, key)...)
		}
		for _, token := range tokens {
			for _, v := range stored {
				if strings.Contains(v, token) {
					t.Errorf("the keyspace holds token %q: %q", token, v)
				}
			}
		}
		// Each session is still found by its token, and listed by its ID.
		if user, ok, err := s.CheckToken(bg, renewed); user != "user-0" || !ok || err != nil {
			t.Errorf("CheckToken(renewed) = %q, %v, %v, want user-0, true, nil", user, ok, err)
		}
		infos, err := s.UserSessions(bg, "user-0")
		if err != nil || len(infos) == 0 {
			t.Fatalf("UserSessions(user-0) = %v, %v", infos, err)
		}
		found := false
		for _, in := range infos {
			found = found || in.ID == retail.SessionID(renewed)
		}
		if !found {
			t.Errorf("UserSessions(user-0) = %+v, want the renewed session listed by its ID", infos)
		}
		if err := s.EndSession(bg, retail.SessionID(renewed)); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := s.CheckToken(bg, renewed); ok {
			t.Errorf("CheckToken(renewed) after EndSession(its ID) = live, want a miss")
		}
	})
}

// scanKeys returns every key under prefix, on every master.
func scanKeys(t *testing.T, c rueidis.Client, prefix string) []string {
	t.Helper()
	var keys []string
	for _, node := range c.Nodes() {
		var cursor uint64
		for {
			e, err := node.Do(bg, node.B().Scan().Cursor(cursor).Match(prefix+"*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				if strings.Contains(err.Error(), "MOVED") || strings.Contains(err.Error(), "READONLY") {
					break
				}
				t.Fatal(err)
			}
			keys = append(keys, e.Elements...)
			if e.Cursor == 0 {
				break
			}
			cursor = e.Cursor
		}
	}
	return keys
}

// contents returns what key holds, as strings.
func contents(t *testing.T, c rueidis.Client, key string) []string {
	t.Helper()
	typ, err := c.Do(bg, c.B().Type().Key(key).Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	var cmd rueidis.Completed
	switch typ {
	case "string":
		v, err := c.Do(bg, c.B().Get().Key(key).Build()).ToString()
		if err != nil && !rueidis.IsRedisNil(err) {
			t.Fatal(err)
		}
		return []string{v}
	case "hash":
		m, err := c.Do(bg, c.B().Hgetall().Key(key).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for k, v := range m {
			out = append(out, k, v)
		}
		return out
	case "zset":
		cmd = c.B().Zrange().Key(key).Min("0").Max("-1").Withscores().Build()
	case "set":
		cmd = c.B().Smembers().Key(key).Build()
	case "list":
		cmd = c.B().Lrange().Key(key).Start(0).Stop(-1).Build()
	default:
		return nil
	}
	msgs, err := c.Do(bg, cmd).ToArray()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		if v, err := m.ToString(); err == nil {
			out = append(out, v)
		} else if arr, err := m.ToArray(); err == nil { // RESP3 pairs
			for _, a := range arr {
				if v, err := a.ToString(); err == nil {
					out = append(out, v)
				}
			}
		}
	}
	return out
}
