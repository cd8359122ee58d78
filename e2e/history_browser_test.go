package e2e

// The back button across logins, logouts and "log out all other devices",
// and what the browser shows from its back/forward cache (bfcache) and its
// HTTP cache; forms posted from another site; a restart with "remember me".

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// shown is what a page shows about the visitor, and how the browser got it.
type shown struct {
	Path      string `json:"path"`
	User      string `json:"user"`      // the logged-in header's name, "" if none
	LoginLink bool   `json:"loginLink"` // the header offers "Log in"
	Cart      string `json:"cart"`      // the header's cart link, "" if none
	Persisted bool   `json:"persisted"` // restored from the back/forward cache
	NavType   string `json:"navType"`   // the navigation timing entry's type
	Transfer  int    `json:"transfer"`  // bytes over the network for the document, 0 from the HTTP cache
}

func (s shown) String() string {
	return fmt.Sprintf("%s: user %q, log-in link %v, cart %q, from bfcache %v, nav %s, transferSize %d",
		s.Path, s.User, s.LoginLink, s.Cart, s.Persisted, s.NavType, s.Transfer)
}

// watchPageshow makes every document of the tab record whether it was
// restored from the back/forward cache, and logs why a history navigation
// did not use it.
func (b *browser) watchPageshow() {
	b.t.Helper()
	// __shown numbers the pages shown in the tab, restored ones too, so
	// that back can tell the page shown after it from the one before.
	const src = `addEventListener("pageshow", e => {
		window.__persisted = e.persisted;
		window.__shown = +(sessionStorage.getItem("__shown") || 0) + 1;
		sessionStorage.setItem("__shown", window.__shown);
	});`
	if _, err := chromedp.Call(b.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src}); err != nil {
		b.t.Fatalf("adding the pageshow script: %v", err)
	}
	var mu sync.Mutex
	ended := false
	b.t.Cleanup(func() { mu.Lock(); ended = true; mu.Unlock() })
	chromedp.Listen(b.ctx, func(ev any) {
		if ev, ok := ev.(*page.EventBackForwardCacheNotUsed); ok {
			var why []string
			for _, r := range ev.NotRestoredExplanations {
				why = append(why, string(r.Reason))
			}
			mu.Lock()
			defer mu.Unlock()
			if !ended {
				b.t.Logf("bfcache not used: %s", strings.Join(why, ", "))
			}
		}
	})
}

const shownJS = `JSON.stringify((() => {
	const q = s => document.querySelector(s);
	const nav = performance.getEntriesByType("navigation")[0] || {};
	return {
		path: location.pathname + location.search,
		user: q("#user") ? q("#user").textContent : "",
		loginLink: !!q('nav a[href^="/login"]'),
		cart: q("#cart-link") ? q("#cart-link").textContent.trim() : "",
		persisted: !!window.__persisted,
		navType: nav.type || "",
		transfer: nav.transferSize || 0,
	};
})())`

// now reads what the page shows.
func (b *browser) now(name string) shown {
	b.t.Helper()
	var raw string
	b.step(name, waitJS(`document.querySelector("main")`), into(chromedp.Evaluate[string](shownJS), &raw))
	var s shown
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		b.fail(name, err)
	}
	b.t.Logf("%s: %v", name, s)
	return s
}

