package webshop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
	"github.com/retailkit/retail/examples/internal/webshop/webshoptest"
	"github.com/retailkit/retail/retailhttp"
)

// waitLimit bounds every wait in these tests: a watchdog, not a
// performance threshold.
const waitLimit = webshoptest.WaitLimit

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

// setCartLine sets a line's count from the cart page.
func (v *visitor) setCartLine(id, count string) page {
	v.shop.t.Helper()
	return v.post("/cart", url.Values{"item": {id}, "count": {count}})
}

// addToCart adds units of an item from its page.
func (v *visitor) addToCart(id, count string) page {
	v.shop.t.Helper()
	return v.post("/cart/add", url.Values{"item": {id}, "count": {count}})
}

// replayCookie returns a new visitor whose jar holds only c.
func (s *testShop) replayCookie(c *http.Cookie) *visitor {
	v := s.visitor()
	u, _ := url.Parse(s.url)
	v.client.Jar.SetCookies(u, []*http.Cookie{{Name: c.Name, Value: c.Value}})
	return v
}

var cartLinkRE = regexp.MustCompile(`id="cart-link">Cart · (\d+) items?<`)

// cartUnits returns the unit count a page's header shows, or -1 if it shows
// no cart.
func cartUnits(p page) int {
	m := cartLinkRE.FindStringSubmatch(p.body)
	if m == nil {
		return -1
	}
	n := 0
	fmt.Sscan(m[1], &n)
	return n
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

func TestShop_LoginRejectsBadNames(t *testing.T) {
	for _, name := range []string{"   ", "al\xffice"} {
		s := newTestShop(t, shopOptions{})
		v := s.visitor()
		p := v.post("/login", url.Values{"user": {name}})
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, "Please give a name") {
			t.Errorf("POST /login with the name %q: status %d, want 400 and a message", name, p.status)
		}
		if _, ok := v.sessionCookie(); ok {
			t.Errorf("login as %q set a session cookie", name)
		}
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
			want := []string{"Cast-iron teapot", "Stoneware mug"}
			if diff := cmp.Diff(want, linksIn(p, "recent")); diff != "" {
				t.Errorf("recently viewed, newest first, without the kettle itself, mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShop_AnonymousItemPagesShowNoPersonalDataAndCreateNoSession(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	v := s.visitor()
	for _, path := range []string{"/", "/item?item=kettle", "/item?item=mug", "/cart", "/login"} {
		p := v.get(path)
		if p.status != http.StatusOK || strings.Contains(p.body, `id="recent"`) || cartUnits(p) >= 0 {
			t.Errorf("anonymous GET %s: status %d, want 200, no recent list, no cart link", path, p.status)
		}
	}
	if p := v.get("/item?item=kettle"); !strings.Contains(p.body, `action="/cart/add"`) {
		t.Errorf("anonymous item page has no add-to-cart form: guests may shop")
	}
	if c, ok := v.sessionCookie(); ok {
		t.Errorf("plain page views set a session cookie %q", c.Value)
	}
	if n, err := s.store.SessionCount(context.Background()); n != 0 || err != nil {
		t.Errorf("SessionCount after plain page views = %d, %v, want 0, nil", n, err)
	}
}

func TestShop_CartAddsAndRemovesLines(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			s := newTestShop(t, mode.opts)
			v := s.visitor()
			v.login("alice")

			p := v.addToCart("kettle", "1")
			p = v.addToCart("kettle", "1") // adding twice makes two
			if !strings.Contains(p.body, `id="in-cart">In your cart: 2`) {
				t.Errorf("item page after adding a kettle twice does not say 2 are in the cart")
			}
			if !strings.Contains(p.body, `id="flash"`) || !strings.Contains(p.body, "Added 1 × Electric kettle") {
				t.Errorf("item page after adding shows no message saying so")
			}
			if p := v.get("/item?item=kettle"); strings.Contains(p.body, `id="flash"`) {
				t.Errorf("the message is shown again on the next page; it must show once")
			}
			v.addToCart("mug", "3")
			p = v.get("/cart")
			if diff := cmp.Diff([]string{"Electric kettle", "Stoneware mug"}, linksIn(p, "cart")); diff != "" {
				t.Errorf("cart lines mismatch (-want +got):\n%s", diff)
			}
			if !strings.Contains(p.body, `id="total">$86.95`) || cartUnits(p) != 5 {
				t.Errorf("cart page lacks the total $86.95 (2 x $29.99 + 3 x $8.99) or says %d items, want 5", cartUnits(p))
			}

			p = v.setCartLine("kettle", "0") // the Remove button
			if diff := cmp.Diff([]string{"Stoneware mug"}, linksIn(p, "cart")); diff != "" {
				t.Errorf("cart lines after removing the kettle mismatch (-want +got):\n%s", diff)
			}
			p = v.setCartLine("mug", "1")
			if cartUnits(p) != 1 || !strings.Contains(p.body, "Cart · 1 item<") {
				t.Errorf("after setting the mugs to 1 the header says %d items, want \"1 item\"", cartUnits(p))
			}
			p = v.setCartLine("mug", "0")
			if !strings.Contains(p.body, `id="empty"`) {
				t.Errorf("cart page after removing every line does not say the cart is empty")
			}
			for _, bad := range []page{v.setCartLine("unicorn", "1"), v.addToCart("unicorn", "1"), v.addToCart("kettle", "0")} {
				if bad.status != http.StatusBadRequest {
					t.Errorf("bad cart request: status %d, want 400", bad.status)
				}
			}
		})
	}
}

