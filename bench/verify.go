package main

// The checks every contender passes before it is timed, each on a small
// keyspace of its own: one that is fast because it does less, or does it
// wrong, fails here instead of winning the table.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/google/go-cmp/cmp"
)

// checks is the list the report prints when every contender passed.
const checks = "token->user, a user change read back at once, ranks, recent items (newest 25, a re-view moves to the front), " +
	"carts, cleaning removes every session and leaves nothing of them but the view counts, " +
	"both middlewares log in, keep the session across requests and refuse an unknown token"

// checker collects one contender's failures.
type checker struct{ errs []error }

func (c *checker) errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// ok records err, if any, and reports whether it was nil.
func (c *checker) ok(what string, err error) bool {
	if err != nil {
		c.errorf("%s: %w", what, err)
	}
	return err == nil
}

func (c *checker) err() error { return errors.Join(c.errs...) }

// verify checks every contender and returns the failures by name.
func (b *bench) verify(ctx context.Context) map[string]error {
	failed := map[string]error{}
	fail := func(name string, err error) {
		if err != nil {
			failed[name] = err
		}
	}
	for i, name := range shopNames {
		s, err := b.newShop(name, fmt.Sprintf("v%d:", i))
		if err == nil {
			err = verifyShop(ctx, s)
		}
		fail(name, err)
	}
	n := min(250, len(b.pop.tokens)) // more than two of the book's passes of 100
	for _, batch := range b.cfg.batches {
		for _, book := range []bool{false, true} {
			c, err := b.newCleaner(book, batch, fmt.Sprintf("vc%d%v:", batch, book), b.pop)
			if err == nil {
				err = verifyCleaner(ctx, c, n)
			}
			fail(cleanerName(book, batch), err)
		}
	}
	retail, err := b.retailWeb("vh:")
	if err == nil {
		err = verifyWeb(ctx, retail, b.pop)
	}
	fail(nameHTTPRetail, err)
	if !b.srv.cluster {
		scs, err := b.scsWeb("vs:")
		if err == nil {
			err = verifyWeb(ctx, scs, b.pop)
		}
		fail(nameHTTPSCS, err)
	}
	return failed
}

// verifyShop checks the per-request operations on an empty keyspace.
func verifyShop(ctx context.Context, s shop) error {
	c := &checker{}
	a, bob, carol, unknown := tokenOf(1), tokenOf(2), tokenOf(3), tokenOf(4)

	c.ok("UpdateToken", s.UpdateToken(ctx, a, "alice", "item-a"))
	if u, ok, err := s.CheckToken(ctx, a); c.ok("CheckToken", err) && (u != "alice" || !ok) {
		c.errorf("CheckToken(a) = %q, %v; want alice, true", u, ok)
	}
	if u, ok, err := s.CheckToken(ctx, unknown); c.ok("CheckToken", err) && ok {
		c.errorf("CheckToken(unknown) = %q, true; want a miss", u)
	}
	// A user change is read back at once: a cached read must see it.
	c.ok("UpdateToken", s.UpdateToken(ctx, a, "alice2", ""))
	if u, _, err := s.CheckToken(ctx, a); c.ok("CheckToken", err) && u != "alice2" {
		c.errorf("CheckToken(a) after a user change = %q; want alice2", u)
	}

	// item-a viewed twice, item-b once.
	c.ok("UpdateToken", s.UpdateToken(ctx, bob, "bob", "item-b"))
	c.ok("UpdateToken", s.UpdateToken(ctx, a, "alice", "item-a"))
	for _, want := range []struct {
		item string
		rank int
		ok   bool
	}{{"item-a", 0, true}, {"item-b", 1, true}, {"item-never", 0, false}} {
		if r, ok, err := s.ItemRank(ctx, want.item); c.ok("ItemRank", err) && (r != want.rank || ok != want.ok) {
			c.errorf("ItemRank(%s) = %d, %v; want %d, %v", want.item, r, ok, want.rank, want.ok)
		}
	}

	// Recent items: the newest 25, newest first; a re-view moves to the front.
	var want []string
	for i := range 30 {
		c.ok("UpdateToken", s.UpdateToken(ctx, carol, "carol", "r-"+strconv.Itoa(i)))
		want = slices.Insert(want, 0, "r-"+strconv.Itoa(i))
	}
	if got, err := s.RecentItems(ctx, carol); c.ok("RecentItems", err) {
		if d := cmp.Diff(want[:25], got); d != "" {
			c.errorf("recent items after 30 views (-want +got):\n%s", d)
		}
	}
	c.ok("UpdateToken", s.UpdateToken(ctx, carol, "carol", "r-10"))
	want = append([]string{"r-10"}, slices.DeleteFunc(want[:25], func(s string) bool { return s == "r-10" })...)
	if got, err := s.RecentItems(ctx, carol); c.ok("RecentItems", err) {
		if d := cmp.Diff(want, got); d != "" {
			c.errorf("recent items after viewing r-10 again (-want +got):\n%s", d)
		}
	}

	// Carts: set a line, add one, a count of 0 removes a line.
	for _, step := range []struct {
		item  string
		count int
		want  map[string]int
	}{
		{"item-a", 3, map[string]int{"item-a": 3}},
		{"item-b", 2, map[string]int{"item-a": 3, "item-b": 2}},
		{"item-a", 0, map[string]int{"item-b": 2}},
	} {
		c.ok("AddToCart", s.AddToCart(ctx, a, step.item, step.count))
		if got, err := s.Cart(ctx, a); c.ok("Cart", err) {
			if d := cmp.Diff(step.want, got); d != "" {
				c.errorf("cart after AddToCart(%s, %d) (-want +got):\n%s", step.item, step.count, d)
			}
		}
	}
	return c.err()
}

