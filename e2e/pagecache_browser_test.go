package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// visit is what the browser showed after a navigation, and where the
// document came from.
type visit struct {
	how    string
	user   string // the logged-in header's name, "" if the page offers "Log in"
	status int64
	xcache string
	cached bool // the browser served the document from its own cache
}

func (v visit) String() string {
	return fmt.Sprintf("%s: user %q, status %d, X-Cache %q, from the browser's cache %v", v.how, v.user, v.status, v.xcache, v.cached)
}

// open runs actions that navigate to an item page, waits for it to load
// and returns what it shows.
func (b *browser) open(how string, actions ...chromedp.Action[chromedp.Void]) visit {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepLimit)
	defer cancel()
	res, err := chromedp.RunResponse(ctx, actions...)
	if err != nil {
		b.fail(how, err)
	}
	v := visit{how: how, status: res.Status, cached: res.FromDiskCache || res.FromPrefetchCache}
	if x, ok := res.Headers["X-Cache"].(string); ok {
		v.xcache = x
	}
	b.step(how,
		chromedp.WaitVisible(chromedp.CSS("#item")),
		into(chromedp.Evaluate[string](`(e => e ? e.textContent : "")(document.querySelector("#user"))`), &v.user),
	)
	b.t.Log(v)
	return v
}

// wireStatuses records the status codes of the responses the tab
// received over the network, including the 304s of revalidations, which
// the tab reports to the page as the cached 200.
type wireStatuses struct {
	mu    sync.Mutex
	codes map[int64]int
}

func (w *wireStatuses) listen(b *browser) {
	b.t.Helper()
	w.codes = make(map[int64]int)
	err := chromedp.Listen(b.ctx, func(ev any) {
		if ev, ok := ev.(*network.EventResponseReceivedExtraInfo); ok {
			w.mu.Lock()
			w.codes[ev.StatusCode]++
			w.mu.Unlock()
		}
	})
	if err != nil {
		b.t.Fatalf("listening to the tab: %v", err)
	}
}

// waitFor waits until n responses with status code came over the network,
// and reports how many did, after at most stepLimit.
func (w *wireStatuses) waitFor(code int64, n int) int {
	deadline := time.Now().Add(stepLimit)
	for {
		w.mu.Lock()
		got := w.codes[code]
		w.mu.Unlock()
		if got >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBrowser_LoggedInVisitorDoesNotGetTheAnonymousCopy is the stale login
// page: a visitor views an item page served from the page cache, logs in,
// and opens the item again, by its link and by its typed URL. Each time the page must show the logged-in header,
// not a copy the browser kept from the anonymous visit.
func TestBrowser_LoggedInVisitorDoesNotGetTheAnonymousCopy(t *testing.T) {
	path := requireChromium(t)
	base := startShop(t)
	const itemPath = "/item?item=kettle"

	// Rank the kettle and cache its page, as other visitors would.
	client := &http.Client{Timeout: stepLimit}
	var xcache string
	for range 2 {
		res, err := client.Get(base + itemPath)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		xcache = res.Header.Get("X-Cache")
	}
	if xcache != "hit" {
		t.Fatalf("second anonymous GET %s: X-Cache %q, want hit (the page cache must hold the page)", itemPath, xcache)
	}

	b := newBrowser(t, path, base)
	var wire wireStatuses
	wire.listen(b)
	link := chromedp.CSS(`#catalog a[href="` + itemPath + `"]`)
	var anonymous []visit
	for i := range 2 {
		b.step("home", chromedp.Navigate(base+"/"), chromedp.WaitVisible(link))
		anonymous = append(anonymous, b.open(fmt.Sprintf("anonymous visit %d", i+1), chromedp.Click(link)))
	}
	for _, v := range anonymous {
		if v.user != "" {
			t.Fatalf("%v: want an anonymous page", v)
		}
	}
	if v := anonymous[0]; v.xcache != "hit" {
		t.Fatalf("%v: want X-Cache hit (served from the page cache)", v)
	}

	// Log in from the home page: the login returns there, so the item page
	// the browser holds is still the anonymous visit's.
	b.step("login",
		chromedp.Navigate(base+"/"),
		chromedp.Click(chromedp.CSS(`a[href^="/login"]`)),
		chromedp.WaitVisible(chromedp.CSS(`input[name="user"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="user"]`), "alice"),
		chromedp.Submit(chromedp.CSS(`input[name="user"]`)),
		chromedp.WaitVisible(chromedp.CSS("#user")),
		chromedp.WaitVisible(link),
	)
	visits := []visit{b.open("by its link", chromedp.Click(link))}
	visits = append(visits, b.open("by its typed URL", chromedp.Navigate(base+itemPath)))

	var stale []string
	for _, v := range visits {
		if v.user != "alice" {
			stale = append(stale, v.String())
		}
	}
	if len(stale) > 0 {
		t.Errorf("after logging in as alice, the item page did not show her:\n%s", strings.Join(stale, "\n"))
	}
	// The second anonymous visit asked, with the ETag, and was told that
	// the browser's copy was current.
	if n := wire.waitFor(http.StatusNotModified, 1); n < 1 {
		t.Errorf("the browser got %d responses 304 Not Modified, want 1 (the second anonymous visit's)", n)
	}
}