// The scenario: a guest fills a cart, logs in, keeps it, comes back
// to the page they were on, and the old token is dead.
func TestShop_GuestCartSurvivesLogin(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			s := newTestShop(t, mode.opts)
			v := s.visitor()
			v.get("/item?item=mug")
			if _, ok := v.sessionCookie(); ok {
				t.Fatalf("viewing an item started a session")
			}
			p := v.addToCart("kettle", "1")
			guest, ok := v.sessionCookie()
			if !ok || loggedInAs(p) != "" || cartUnits(p) != 1 {
				t.Fatalf("after a guest's add to cart: cookie %v, logged in as %q, %d items; want a guest session holding 1", ok, loggedInAs(p), cartUnits(p))
			}
			v.get("/item?item=teapot")

			login := v.get("/item?item=kettle")
			if !strings.Contains(login.body, `href="/login?next=%2fitem%3fitem%3dkettle"`) {
				t.Errorf("the item page's login link does not lead back to it")
			}
			p = v.post("/login", url.Values{"user": {"alice"}, "next": {"/item?item=kettle"}})
			if loggedInAs(p) != "alice" || !strings.Contains(p.body, `<h1 id="item">Electric kettle</h1>`) {
				t.Fatalf("after login: logged in as %q, want alice, back on the kettle's page", loggedInAs(p))
			}
			if got := linksIn(v.get("/cart"), "cart"); !cmp.Equal(got, []string{"Electric kettle"}) {
				t.Errorf("cart after login = %v, want the guest's kettle", got)
			}
			if got := linksIn(v.get("/item?item=mug"), "recent"); !cmp.Equal(got, []string{"Electric kettle", "Cast-iron teapot"}) {
				t.Errorf("recently viewed after login = %v, want the guest's views (the kettle, the teapot; not the mug itself)", got)
			}
			now, _ := v.sessionCookie()
			if now.Value == guest.Value {
				t.Errorf("login kept the guest's cookie value: session fixation")
			}
			replay := s.replayCookie(guest)
			if p := replay.get("/cart"); loggedInAs(p) != "" || strings.Contains(p.body, "Electric kettle") {
				t.Errorf("the guest cookie still works after login")
			}
			if n, err := s.store.SessionCount(context.Background()); n != 1 || err != nil {
				t.Errorf("SessionCount = %d, %v, want 1, nil (the guest session became alice's)", n, err)
			}
		})
	}
}