// verifyCleaner loads n sessions, cleans them all and checks that each was
// counted once and nothing of them is left.
func verifyCleaner(ctx context.Context, cl cleaner, n int) error {
	c := &checker{}
	if !c.ok("load", cl.load(ctx, n)) {
		return c.err()
	}
	removed, err := cl.clean(ctx, func(time.Duration) {})
	if c.ok("clean", err) && removed != n {
		c.errorf("removed %d sessions; want %d", removed, n)
	}
	c.ok("after cleaning", cl.left(ctx, n))
	return c.err()
}

// verifyWeb checks a session middleware: a login sets a cookie whose
// session the following requests find, an unknown token finds no session
// and stores none, and a session loaded as the timing loads them works.
func verifyWeb(ctx context.Context, s *webShop, pop *population) error {
	c := &checker{}
	resp := s.request(http.MethodPost, "/login?user=alice", "", "")
	token := ""
	for _, ck := range resp.Cookies() {
		if ck.Name == s.cookie {
			token = ck.Value
		}
	}
	if resp.StatusCode >= 400 || token == "" {
		return fmt.Errorf("POST /login = %d with cookies %v; want a session cookie", resp.StatusCode, resp.Cookies())
	}
	if u, ok, err := s.user(ctx, token); c.ok("stored session", err) && (u != "alice" || !ok) {
		c.errorf("stored session after login = %q, %v; want alice", u, ok)
	}
	for i := range 2 {
		resp := s.request(http.MethodGet, "/", token, "alice")
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(body) != "hello alice" {
			c.errorf("GET / #%d after login = %d %q; want 200 \"hello alice\"", i+1, resp.StatusCode, body)
		}
		for _, ck := range resp.Cookies() {
			if ck.Name == s.cookie && (ck.Value != token || ck.MaxAge < 0) {
				c.errorf("GET / #%d after login set the cookie to %q (max-age %d); want the session kept", i+1, ck.Value, ck.MaxAge)
			}
		}
	}
	unknown := tokenOf(len(pop.tokens) + 7)
	if resp := s.request(http.MethodGet, "/", unknown, ""); resp.StatusCode != http.StatusUnauthorized {
		c.errorf("GET / with an unknown token = %d; want 401 (no session)", resp.StatusCode)
	}
	if _, ok, err := s.user(ctx, unknown); c.ok("stored session", err) && ok {
		c.errorf("a request with an unknown token stored a session")
	}
	if c.ok("load", s.load(ctx, 1)) {
		c.ok("GET / of a loaded session", s.get(pop, 0))
	}
	return c.err()
}
