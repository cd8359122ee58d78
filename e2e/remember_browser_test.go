package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// sessionCookie returns the shop's session cookie as the browser keeps it.
func (b *browser) sessionCookie(name string) *network.Cookie {
	b.t.Helper()
	res, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.base + "/"}})
	if err != nil {
		b.fail(name, err)
	}
	for _, c := range res.Cookies {
		if c.Name == "retail_session" {
			return c
		}
	}
	b.fail(name, fmt.Errorf("no retail_session cookie among %d", len(res.Cookies)))
	return nil
}

// login logs in as user from the login form, ticking "remember me" if
// remember, and waits for the logged-in header.
func (b *browser) login(user string, remember bool) {
	b.t.Helper()
	actions := []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(b.base + "/login"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="user"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="user"]`), user),
	}
	if remember {
		actions = append(actions, chromedp.Click(chromedp.CSS(`input[name="remember"]`)))
	}
	actions = append(actions,
		chromedp.Submit(chromedp.CSS(`input[name="user"]`)),
		waitText("#user", user),
	)
	b.step("login as "+user, actions...)
}

// wantSessionWorks checks that the logged-in visitor keeps their session
// across pages and can fill a cart.
func (b *browser) wantSessionWorks(user string) {
	b.t.Helper()
	var got, cartLink string
	b.step("session of "+user,
		chromedp.Navigate(b.base+"/item?item=kettle"),
		chromedp.WaitVisible(chromedp.CSS("#add")),
		chromedp.Click(chromedp.CSS(`#add button`)),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
		into(chromedp.Text(chromedp.CSS("#user")), &got),
		into(chromedp.Text(chromedp.CSS("#cart-link")), &cartLink),
	)
	b.check("session of "+user, got == user, "#user %q, want %q", got, user)
	b.check("session of "+user, strings.TrimSpace(cartLink) == "Cart · 1 item", "#cart-link %q, want Cart · 1 item", cartLink)
}

// TestBrowser_RememberMe logs in without and with "remember me": without,
// the session cookie has no expiry (the browser drops it when it closes);
// with, it expires in about 30 days, the shop's -remember. Both sessions
// work.
func TestBrowser_RememberMe(t *testing.T) {
	path := requireChromium(t)
	base := startShop(t)
	b := newBrowser(t, path, base)

	b.login("alice", false)
	c := b.sessionCookie("browser-session cookie")
	b.check("browser-session cookie", c.Expires <= 0, "cookie expires at %v (%v), want no Expires (-1): a browser-session cookie", c.Expires, time.Unix(int64(c.Expires), 0))
	b.wantSessionWorks("alice")
	c = b.sessionCookie("browser-session cookie after use")
	b.check("browser-session cookie after use", c.Expires <= 0, "cookie expires at %v, want no Expires", c.Expires)

	b.step("logout",
		chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`a[href^="/login"]`)),
		waitGone("#user"),
	)

	b.login("bob", true)
	c = b.sessionCookie("remembered cookie")
	expires := time.Unix(int64(c.Expires), 0)
	far := time.Now().Add(29 * 24 * time.Hour)
	b.check("remembered cookie", expires.After(far) && expires.Before(time.Now().Add(31*24*time.Hour)),
		"cookie expires at %v, want about 30 days from now (after %v)", expires, far)
	b.wantSessionWorks("bob")
}