func TestShop_LoginRefusesToLeaveTheSite(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	for _, next := range []string{"https://evil.test/", "//evil.test/", "/\\evil.test", "javascript:alert(1)",
		"/\t/evil.test/", "/\n/evil.test/", "/\r/evil.test/", "/%09/evil.test/x\x00", "\\\\evil.test"} {
		v := s.visitor()
		v.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		p := v.post("/login", url.Values{"user": {"alice"}, "next": {next}})
		if loc := p.header.Get("Location"); p.status != http.StatusSeeOther || loc != "/" {
			t.Errorf("POST /login next=%q: status %d, Location %q, want 303 to /", next, p.status, loc)
		}
	}
}

func TestShop_PopularItemPageIsCachedOnTheSecondRequest(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	alice := s.visitor()
	alice.login("alice")
	if p := alice.get("/item?item=kettle"); p.header.Get("X-Cache") != "bypass" {
		t.Errorf("alice's item page: X-Cache = %q, want bypass (personal pages are not cached)", p.header.Get("X-Cache"))
	}

	// The kettle is ranked; anonymous visitors share its cached page.
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
	if got := alice.get("/item?item=kettle").header.Get("X-Cache"); got != "bypass" {
		t.Errorf("alice's item page after anonymous hits: X-Cache = %q, want bypass", got)
	}
}

// Every view counts, anonymous ones too: three anonymous views of an item
// rank it, and its next anonymous request is served from the cache.
func TestShop_AnonymousViewsRankItemsAndFillTheCache(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	for range 3 {
		s.visitor().get("/item?item=sieve")
	}
	if got := s.visitor().get("/item?item=sieve").header.Get("X-Cache"); got != "hit" {
		t.Errorf("after 3 anonymous views: X-Cache = %q, want hit", got)
	}
	top, err := s.store.TopItems(context.Background(), 1)
	if err != nil || len(top) != 1 || top[0] != (retail.ItemViews{Item: "sieve", Views: 4}) {
		t.Errorf("TopItems(1) = %v, %v, want the sieve with 4 views (cache hits count)", top, err)
	}
	if p := s.visitor().get("/"); !cmp.Equal(linksIn(p, "popular"), []string{"Fine sieve"}) {
		t.Errorf("popular items = %v, want the sieve", linksIn(p, "popular"))
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
			v.addToCart("kettle", "1")
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

			// Replaying the old cookie, token or signed: the session is
			// over, and the request does not bring it back.
			replay := s.replayCookie(old)
			for range 3 {
				p = replay.get("/item?item=kettle")
				if loggedInAs(p) != "" || cartUnits(p) >= 0 {
					t.Errorf("old cookie after logout: logged in as %q, cart shown %v; want nobody", loggedInAs(p), cartUnits(p) >= 0)
				}
			}
			if n, err := s.store.SessionCount(ctx); n != 0 || err != nil {
				t.Errorf("SessionCount after replaying the old cookie = %d, %v, want 0, nil", n, err)
			}
		})
	}
}