// back presses the back button and waits until the page at path shows
// (compared case-insensitively: html/template escapes in lower-case hex),
// or, if path is "", until the location changes; and until the page shown
// is one the shop sent for this visit: not one restored from the
// back/forward cache, nor one the HTTP cache gave without asking, both of
// which the shop's pages load again. A page that did not would fail the
// step, at its time limit.
func (b *browser) back(name, path string) shown {
	b.t.Helper()
	var from string
	var before int
	b.step(name,
		into(chromedp.Evaluate[string](`location.href`), &from),
		into(chromedp.Evaluate[int](`+(sessionStorage.getItem("__shown") || 0)`), &before),
	)
	at := fmt.Sprintf(`(location.pathname + location.search).toLowerCase() === %q`, strings.ToLower(path))
	if path == "" {
		at = fmt.Sprintf(`location.href !== %q`, from)
	}
	fresh := `!window.__persisted && !(n => n && n.type === "back_forward" && n.transferSize === 0)(performance.getEntriesByType("navigation")[0])`
	ctx, cancel := context.WithTimeout(b.ctx, stepLimit)
	defer cancel()
	if err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`history.back()`),
		waitJS(fmt.Sprintf(`(window.__shown || 0) > %d && %s && %s`, before, at, fresh)),
	); err != nil {
		// Say which page the tab shows, and how it came, not only that
		// the wait ran out.
		var raw string
		sctx, scancel := context.WithTimeout(b.ctx, 10*time.Second)
		defer scancel()
		if serr := chromedp.Do(sctx, into(chromedp.Evaluate[string](shownJS), &raw)); serr != nil {
			raw = "unknown: " + serr.Error()
		}
		b.fail(name, fmt.Errorf("%w; the tab shows %s (pages shown before the back: %d)", err, raw, before))
	}
	return b.now(name)
}

// TestBrowser_BackAfterLoginShowsNoGuestPage: a visitor browses as an
// anonymous guest, logs in from an item page, and presses back through
// the pages before the login. Those were the anonymous ones; once logged
// in, the back button must not show a page that says "Log in" as if the
// visitor were logged out (the page at that address now shows them logged
// in). With the back/forward cache, and without it (what the HTTP cache
// shows).
func TestBrowser_BackAfterLoginShowsNoGuestPage(t *testing.T) {
	backAfterLogin(t, "/item?item=mug")
}

func TestBrowser_BackAfterLoginShowsNoGuestPage_HTTPCache(t *testing.T) {
	backAfterLogin(t, "/item?item=mug", chromedp.Flag("disable-back-forward-cache", true))
}

// TestBrowser_BackOnADeviceLoggedOutElsewhere: alice fills her cart on
// the phone and goes on to an item page; on the laptop she logs out every
// other device. The phone's back button must not show her cart again, and
// its next request must be a guest's.
func TestBrowser_BackOnADeviceLoggedOutElsewhere(t *testing.T) {
	path := requireChromium(t)
	base := startShop(t)
	laptop := newBrowser(t, path, base, chromedp.UserAgent(firefoxLinux))
	phone := newBrowser(t, path, base, chromedp.UserAgent(chromeMac))
	phone.watchPageshow()

	laptop.login("alice", false)
	phone.login("alice", false)
	phone.step("fill the cart",
		chromedp.Navigate(base+"/item?item=kettle"),
		chromedp.WaitVisible(chromedp.CSS("#add")),
		chromedp.Click(chromedp.CSS(`#add button`)),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
		chromedp.Click(chromedp.CSS("#cart-link")),
		chromedp.WaitVisible(chromedp.CSS("#cart")),
		chromedp.Click(chromedp.CSS(`#cart a[href="/item?item=kettle"]`)),
		waitText("#item", "kettle"),
	)
	phone.now("phone on the item page")

	laptop.step("log out the other devices",
		chromedp.Navigate(base+"/devices"),
		chromedp.WaitVisible(chromedp.CSS("#end-others")),
		chromedp.Click(chromedp.CSS("#end-others")),
		waitText("#flash", "Every other device is logged out."),
	)

	s := phone.back("phone: back to the cart", "/cart")
	if s.User != "" || strings.Contains(s.Cart, "1 item") {
		t.Errorf("logged out from the laptop, the phone's back button shows alice's cart: %v", s)
	}
	var body string
	phone.step("phone: next request",
		chromedp.Navigate(base+"/cart"),
		chromedp.WaitVisible(chromedp.CSS("main")),
		into(chromedp.Text(chromedp.CSS("body")), &body),
	)
	s = phone.now("phone: next request")
	if s.User != "" || !s.LoginLink || strings.Contains(body, "Electric kettle") {
		t.Errorf("the phone's next request after being logged out elsewhere: %v\n%s", s, body)
	}
	s = phone.back("phone: back again, to the item page", "/item?item=kettle")
	if s.User != "" || s.Cart != "" {
		t.Errorf("after its next request showed it logged out, the phone's back button shows alice: %v", s)
	}
}

