package main

import (
	"bytes"
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
	"github.com/retailkit/retail/retailhttp"
)

// waitLimit bounds every wait in these tests: a watchdog, not a
// performance threshold.
const waitLimit = 10 * time.Second

// testShop is a shop served by httptest.
type testShop struct {
	t     *testing.T
	url   string
	store retail.Store
}

// modes are the two session cookie modes the end-to-end tests run in.
var modes = []struct {
	name string
	opts shopOptions
}{
	{"token cookies", shopOptions{}},
	{"signed cookies", shopOptions{SigningKey: bytes.Repeat([]byte{7}, 32)}},
}

// newTestShop serves a shop over a fresh memory store.
func newTestShop(t *testing.T, opts shopOptions) *testShop {
	t.Helper()
	store, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatalf("memory.New() = %v", err)
	}
	t.Cleanup(func() { store.Close() })
	return newTestShopOn(t, store, opts)
}

func newTestShopOn(t *testing.T, store retail.Store, opts shopOptions) *testShop {
	t.Helper()
	h, err := newShop(store, newCatalog(), opts)
	if err != nil {
		t.Fatalf("newShop = %v", err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testShop{t: t, url: srv.URL, store: store}
}

// visitor is a browser: a client with its own cookie jar.
type visitor struct {
	shop   *testShop
	client *http.Client
}

func (s *testShop) visitor() *visitor {
	jar, err := cookiejar.New(nil)
	if err != nil {
		s.t.Fatal(err)
	}
	return &visitor{shop: s, client: &http.Client{Jar: jar, Timeout: waitLimit}}
}

// page is a response as a test looks at it.
type page struct {
	status int
	header http.Header
	body   string
}

func (v *visitor) get(path string) page {
	v.shop.t.Helper()
	res, err := v.client.Get(v.shop.url + path)
	return v.read("GET "+path, res, err)
}

func (v *visitor) post(path string, form url.Values) page {
	v.shop.t.Helper()
	res, err := v.client.PostForm(v.shop.url+path, form)
	return v.read("POST "+path, res, err)
}

func (v *visitor) read(what string, res *http.Response, err error) page {
	v.shop.t.Helper()
	if err != nil {
		v.shop.t.Fatalf("%s: %v", what, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		v.shop.t.Fatalf("%s: reading the body: %v", what, err)
	}
	return page{res.StatusCode, res.Header, string(body)}
}

func (v *visitor) login(user string) page {
	v.shop.t.Helper()
	p := v.post("/login", url.Values{"user": {user}})
	if p.status != http.StatusOK || loggedInAs(p) != user {
		v.shop.t.Fatalf("POST /login as %q: status %d, logged in as %q, want 200, %q", user, p.status, loggedInAs(p), user)
	}
	return p
}

func (v *visitor) setCartLine(id, count, from string) page {
	v.shop.t.Helper()
	return v.post("/cart", url.Values{"item": {id}, "count": {count}, "from": {from}})
}

// sessionCookie returns the visitor's session cookie, if the jar has one.
func (v *visitor) sessionCookie() (*http.Cookie, bool) {
	u, _ := url.Parse(v.shop.url)
	for _, c := range v.client.Jar.Cookies(u) {
		if c.Name == retailhttp.DefaultSessionCookie {
			return c, true
		}
	}
	return nil, false
}

var userRE = regexp.MustCompile(`<b id="user">([^<]*)</b>`)

// loggedInAs returns the user a page says is logged in, or "".
func loggedInAs(p page) string {
	m := userRE.FindStringSubmatch(p.body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

var linkRE = regexp.MustCompile(`<a href="[^"]*">([^<]*)</a>`)

// linksIn returns the text of the links in the element with id, in order.
func linksIn(p page, id string) []string {
	_, rest, ok := strings.Cut(p.body, `id="`+id+`"`)
	if !ok {
		return nil
	}
	end := strings.Index(rest, "</ol>")
	if e := strings.Index(rest, "</table>"); end < 0 || e >= 0 && e < end {
		end = e
	}
	if end >= 0 {
		rest = rest[:end]
	}
	var texts []string
	for _, m := range linkRE.FindAllStringSubmatch(rest, -1) {
		texts = append(texts, html.UnescapeString(m[1]))
	}
	return texts
}

func TestShop_LoginShowsTheUser(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			s := newTestShop(t, mode.opts)
			v := s.visitor()
			if got := loggedInAs(v.get("/")); got != "" {
				t.Errorf("home before login: logged in as %q, want nobody", got)
			}
			v.login("Alice & Bob")
			if _, ok := v.sessionCookie(); !ok {
				t.Fatalf("no session cookie after login")
			}
			if got := loggedInAs(v.get("/cart")); got != "Alice & Bob" {
				t.Errorf("cart page after login: logged in as %q, want %q", got, "Alice & Bob")
			}
			if n, err := s.store.SessionCount(context.Background()); n != 1 || err != nil {
				t.Errorf("SessionCount after one login = %d, %v, want 1, nil", n, err)
			}
		})
	}
}

func TestShop_LoginRejectsEmptyNames(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	v := s.visitor()
	p := v.post("/login", url.Values{"user": {"   "}})
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "Please give a name") {
		t.Errorf("POST /login with a blank name: status %d, want 400 and a message", p.status)
	}
	if _, ok := v.sessionCookie(); ok {
		t.Errorf("blank login set a session cookie")
	}
}

func TestShop_ItemPagesShowRecentlyViewedItems(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			s := newTestShop(t, mode.opts)
			v := s.visitor()
			v.login("alice")
			for _, id := range []string{"kettle", "mug", "teapot"} {
				v.get("/item?item=" + id)
			}
			p := v.get("/item?item=kettle")
			if p.status != http.StatusOK {
				t.Fatalf("GET /item?item=kettle: status %d, want 200", p.status)
			}
			want := []string{"Electric kettle", "Cast-iron teapot", "Stoneware mug"}
			if diff := cmp.Diff(want, linksIn(p, "recent")); diff != "" {
				t.Errorf("recently viewed, newest first, mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShop_AnonymousItemPagesShowNoPersonalData(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	p := s.visitor().get("/item?item=kettle")
	if p.status != http.StatusOK || strings.Contains(p.body, `id="recent"`) || !strings.Contains(p.body, "Log in</a> to buy") {
		t.Errorf("anonymous item page: status %d, want 200, no recent list, a login link; body:\n%s", p.status, p.body)
	}
}

func TestShop_CartAddsAndRemovesLines(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			s := newTestShop(t, mode.opts)
			v := s.visitor()
			v.login("alice")

			p := v.setCartLine("kettle", "2", "item")
			if !strings.Contains(p.body, `id="in-cart">In your cart: 2`) {
				t.Errorf("item page after adding 2 kettles does not say they are in the cart")
			}
			v.setCartLine("mug", "3", "item")
			p = v.get("/cart")
			if diff := cmp.Diff([]string{"Electric kettle", "Stoneware mug"}, linksIn(p, "cart")); diff != "" {
				t.Errorf("cart lines mismatch (-want +got):\n%s", diff)
			}
			if !strings.Contains(p.body, `id="total">$86.95`) || !strings.Contains(p.body, "Cart (5)") {
				t.Errorf("cart page lacks the total $86.95 (2 x $29.99 + 3 x $8.99) or the count 5")
			}

			p = v.setCartLine("kettle", "0", "cart") // the Remove button
			if diff := cmp.Diff([]string{"Stoneware mug"}, linksIn(p, "cart")); diff != "" {
				t.Errorf("cart lines after removing the kettle mismatch (-want +got):\n%s", diff)
			}
			p = v.setCartLine("mug", "0", "cart")
			if !strings.Contains(p.body, `id="empty"`) {
				t.Errorf("cart page after removing every line does not say the cart is empty")
			}
			if p := v.setCartLine("unicorn", "1", "cart"); p.status != http.StatusBadRequest {
				t.Errorf("POST /cart of an unknown item: status %d, want 400", p.status)
			}
		})
	}
}