// The scenario with -idle-timeout 2s, on a clock the test moves: a
// guest adds the kettle, logs in as alice, keeps the cart, stays logged in
// while requesting a page every second, and is logged out after 3 idle
// seconds.
func TestShop_IdleTimeoutEndsTheSession(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			clock := retail.NewManualClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
			store, err := memory.New(memory.Options{Clock: clock, IdleTimeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { store.Close() })
			s := newTestShopOn(t, store, mode.opts)
			v := s.visitor()
			v.addToCart("kettle", "1")
			v.login("alice")
			for i := range 5 {
				clock.Advance(time.Second)
				p := v.get("/cart")
				if loggedInAs(p) != "alice" || !cmp.Equal(linksIn(p, "cart"), []string{"Electric kettle"}) {
					t.Fatalf("request %d, a second after the last: logged in as %q, cart %v; want alice with the kettle", i+1, loggedInAs(p), linksIn(p, "cart"))
				}
			}
			clock.Advance(3 * time.Second)
			p := v.get("/cart")
			if loggedInAs(p) != "" || strings.Contains(p.body, "Electric kettle") {
				t.Errorf("after 3 idle seconds: logged in as %q (cart shown: %v), want logged out", loggedInAs(p), strings.Contains(p.body, "Electric kettle"))
			}
			if _, ok := v.sessionCookie(); ok {
				t.Errorf("the expired session's cookie was not cleared")
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
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin POST /login: status %d, want 403", res.StatusCode)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || !strings.Contains(string(body), "sent from another site") {
		t.Errorf("cross-origin POST /login answered %q:\n%s\nwant the shop's page saying why", ct, body)
	}
}

func TestRun_ServesUntilCanceled(t *testing.T) {
	shop := webshoptest.Start(t, func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		return Run(ctx, args, stdout, stderr, Extension{})
	})
	base := shop.Base
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

	if err := shop.Stop(); err != nil {
		t.Errorf("run after cancel = %v, want nil", err)
	}
	if !strings.Contains(shop.Stdout.String(), "shop: stopped") {
		t.Errorf("stdout = %q, want it to end with shop: stopped", shop.Stdout.String())
	}
	if shop.Stderr.String() != "" {
		t.Errorf("stderr = %q, want nothing logged", shop.Stderr.String())
	}
}

func TestRun_RejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-cookie-key", "not-hex"},
		{"-cookie-key", "abcd"}, // too short
		{"-addr", "256.0.0.1:99999"},
		{"-nope"},
	} {
		var out webshoptest.Output
		if err := Run(context.Background(), args, &out, &out, Extension{}); err == nil {
			t.Errorf("Run(%q) = nil, want an error", args)
		}
	}
}

func TestShop_NotFoundPagesAreStyledAndUncached(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	v := s.visitor()
	for _, path := range []string{"/nowhere", "/item?item=unicorn", "/item"} {
		p := v.get(path)
		if p.status != http.StatusNotFound || !strings.Contains(p.body, `<h1 id="error">Not found</h1>`) || !strings.Contains(p.body, `class="brand"`) {
			t.Errorf("GET %s: status %d, want 404 with the shop's styled page; body:\n%s", path, p.status, p.body)
		}
		if got := p.header.Get("X-Cache"); got == "hit" {
			t.Errorf("GET %s: X-Cache = %q, a 404 must not be served from the cache", path, got)
		}
	}
}

func TestShop_ServesAFavicon(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	v := s.visitor()
	for _, path := range []string{"/favicon.ico", "/favicon.svg"} {
		p := v.get(path)
		if p.status != http.StatusOK || p.header.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(p.body, "<svg") {
			t.Errorf("GET %s: status %d, Content-Type %q, want 200 and an SVG", path, p.status, p.header.Get("Content-Type"))
		}
	}
	if p := v.get("/"); !strings.Contains(p.body, `<link rel="icon" href="/favicon.svg"`) {
		t.Errorf("home page does not link its icon")
	}
}