// TestBrowser_BackAfterLogoutThroughPersonalPages goes back through every
// logged-in page after a logout: none may show alice.
func TestBrowser_BackAfterLogoutThroughPersonalPages(t *testing.T) {
	path := requireChromium(t)
	base := startShop(t)
	b := newBrowser(t, path, base)
	b.watchPageshow()

	b.login("alice", false)
	b.step("browse logged in",
		chromedp.Navigate(base+"/item?item=kettle"),
		chromedp.WaitVisible(chromedp.CSS("#add")),
		chromedp.Click(chromedp.CSS(`#add button`)),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
		chromedp.Click(chromedp.CSS("#devices-link")),
		chromedp.WaitVisible(chromedp.CSS("#devices")),
		chromedp.Click(chromedp.CSS("a.brand")),
		chromedp.WaitVisible(chromedp.CSS("#catalog")),
		chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`nav a[href^="/login"]`)),
	)
	var leaked []string
	for _, p := range []string{"/", "", "/item?item=kettle"} { // /devices sends a guest to log in
		s := b.back("back to "+p, p)
		if s.User != "" || s.Cart != "" {
			leaked = append(leaked, s.String())
		}
	}
	if len(leaked) > 0 {
		t.Errorf("after the logout, the back button shows alice's pages:\n%s", strings.Join(leaked, "\n"))
	}
}

// backAfterLogin views item twice as a guest (the second view is served
// from the page cache, with an ETag), logs in from its page, and goes
// back through the login form to the item's page and the home page: each
// must show the visitor logged in.
func backAfterLogin(t *testing.T, item string, extra ...chromedp.ExecAllocatorOption) {
	path := requireChromium(t)
	base := startShop(t)
	b := newBrowser(t, path, base, extra...)
	b.watchPageshow()
	b.step("anonymous browsing",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#catalog")),
		chromedp.Click(chromedp.CSS(`#catalog a[href="`+item+`"]`)),
		chromedp.WaitVisible(chromedp.CSS("#item")),
		chromedp.Navigate(base+"/"), // a second time: the item is ranked now, its page cached
		chromedp.WaitVisible(chromedp.CSS("#catalog")),
		chromedp.Click(chromedp.CSS(`#catalog a[href="`+item+`"]`)),
		chromedp.WaitVisible(chromedp.CSS("#item")),
	)
	b.now("anonymous item page")
	b.step("login from the item page",
		chromedp.Click(chromedp.CSS(`nav a[href^="/login"]`)),
		chromedp.WaitVisible(chromedp.CSS(`input[name="user"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="user"]`), "alice"),
		chromedp.Submit(chromedp.CSS(`input[name="user"]`)),
		waitText("#user", "alice"),
	)
	b.now("after login")
	b.back("back to the login form", "")
	var stale []string
	for _, p := range []string{item, "/"} {
		s := b.back("back to "+p, p)
		if s.User != "alice" {
			stale = append(stale, s.String())
		}
	}
	if len(stale) > 0 {
		t.Errorf("logged in as alice, the back button shows pages that offer \"Log in\" as if she were not:\n%s",
			strings.Join(stale, "\n"))
	}
}

// TestBrowser_RememberMeSurvivesARestart closes the browser and starts it
// again on the same profile: a login with "remember me" is still logged in,
// one without is not.
func TestBrowser_RememberMeSurvivesARestart(t *testing.T) {
	path := requireChromium(t)
	base := startShop(t)
	for _, remember := range []bool{true, false} {
		t.Run(fmt.Sprintf("remember=%v", remember), func(t *testing.T) {
			profile := t.TempDir()
			t.Run("before", func(t *testing.T) {
				b := newBrowser(t, path, base, chromedp.UserDataDir(profile))
				b.login("alice", remember)
				b.wantSessionWorks("alice")
				// Close it as a user would (Browser.close), so that it
				// writes its cookies out; the cleanup's cancel kills it.
				ctx, cancel := context.WithTimeout(b.ctx, stepLimit)
				defer cancel()
				if err := chromedp.Cancel(ctx); err != nil {
					t.Fatalf("closing the browser: %v", err)
				}
			})
			b := newBrowser(t, path, base, chromedp.UserDataDir(profile))
			b.step("after the restart", chromedp.Navigate(base+"/cart"), chromedp.WaitVisible(chromedp.CSS("main")))
			s := b.now("after the restart")
			if remember && (s.User != "alice" || s.Cart != "Cart · 1 item") {
				t.Errorf("remembered login after a restart: %v, want alice with her cart", s)
			}
			if !remember && (s.User != "" || s.Cart != "") {
				t.Errorf("browser-session login after a restart: %v, want a stranger", s)
			}
		})
	}
}

