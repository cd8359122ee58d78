package webshop

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
)

// What an attacker tried on the shop, with what it must do instead.

// newShopAsRun serves a shop over a memory store on a manual clock, set up
// as Run sets them up with its default flags: the Store's lifetime is the
// longer of -lifetime (24 hours) and -remember (30 days), the shop's
// Lifetime the shorter.
func newShopAsRun(t *testing.T) (*testShop, *retail.ManualClock) {
	t.Helper()
	clock := retail.NewManualClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	lifetime, remember := retail.DefaultLifetime, 30*24*time.Hour
	store, err := memory.New(memory.Options{Clock: clock, Lifetime: max(lifetime, remember)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return newTestShopOn(t, store, shopOptions{Lifetime: lifetime, Remember: remember}), clock
}

// usedFor replays cookie c on s every 20 minutes (within the idle timeout)
// for d, and returns the page /cart shows it then.
func usedFor(s *testShop, clock *retail.ManualClock, c *http.Cookie, d time.Duration) page {
	v := s.replayCookie(c)
	for elapsed := time.Duration(0); elapsed < d; elapsed += 20 * time.Minute {
		clock.Advance(20 * time.Minute)
		v.get("/cart")
	}
	return v.get("/cart")
}

// A guest session ends at the shop's -lifetime (24 hours), as a login
// without "remember me" does, not at the Store's, which Run sizes for
// "remember me" (30 days): in token-cookie mode a copy of the cookie,
// kept past its Max-Age and used within the idle timeout, would keep the
// guest's cart and values that long.
func TestShop_AGuestSessionEndsAtTheShopsLifetime(t *testing.T) {
	s, clock := newShopAsRun(t)
	guest := s.visitor()
	guest.addToCart("kettle", "1")
	c, ok := guest.sessionCookie()
	if !ok {
		t.Fatal("no session cookie after a guest's add to cart")
	}
	if p := usedFor(s, clock, c, 25*time.Hour); cartUnits(p) >= 0 {
		t.Errorf("a guest session started 25 hours ago (-lifetime 24h) still has a cart of %d", cartUnits(p))
	}

	s, clock = newShopAsRun(t)
	alice := s.visitor()
	alice.login("alice")
	if c, ok = alice.sessionCookie(); !ok {
		t.Fatal("no session cookie after a login")
	}
	if p := usedFor(s, clock, c, 25*time.Hour); loggedInAs(p) != "" {
		t.Errorf("a login without \"remember me\" 25 hours ago is still %q's", loggedInAs(p))
	}
}

// "Log out all other devices" ends a copy of this device's cookie too
// (taken off the browser): the device's session moves to a new token, in
// both cookie modes.
func TestShop_EndingOtherDevicesEndsACopyOfThisDevicesCookie(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			s := newTestShop(t, mode.opts)
			victim := s.visitorWith(firefoxLinux)
			victim.login("alice")
			c, _ := victim.sessionCookie()
			thief := s.replayCookie(c)
			if who := loggedInAs(thief.get("/cart")); who != "alice" {
				t.Fatalf("the copied cookie is %q's, want alice's to begin with", who)
			}
			p := victim.post("/devices/end-others", nil)
			if p.status != http.StatusOK {
				t.Fatalf("POST /devices/end-others: status %d", p.status)
			}
			if loggedInAs(p) != "alice" || !strings.Contains(p.body, "Every other device is logged out.") {
				t.Errorf("ending the other devices shows %q's page without its flash; want alice's, with it", loggedInAs(p))
			}
			if who := loggedInAs(thief.get("/cart")); who != "" {
				t.Errorf("after \"Log out all other devices\" the copied cookie is still %q's", who)
			}
		})
	}
}

