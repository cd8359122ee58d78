package e2e

import (
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/retailkit/retail/internal/redistest"
)

// balancer is a load balancer in front of shop processes: it sends every
// request to the one it is set to, as one that moves a visitor between
// processes does, the browser seeing one origin throughout.
type balancer struct {
	url    string
	target atomic.Pointer[url.URL]
}

// newBalancer starts a balancer that sends requests to base.
func newBalancer(t *testing.T, base string) *balancer {
	t.Helper()
	b := &balancer{}
	b.sendTo(t, base)
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(b.target.Load())
		r.Out.Host = r.In.Host // the shop sees the origin the browser does
	}}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	b.url = srv.URL
	return b
}

// sendTo sends the requests that follow to the shop at base.
func (b *balancer) sendTo(t *testing.T, base string) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	b.target.Store(u)
}

// reloadUntil loads the page at u until the JavaScript expression holds on
// it, as a visitor who reloads does: what another process changed reaches
// this one within the server's invalidation delay, not at once (see the
// rueidisbackend package doc). The step's limit bounds it.
func reloadUntil(u, expr string) chromedp.Action[chromedp.Void] {
	return pollJS("reloading "+u+" until "+expr, chromedp.Navigate(u), expr)
}

// textHas is a JavaScript expression: the element sel exists and its text
// contains want.
func textHas(sel, want string) string {
	return fmt.Sprintf(`(e => !!e && e.textContent.includes(%q))(document.querySelector(%q))`, want, sel)
}

// TestBrowser_TwoProcessesOnRedis: two shop processes on one private
// redis-server, each with a Store of its own (client-side caching and the
// tables that keep sessions and logout marks decoded), behind a balancer
// that moves the visitor from one to the other, as across a deploy. In
// Chromium:
//   - a guest fills the cart on A, views another item, and logs in there;
//     B shows alice, her cart and the item she viewed among her recent
//     items;
//   - what she adds on B, A shows, though A has held her session since;
//   - she logs out on A; her old cookie, set again in the browser, is
//     logged out on B, which held the session too.
//
// The changes reach the other process within the server's invalidation
// delay, so the steps that cross processes reload until they show; a
// process that missed the server's message would serve what it held for
// the shop's CacheTTL (a minute), past the step limit.
func TestBrowser_TwoProcessesOnRedis(t *testing.T) {
	path := requireChromium(t)
	srv, err := redistest.StartServer()
	if err != nil {
		redistest.Skip(t, "no Redis server: "+err.Error())
	}
	t.Cleanup(func() { srv.Close() })
	a := startShop(t, "-redis", srv.Addr())
	b := startShop(t, "-redis", srv.Addr())
	lb := newBalancer(t, a)
	br := newBrowser(t, path, lb.url)

	br.step("a guest on A",
		chromedp.Navigate(lb.url+"/item?item=kettle"),
		chromedp.WaitVisible(chromedp.CSS("#add")),
		chromedp.Click(chromedp.CSS(`#add button`)), // the guest's session starts
		waitText("#cart-link", "Cart · 1 item"),
		chromedp.Navigate(lb.url+"/item?item=mug"),
		waitText("#cart-link", "Cart · 1 item"),
	)
	br.login("alice", false)
	br.step("alice's cart on A", chromedp.Navigate(lb.url+"/cart"), waitText("#cart", "Electric kettle"))
	before := br.sessionCookie("the cookie before the logout")

	lb.sendTo(t, b)
	br.step("alice on B",
		reloadUntil(lb.url+"/item?item=kettle", textHas("#user", "alice")),
		waitText("#cart-link", "Cart · 1 item"),
		waitText("#recent", "Stoneware mug"),
	)
	br.step("add the mug on B",
		chromedp.Navigate(lb.url+"/item?item=mug"),
		chromedp.WaitVisible(chromedp.CSS("#add")),
		chromedp.Click(chromedp.CSS(`#add button`)),
		waitText("#cart-link", "Cart · 2 items"),
	)

	lb.sendTo(t, a)
	start := time.Now()
	br.step("A shows the mug B added", reloadUntil(lb.url+"/cart", textHas("#cart", "Stoneware mug")))
	t.Logf("A showed the cart line B added %v after the switch", time.Since(start))
	br.step("log out on A",
		chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`a[href^="/login"]`)),
		waitGone("#user"),
	)

	// The visitor's old cookie, replayed: on B, which held the session.
	if _, err := chromedp.Call(br.ctx, network.SetCookie, network.SetCookieParams{
		Name: before.Name, Value: before.Value, URL: lb.url + "/", HTTPOnly: &before.HTTPOnly, SameSite: before.SameSite,
	}); err != nil {
		br.fail("replay the old cookie", err)
	}
	if now := br.sessionCookie("the replayed cookie"); now.Value != before.Value {
		br.fail("replay the old cookie", fmt.Errorf("the browser sends %q, not the old cookie %q", now.Value, before.Value))
	}
	lb.sendTo(t, b)
	start = time.Now()
	br.step("B has logged it out", reloadUntil(lb.url+"/cart", `document.querySelector("#user") === null && !!document.querySelector('a[href^="/login"]')`))
	t.Logf("B showed the replayed cookie logged out %v after the switch", time.Since(start))
}