// TestBrowser_CrossSiteFormsAreRefused: alice, logged in with a cart, visits
// another site (localhost, while the shop is 127.0.0.1) whose forms post to
// the shop's state-changing endpoints. None may change her state.
func TestBrowser_CrossSiteFormsAreRefused(t *testing.T) {
	path := requireChromium(t)
	base := startShop(t)
	forms := map[string]string{
		"logout":       `<form method=post action="` + base + `/logout"></form>`,
		"login":        `<form method=post action="` + base + `/login"><input name=user value=mallory></form>`,
		"add":          `<form method=post action="` + base + `/cart/add"><input name=item value=mug><input name=count value=5></form>`,
		"set":          `<form method=post action="` + base + `/cart"><input name=item value=kettle><input name=count value=0></form>`,
		"end-others":   `<form method=post action="` + base + `/devices/end-others"></form>`,
		"checkout":     `<form method=post action="` + base + `/checkout"><input name=order value=x></form>`,
		"get-checkout": `<form method=get action="` + base + `/checkout"></form>`,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/{name}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><body>%s<script>document.forms[0].submit()</script>`, forms[r.PathValue("name")])
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	evil := fmt.Sprintf("http://localhost:%d", l.Addr().(*net.TCPAddr).Port)

	b := newBrowser(t, path, base)
	b.login("alice", false)
	b.wantSessionWorks("alice") // a kettle in the cart
	for _, name := range []string{"logout", "login", "add", "set", "end-others", "checkout", "get-checkout"} {
		var body, loc string
		b.step(name,
			chromedp.Navigate(evil+"/"+name),
			waitJS(`location.href.startsWith(`+fmt.Sprintf("%q", base)+`)`),
			into(chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`), &body),
			into(chromedp.Location(), &loc),
		)
		t.Logf("%s: at %s: %.100q", name, loc, body)
		b.step(name+": check", chromedp.Navigate(base+"/cart"), chromedp.WaitVisible(chromedp.CSS("main")))
		if s := b.now(name + ": check"); s.User != "alice" || s.Cart != "Cart · 1 item" {
			t.Errorf("after the other site's %s form: %v, want alice with 1 item", name, s)
		}
	}
}

// TestBrowser_CheckoutAndBack places an order, then presses back and
// reloads: no second order, no cart shown again.
func TestBrowser_CheckoutAndBack(t *testing.T) {
	path := requireChromium(t)
	base := startShop(t)
	b := newBrowser(t, path, base)
	b.watchPageshow()
	b.login("alice", false)
	b.wantSessionWorks("alice")
	var order string
	b.step("checkout",
		chromedp.Click(chromedp.CSS("#cart-link")),
		chromedp.WaitVisible(chromedp.CSS("#checkout")),
		chromedp.Click(chromedp.CSS("#checkout")),
		chromedp.WaitVisible(chromedp.CSS("#place-order")),
		chromedp.Click(chromedp.CSS("#place-order")),
		chromedp.WaitVisible(chromedp.CSS("#order")),
		into(chromedp.Text(chromedp.CSS("#order")), &order),
	)
	t.Logf("placed: %s", order)
	s := b.back("back from the confirmation", "")
	if strings.Contains(s.Cart, "1 item") {
		t.Errorf("back from the confirmation shows the cart still full: %v", s)
	}
}