func TestShop_CheckoutSummarisesAndPlacesTheOrder(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	v := s.visitor()
	v.client.CheckRedirect = nil
	if p := v.get("/checkout"); !strings.Contains(p.body, `id="empty"`) {
		t.Errorf("checkout with an empty cart does not lead to the (empty) cart")
	}
	v.addToCart("kettle", "2")
	v.addToCart("mug", "1")
	p := v.get("/checkout")
	if diff := cmp.Diff([]string{"Electric kettle", "Stoneware mug"}, linksIn(p, "summary")); diff != "" {
		t.Errorf("order summary lines mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(p.body, `id="total">$68.97`) || !strings.Contains(p.body, `id="place-order"`) {
		t.Errorf("order summary lacks the total $68.97 (2 x $29.99 + $8.99) or the button to place the order")
	}
	order := orderIn(t, p)
	p = v.post("/checkout", url.Values{"order": {order}})
	if !strings.Contains(p.body, `id="order">Your order number is <b>`+order+`</b>`) || !strings.Contains(p.body, `id="total">$68.97`) {
		t.Errorf("order confirmation lacks the summary's order number %s or the total; body:\n%s", order, p.body)
	}
	if p := v.get("/cart"); !strings.Contains(p.body, `id="empty"`) || cartUnits(p) != 0 {
		t.Errorf("the cart is not empty after the order was placed")
	}
}

func TestShop_PopularItemsShowWholeViewCounts(t *testing.T) {
	ctx := context.Background()
	s := newTestShop(t, shopOptions{})
	for range 3 {
		s.visitor().get("/item?item=mug")
	}
	if err := s.store.RescaleViews(ctx, 10, 0.5); err != nil {
		t.Fatal(err)
	}
	p := s.visitor().get("/")
	if !strings.Contains(p.body, "Stoneware mug</a> · 2 views") || strings.Contains(p.body, "1.5 views") {
		t.Errorf("home after a rescale of 3 views: want %q (1.5 shown rounded); body:\n%s", "2 views", p.body)
	}
}

// TestShop_DebugVarsPublishTheStoresStats reads /debug/vars after some
// visits: the expvar variable "retail" holds the store's Stats, reading it
// counts nothing, and the command line, which may hold the cookie key, is
// left out.
func TestShop_DebugVarsPublishTheStoresStats(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	s.visitor().get("/item?item=kettle") // ranks the kettle: a miss
	s.visitor().get("/item?item=kettle") // a hit
	alice := s.visitor()
	alice.login("alice") // starts a session
	alice.get("/item?item=kettle")

	readVars := func() map[string]json.RawMessage {
		t.Helper()
		p := s.visitor().get("/debug/vars")
		if p.status != http.StatusOK || !strings.HasPrefix(p.header.Get("Content-Type"), "application/json") {
			t.Fatalf("GET /debug/vars: status %d, Content-Type %q, want 200, JSON", p.status, p.header.Get("Content-Type"))
		}
		var vars map[string]json.RawMessage
		if err := json.Unmarshal([]byte(p.body), &vars); err != nil {
			t.Fatalf("GET /debug/vars: %v; body:\n%s", err, p.body)
		}
		return vars
	}
	vars := readVars()
	var got retail.Stats
	if err := json.Unmarshal(vars["retail"], &got); err != nil {
		t.Fatalf("/debug/vars \"retail\" = %s: %v", vars["retail"], err)
	}
	if got.PageHits != 1 || got.PageMisses != 1 || got.PageBypasses == 0 || got.SessionsStarted != 1 {
		t.Errorf("/debug/vars \"retail\" = %+v, want 1 page hit, 1 miss, some bypasses (alice's pages) and 1 session started", got)
	}
	if diff := cmp.Diff(s.store.Stats(), got); diff != "" {
		t.Errorf("/debug/vars \"retail\" differs from the store's Stats (-store +published):\n%s", diff)
	}
	if _, ok := vars["cmdline"]; ok {
		t.Errorf("/debug/vars shows the command line, which may hold -cookie-key")
	}
	if _, ok := vars["memstats"]; !ok {
		t.Errorf("/debug/vars lacks expvar's memstats; keys: %v", slices.Sorted(maps.Keys(vars)))
	}
	if again := readVars()["retail"]; string(again) != string(vars["retail"]) {
		t.Errorf("reading /debug/vars changed the Stats: %s, then %s", vars["retail"], again)
	}
}

// orderIn returns the order number that an order summary's form places.
func orderIn(t *testing.T, p page) string {
	t.Helper()
	m := regexp.MustCompile(`name="order" value="([0-9A-F]{8})"`).FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("order summary has no order number to place; body:\n%s", p.body)
	}
	return m[1]
}

