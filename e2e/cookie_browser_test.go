package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestBrowser_PlantedCookieDoesNotLogTheVisitorOut plants, as another site
// under the same domain or a page on a deeper path could, a session cookie
// for /cart beside the logged-in visitor's own: the browser sends the
// planted one first there. The visitor stays logged in on /cart, and the
// browser keeps their own cookie (a response clearing "the" session cookie
// would delete it and keep the planted one).
func TestBrowser_PlantedCookieDoesNotLogTheVisitorOut(t *testing.T) {
	path := requireChromium(t)
	base := startShop(t)
	b := newBrowser(t, path, base)

	b.login("alice", false)
	own := b.sessionCookie("alice's cookie")
	host := strings.TrimPrefix(base, "http://")
	host = host[:strings.LastIndex(host, ":")]
	for _, planted := range []string{"planted", strings.Repeat("0", 32)} { // junk; a well-formed token of no session
		if _, err := chromedp.Call(b.ctx, network.SetCookie, network.SetCookieParams{
			Name: "retail_session", Value: planted, Domain: host, Path: "/cart",
		}); err != nil {
			b.fail("plant "+planted, err)
		}
		var sent string
		b.step("cart with "+planted+" planted",
			chromedp.Navigate(base+"/cart"),
			waitText("#user", "alice"),
			into(chromedp.Evaluate[string](`document.querySelector("#user").textContent`), &sent),
		)
		b.check("cart with "+planted+" planted", strings.Contains(sent, "alice"), "#user %q, want alice", sent)
		after := b.sessionCookie("alice's cookie after the cart")
		b.check("alice's cookie after the cart", after.Value == own.Value && after.Path == "/",
			"the browser's session cookie for / is %q (path %s), want alice's %q", after.Value, after.Path, own.Value)
	}
	b.wantSessionWorks("alice")
}