func TestShop_AnonymousVisitorsAreAskedToLogInToBuy(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	v := s.visitor()
	for _, p := range []page{v.get("/cart"), v.setCartLine("kettle", "1", "item")} {
		if p.status != http.StatusOK || !strings.Contains(p.body, "<h1>Log in</h1>") {
			t.Errorf("anonymous cart request: status %d, want the login page", p.status)
		}
	}
	if n, err := s.store.SessionCount(context.Background()); n != 0 || err != nil {
		t.Errorf("SessionCount after anonymous visits = %d, %v, want 0, nil", n, err)
	}
}

func TestShop_PopularItemPageIsCachedOnTheSecondRequest(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	alice := s.visitor()
	alice.login("alice")
	if p := alice.get("/item?item=kettle"); p.header.Get("X-Cache") != "miss" {
		t.Errorf("alice's item page: X-Cache = %q, want miss (personal pages are not cached)", p.header.Get("X-Cache"))
	}

	// The kettle is now ranked; anonymous visitors share its cached page.
	anon := s.visitor()
	first := anon.get("/item?item=kettle")
	second := s.visitor().get("/item?item=kettle")
	got := []string{first.header.Get("X-Cache"), second.header.Get("X-Cache")}
	if diff := cmp.Diff([]string{"miss", "hit"}, got); diff != "" {
		t.Errorf("X-Cache of two anonymous GETs of a popular item mismatch (-want +got):\n%s", diff)
	}
	if first.body != second.body || second.status != http.StatusOK {
		t.Errorf("cached page differs from the rendered one, or status %d != 200", second.status)
	}
	if got := alice.get("/item?item=kettle").header.Get("X-Cache"); got != "miss" {
		t.Errorf("alice's item page after anonymous hits: X-Cache = %q, want miss", got)
	}
	if got := anon.get("/item?item=sieve").header.Get("X-Cache"); got != "miss" {
		t.Errorf("an unviewed item's page: X-Cache = %q, want miss", got)
	}
	if got := anon.get("/item?item=sieve").header.Get("X-Cache"); got != "miss" {
		t.Errorf("an unviewed item's page, again: X-Cache = %q, want miss (not popular)", got)
	}
}