// With -secure the session cookie's name has the __Host- prefix, so that
// no subdomain, and no page over plain HTTP, can set or shadow it.
func TestShop_ASecureShopNamesItsCookieForTheHostOnly(t *testing.T) {
	store, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h, err := newShop(store, newCatalog(), shopOptions{Secure: true})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "https://shop.test/login", strings.NewReader("user=alice"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	cookies := w.Result().Cookies()
	if len(cookies) == 0 {
		t.Fatal("a login set no cookie")
	}
	for _, c := range cookies {
		if !strings.HasPrefix(c.Name, "__Host-") || !c.Secure {
			t.Errorf("a -secure shop sets cookie %q (Secure %v), want a Secure __Host- cookie", c.Name, c.Secure)
		}
	}
}

// A link from another site to /checkout (which a SameSite=Lax cookie and
// the cross-origin protection let through, being a GET) does not number a
// new summary, which would void the one the visitor has open.
func TestShop_ACrossSiteLinkToCheckoutLeavesTheOpenSummary(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	v := s.visitor()
	v.login("alice")
	v.addToCart("kettle", "1")
	order := orderIn(t, v.get("/checkout"))
	for _, site := range []string{"cross-site", "same-site"} {
		req, err := http.NewRequest(http.MethodGet, s.url+"/checkout", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Sec-Fetch-Site", site)
		req.Header.Set("Sec-Fetch-Mode", "navigate")
		res, err := v.client.Do(req)
		if p := v.read("GET /checkout from a "+site+" link", res, err); !strings.Contains(p.body, `id="cart"`) {
			t.Errorf("GET /checkout from a %s link shows %q, want the cart page", site, p.body)
		}
	}
	if p := v.post("/checkout", url.Values{"order": {order}}); !strings.Contains(p.body, "Your order number is") {
		t.Errorf("the summary open before the links does not place its order")
	}
}

// The order placed is the cart the summary showed: a cart changed since
// (in another tab, or by whoever else holds the session) is not ordered
// unseen; the visitor is sent to a new summary, and that one places.
func TestShop_PlacingAnOrderRefusesACartChangedSinceTheSummary(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			s := newTestShop(t, mode.opts)
			v := s.visitor()
			v.login("alice")
			v.addToCart("mug", "1")
			order := orderIn(t, v.get("/checkout"))
			v.addToCart("grinder", "5") // another tab
			p := v.post("/checkout", url.Values{"order": {order}})
			if strings.Contains(p.body, "Your order number is") {
				t.Fatalf("a summary of one mug placed an order of %v", linksIn(p, "summary"))
			}
			if !strings.Contains(p.body, "Your cart changed since the order summary") {
				t.Errorf("a refused order does not say why; page:\n%s", p.body)
			}
			again := orderIn(t, p) // the new summary, shown at once
			if p := v.post("/checkout", url.Values{"order": {again}}); !strings.Contains(p.body, "Your order number is") {
				t.Errorf("the new summary does not place its order; page:\n%s", p.body)
			}
		})
	}
}