// Submitting the order form twice, as a double click does, places one
// order: the second submission, concurrent or later, places nothing.
func TestShop_PlacesAnOrderOnce(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	v := s.visitor()
	v.addToCart("kettle", "1")
	order := orderIn(t, v.get("/checkout"))
	const submits = 8
	placed := make(chan bool, submits)
	var wg sync.WaitGroup
	for range submits {
		wg.Go(func() {
			res, err := v.client.PostForm(s.url+"/checkout", url.Values{"order": {order}})
			if err != nil {
				t.Error(err)
				placed <- false
				return
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			placed <- strings.Contains(string(body), `id="order">Your order number is`)
		})
	}
	wg.Wait()
	close(placed)
	n := 0
	for ok := range placed {
		if ok {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d concurrent submissions of one order summary placed %d orders, want 1", submits, n)
	}
	// The form submitted again later, with a cart filled again (the back
	// button, say), places nothing either: its order is placed.
	v.addToCart("mug", "1")
	if p := v.post("/checkout", url.Values{"order": {order}}); strings.Contains(p.body, "Your order number is") {
		t.Errorf("a later submission of the placed order %s placed an order", order)
	}
}

// Pages of a visitor with a session are no-store: with no-cache a browser
// may still show them from its history, and the back button after a
// logout would show the cart of the visitor who left.
func TestShop_PersonalPagesAreNotStored(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	v := s.visitor()
	v.addToCart("kettle", "1")
	v.login("alice")
	for _, path := range []string{"/", "/cart", "/item?item=kettle", "/checkout", "/devices"} {
		if p := v.get(path); p.header.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s with a session: Cache-Control %q, want no-store", path, p.header.Get("Cache-Control"))
		}
	}
}

// A cart line takes at most maxCount units, however many additions.
func TestShop_CartLineStaysWithinTheShopsLimit(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	v := s.visitor()
	for range 3 {
		v.addToCart("kettle", strconv.Itoa(maxCount))
	}
	if p := v.get("/cart"); cartUnits(p) != maxCount {
		t.Errorf("cart after adding %d kettles three times holds %d units, want %d", maxCount, cartUnits(p), maxCount)
	}
}

// Of two order summaries (two tabs, or a reload), the latest places the
// order: the older places nothing, and does not stop the latest.
func TestShop_OnlyTheLatestSummaryPlacesTheOrder(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	v := s.visitor()
	v.addToCart("kettle", "1")
	older := orderIn(t, v.get("/checkout"))
	latest := orderIn(t, v.get("/checkout"))
	if p := v.post("/checkout", url.Values{"order": {older}}); strings.Contains(p.body, "Your order number is") {
		t.Errorf("the older summary %s placed an order", older)
	}
	if p := v.post("/checkout", url.Values{"order": {latest}}); !strings.Contains(p.body, `id="order">Your order number is <b>`+latest+`</b>`) {
		t.Errorf("the latest summary %s placed no order after the older one was submitted; body:\n%s", latest, p.body)
	}
}

// stalledStore is a Store whose session refreshes and page reads never
// answer, as a Redis that is down or stalled: each waits until its
// context ends.
type stalledStore struct{ retail.Store }

func (s stalledStore) RefreshSession(ctx context.Context, token, item string) (string, bool, error) {
	<-ctx.Done()
	return "", false, ctx.Err()
}

func (s stalledStore) Page(ctx context.Context, key string) ([]byte, bool, error) {
	<-ctx.Done()
	return nil, false, ctx.Err()
}

// rankingDownStore is a Store whose view counts do not answer, as while
// their Redis node fails over.
type rankingDownStore struct{ retail.Store }

func (s rankingDownStore) TopItems(ctx context.Context, n int) ([]retail.ItemViews, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// The home page lists the catalog, without the popular items, while the
// view counts do not answer, rather than fail.
func TestShop_TheHomePageGoesWithoutThePopularItemsWhileTheyDoNotAnswer(t *testing.T) {
	store, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	s := newTestShopOn(t, rankingDownStore{store}, shopOptions{RequestTimeout: 2 * time.Second})
	p := s.visitor().get("/")
	if p.status != http.StatusOK || !strings.Contains(p.body, "Electric kettle") {
		t.Errorf("GET / while the view counts do not answer = %d, want 200 with the catalog; body:\n%s", p.status, p.body)
	}
}

// A request whose store does not answer ends at the shop's request timeout
// with an error page, rather than hang for as long as the store does.
func TestShop_AStalledStoreFailsRequestsAtTheDeadline(t *testing.T) {
	store, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	live := newTestShopOn(t, store, shopOptions{})
	v := live.visitor()
	if p := v.addToCart("kettle", "1"); p.status != http.StatusOK {
		t.Fatalf("adding a kettle to a guest's cart: status %d", p.status)
	}
	stalled := newTestShopOn(t, stalledStore{store}, shopOptions{RequestTimeout: 50 * time.Millisecond})
	v.shop = stalled // the same host: v's cookie goes along
	if p := v.get("/cart"); p.status < 500 {
		t.Errorf("GET /cart with a session while the store stalls = %d, want a 5xx error page", p.status)
	}
	if p := v.get("/item?item=kettle"); p.status < 500 && !strings.Contains(p.body, "kettle") {
		t.Errorf("GET /item while the store stalls = %d %q, want the page or an error page", p.status, p.body)
	}
}

// TestScheduleMissing_SchedulesOnlyRowsWithoutACopy loses the schedule and
// all rows but one, as a Redis restarted without persistence loses them,
// and checks that one pass schedules exactly the rows without a copy, and
// that a pass over rows that are all cached schedules nothing.
func TestScheduleMissing_SchedulesOnlyRowsWithoutACopy(t *testing.T) {
	ctx := context.Background()
	store, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cat := newCatalog()
	if err := store.SetRow(ctx, "kettle", []byte(`{"id":"kettle"}`)); err != nil {
		t.Fatal(err)
	}
	n, err := scheduleMissing(ctx, store, cat)
	if err != nil {
		t.Fatalf("scheduleMissing = %v", err)
	}
	if want := len(cat) - 1; n != want {
		t.Errorf("scheduleMissing scheduled %d rows, want %d", n, want)
	}
	due, err := store.ClaimDueRows(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.DeleteFunc(cat.ids(), func(id string) bool { return id == "kettle" })
	slices.Sort(due)
	slices.Sort(want)
	if diff := cmp.Diff(want, due); diff != "" {
		t.Errorf("rows due after the pass (-want +got):\n%s", diff)
	}

	for _, id := range cat.ids() {
		if err := store.SetRow(ctx, id, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := scheduleMissing(ctx, store, cat); n != 0 || err != nil {
		t.Errorf("scheduleMissing over cached rows = %d, %v; want 0, nil", n, err)
	}
}

// The login page's own "Log in" link goes where its form goes: a login
// through it does not land on the login form again, logged in.
func TestShop_LoginPageLinkDoesNotLeadBackToTheForm(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	v := s.visitor()
	for path, link := range map[string]string{
		"/login?next=/cart": `href="/login?next=%2fcart"`,
		"/login?next=" + url.QueryEscape("/item?item=kettle"): `href="/login?next=%2fitem%3fitem%3dkettle"`,
	} {
		p := strings.ToLower(v.get(path).body)
		if strings.Contains(p, `href="/login?next=%2flogin`) || !strings.Contains(p, link) {
			t.Errorf("GET %s: its \"Log in\" link is not %s:\n%s", path, link, p)
		}
	}
	p := v.post("/login", url.Values{"user": {" "}, "next": {"/cart"}})
	if strings.Contains(strings.ToLower(p.body), `href="/login?next=%2flogin`) {
		t.Errorf("the failed login's \"Log in\" link leads back to the login form:\n%s", p.body)
	}
}

// A name the form takes (40 characters, within its maxlength of 64) but
// the store does not (80 bytes) is refused with a message that says why.
func TestShop_LoginNameOverLongInBytesIsExplained(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	p := s.visitor().post("/login", url.Values{"user": {strings.Repeat("é", 40)}})
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "counts as 2") {
		t.Errorf("POST /login with 40 × é: status %d, want 400 and a message that accented letters count double:\n%s", p.status, p.body)
	}
}