func TestShop_HomeListsPopularItems(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	for i, user := range []string{"alice", "bob"} {
		v := s.visitor()
		v.login(user)
		v.get("/item?item=mug")
		if i == 0 {
			v.get("/item?item=scale")
		}
	}
	p := s.visitor().get("/")
	if diff := cmp.Diff([]string{"Stoneware mug", "Kitchen scale"}, linksIn(p, "popular")); diff != "" {
		t.Errorf("popular items mismatch (-want +got):\n%s", diff)
	}
}

func TestShop_UnknownItemIsNotFoundAndNotCounted(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	v := s.visitor()
	v.login("alice")
	if p := v.get("/item?item=unicorn"); p.status != http.StatusNotFound {
		t.Errorf("GET /item?item=unicorn: status %d, want 404", p.status)
	}
	if _, ranked, err := s.store.ItemRank(context.Background(), "unicorn"); ranked || err != nil {
		t.Errorf("ItemRank(unicorn) = ranked %v, %v, want unranked, nil (an unknown item's view must not count)", ranked, err)
	}
}

func TestShop_LogoutClearsTheSessionAndTheCookie(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			s := newTestShop(t, mode.opts)
			v := s.visitor()
			v.login("alice")
			v.setCartLine("kettle", "1", "item")
			old, _ := v.sessionCookie()

			p := v.post("/logout", nil)
			if got := loggedInAs(p); got != "" || p.status != http.StatusOK {
				t.Errorf("home after logout: status %d, logged in as %q, want 200, nobody", p.status, got)
			}
			if c, ok := v.sessionCookie(); ok {
				t.Errorf("session cookie after logout = %q, want none", c.Value)
			}
			if n, err := s.store.SessionCount(ctx); n != 0 || err != nil {
				t.Errorf("SessionCount after logout = %d, %v, want 0, nil", n, err)
			}

			// Replaying the old cookie: a token no longer names a session.
			// A signed cookie still verifies until it expires (documented),
			// but its session starts over with an empty cart.
			replay := s.visitor()
			u, _ := url.Parse(s.url)
			replay.client.Jar.SetCookies(u, []*http.Cookie{{Name: old.Name, Value: old.Value}})
			p = replay.get("/cart")
			if mode.opts.SigningKey == nil && loggedInAs(p) != "" {
				t.Errorf("old token cookie after logout still logs in as %q", loggedInAs(p))
			}
			if strings.Contains(p.body, "Electric kettle") {
				t.Errorf("old cookie after logout still shows the cart")
			}
		})
	}
}

func TestShop_RefusesCrossOriginPosts(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	req, _ := http.NewRequest(http.MethodPost, s.url+"/login", strings.NewReader("user=mallory"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.test")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin POST /login: status %d, want 403", res.StatusCode)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in different
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

var servingRE = regexp.MustCompile(`serving on (http://\S+)`)

func TestRun_ServesUntilCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, &stdout, &stderr) }()

	var base string
	deadline := time.Now().Add(waitLimit)
	for base == "" {
		if m := servingRE.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run returned %v before serving; stderr:\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("run printed no address within %v; stdout: %q", waitLimit, stdout.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	client := &http.Client{Timeout: waitLimit}
	res, err := client.Get(base + "/item?item=kettle")
	if err != nil {
		t.Fatalf("GET %s: %v", base, err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "Electric kettle") {
		t.Errorf("GET /item?item=kettle: status %d, want 200 with the kettle", res.StatusCode)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel = %v, want nil", err)
		}
	case <-time.After(waitLimit):
		t.Fatalf("run did not return within %v of cancel", waitLimit)
	}
	if !strings.Contains(stdout.String(), "shop: stopped") {
		t.Errorf("stdout = %q, want it to end with shop: stopped", stdout.String())
	}
	if stderr.String() != "" {
		t.Errorf("stderr = %q, want nothing logged", stderr.String())
	}
}

func TestRun_RejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-cookie-key", "not-hex"},
		{"-cookie-key", "abcd"}, // too short
		{"-addr", "256.0.0.1:99999"},
		{"-nope"},
	} {
		var out syncBuffer
		if err := run(context.Background(), args, &out, &out); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
	}
}