// A sweep of malformed requests, logged in and not, in both cookie modes:
// none answers 500 or panics.
func TestShop_MalformedRequestsGetNoServerError(t *testing.T) {
	long := strings.Repeat("a", 70000)
	type request struct {
		method, target, ctype, body string
		cookie                      string // NAME, LIVE and UPPER: the cookie's name, a live session's value, upper-cased
		header                      map[string]string
	}
	var reqs []request
	for _, target := range []string{
		"/item?item=%ff", "/item?item=kettle&item=mug", "/item?item=" + long[:5000], "/item?item=kettle%00",
		"/item?item=kettle;x=1", "/item?%zz", "/?item=kettle&_=1", "/cart?item=kettle", "/login?next=%ff",
		"/login?next=" + long[:5000], "/devices?x", "/checkout?item=kettle", "/%2e%2e/item?item=kettle", "//item?item=kettle",
		"/item/?item=kettle", "/ITEM?item=kettle", "/favicon.ico?item=kettle",
	} {
		reqs = append(reqs, request{method: "GET", target: target}, request{method: "GET", target: target, cookie: "NAME=LIVE"},
			request{method: "HEAD", target: target})
	}
	for _, path := range []string{"/login", "/cart", "/cart/add", "/logout", "/devices/end", "/devices/end-others", "/checkout"} {
		for _, body := range []string{
			"user=%ff&item=%ff&count=%ff", "user=" + long[:100] + "&count=1e9&item=kettle", "item=kettle&count=99999999999999999999",
			"item=kettle&count=-1", "item=kettle&count=1&count=2&item=mug", "user=a%00b", "user=%e2%80%ae", "id=" + long[:300],
			"order=" + long[:5000], "user=" + url.QueryEscape(strings.Repeat("é", 32)) + "&remember=1", "%zz=1", long,
		} {
			for _, ctype := range []string{"application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain", ""} {
				reqs = append(reqs, request{method: "POST", target: path, ctype: ctype, body: body},
					request{method: "POST", target: path, ctype: ctype, body: body, cookie: "NAME=LIVE"})
			}
		}
	}
	for _, value := range []string{
		strings.Repeat("A", 4097), `"LIVE"`, strings.Repeat("0", 32), "%ff", "..", "." + strings.Repeat("A", 43), "LIVEx", "UPPER",
		"x; " + strings.Repeat("NAME=x; ", 40) + "NAME=LIVE",
	} {
		cookie := "NAME=" + value
		for _, target := range []string{"/", "/cart", "/item?item=kettle", "/devices"} {
			reqs = append(reqs, request{method: "GET", target: target, cookie: cookie})
		}
		reqs = append(reqs,
			request{method: "POST", target: "/cart/add", ctype: "application/x-www-form-urlencoded", body: "item=kettle&count=1", cookie: cookie},
			request{method: "POST", target: "/login", ctype: "application/x-www-form-urlencoded", body: "user=bob", cookie: cookie})
	}
	for _, h := range []map[string]string{
		{"If-None-Match": "*"}, {"If-None-Match": `"` + long[:5000]}, {"Authorization": "x"}, {"User-Agent": long[:8000]},
		{"User-Agent": "\xff\xfe Firefox/ Windows"}, {"Host": "evil.test"}, {"Accept-Encoding": "gzip"},
	} {
		reqs = append(reqs, request{method: "GET", target: "/item?item=kettle", header: h},
			request{method: "POST", target: "/login", ctype: "application/x-www-form-urlencoded", body: "user=ua", header: h})
	}
	for _, method := range []string{"OPTIONS", "PUT", "DELETE", "PATCH", "get", "TRACE", "CONNECT"} {
		reqs = append(reqs, request{method: method, target: "/cart", cookie: "NAME=LIVE"}, request{method: method, target: "/item?item=kettle"})
	}

	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			store, err := memory.New(memory.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			h, err := newShop(store, newCatalog(), mode.opts)
			if err != nil {
				t.Fatal(err)
			}
			serve := func(r *http.Request) (w *httptest.ResponseRecorder) {
				defer func() {
					if v := recover(); v != nil {
						t.Errorf("%s %.60s: panic %v", r.Method, r.URL, v)
					}
				}()
				w = httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w
			}
			login := func() *http.Cookie { // a session of its own for each request: one may end it
				r := httptest.NewRequest(http.MethodPost, "http://shop.test/login", strings.NewReader("user=alice"))
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				return serve(r).Result().Cookies()[0]
			}
			for _, q := range reqs {
				r := httptest.NewRequest(q.method, "http://shop.test"+q.target, strings.NewReader(q.body))
				if q.ctype != "" {
					r.Header.Set("Content-Type", q.ctype)
				}
				if q.cookie != "" {
					live := login()
					r.Header.Set("Cookie", strings.NewReplacer("NAME", live.Name, "LIVE", live.Value, "UPPER", strings.ToUpper(live.Value)).Replace(q.cookie))
				}
				for k, v := range q.header {
					if k == "Host" {
						r.Host = v
					}
					r.Header.Set(k, v)
				}
				if w := serve(r); w != nil && w.Code >= 500 {
					t.Errorf("%s %.60s (body %.60q, cookie %.40q, header %.40v): status %d", q.method, q.target, q.body, q.cookie, q.header, w.Code)
				}
			}
		})
	}
}

// A cart emptied since the summary (in another tab) places nothing, and
// the visitor is told why on the cart page the summary sends them to.
func TestShop_PlacingAnOrderOfACartEmptiedSinceTheSummarySaysWhy(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	v := s.visitor()
	v.addToCart("mug", "1")
	order := orderIn(t, v.get("/checkout"))
	v.setCartLine("mug", "0") // another tab
	p := v.post("/checkout", url.Values{"order": {order}})
	if strings.Contains(p.body, "Your order number is") {
		t.Fatal("an emptied cart placed an order")
	}
	if !strings.Contains(p.body, "Your cart changed since the order summary") {
		t.Errorf("the refused order does not say why; page:\n%s", p.body)
	}
}
