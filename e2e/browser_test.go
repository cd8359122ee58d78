package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// stepLimit bounds each browser step: a watchdog, not a performance
// threshold.
const stepLimit = 30 * time.Second

// findChromium returns the Chromium binary to drive: $RETAIL_CHROMIUM,
// /usr/bin/chromium, or chromium or chromium-browser on the PATH.
func findChromium() (string, bool) {
	if p := os.Getenv("RETAIL_CHROMIUM"); p != "" {
		// Named, it is used: a wrong name fails the test instead of
		// skipping it.
		return p, true
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium", true
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, true
		}
	}
	return "", false
}

// requireChromium returns the Chromium to drive, or skips the test (fails
// it under RETAIL_REQUIRE_BROWSER=1) if there is none.
func requireChromium(t *testing.T) string {
	t.Helper()
	path, ok := findChromium()
	if !ok {
		const why = "no Chromium: none at $RETAIL_CHROMIUM, /usr/bin/chromium, or chromium/chromium-browser on the PATH (apt-get install chromium)"
		if os.Getenv("RETAIL_REQUIRE_BROWSER") == "1" {
			t.Fatal(why + "; RETAIL_REQUIRE_BROWSER=1")
		}
		t.Skip(why)
	}
	return path
}

// lockedBuffer is the shop's output, written by the process's copiers and
// read by the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// shopBuild is the example shop's binary, built once for the test binary's
// tests into dir, which TestMain removes.
var shopBuild struct {
	once     sync.Once
	dir, bin string
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shopBuild.dir != "" {
		os.RemoveAll(shopBuild.dir)
	}
	os.Exit(code)
}

// shopBinary builds the example shop the first time a test needs it, and
// returns the binary's path.
func shopBinary(t *testing.T) string {
	t.Helper()
	shopBuild.once.Do(func() {
		if shopBuild.dir, shopBuild.err = os.MkdirTemp("", "retail-e2e-shop"); shopBuild.err != nil {
			return
		}
		shopBuild.bin = filepath.Join(shopBuild.dir, "shop")
		start := time.Now()
		build := exec.Command("go", "build", "-o", shopBuild.bin, ".")
		build.Dir = "../examples/shop" // a module of its own: this builds with or without go.work
		if out, err := build.CombinedOutput(); err != nil {
			shopBuild.err = fmt.Errorf("go build ./examples/shop: %v\n%s", err, out)
			return
		}
		t.Logf("built the shop in %v", time.Since(start).Round(time.Millisecond))
	})
	if shopBuild.err != nil {
		t.Fatal(shopBuild.err)
	}
	return shopBuild.bin
}

// startShop builds the example shop, serves it on a free loopback port, on
// the memory backend unless args say otherwise, and returns its base URL.
// It is stopped when the test ends.
func startShop(t *testing.T, args ...string) string {
	t.Helper()
	bin := shopBinary(t)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	var out lockedBuffer
	cmd := exec.Command(bin, append([]string{"-addr", addr}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the shop: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("shop exited with %v", err)
			}
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("shop did not stop within 15s of SIGINT")
		}
		if t.Failed() {
			t.Logf("shop output:\n%s", out.String())
		}
	})

	base := "http://" + addr
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, err := client.Get(base + "/")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return base
			}
			err = fmt.Errorf("status %d", res.StatusCode)
		}
		select {
		case err := <-exited:
			t.Fatalf("shop exited before serving: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("shop not serving at %s after 15s: %v\n%s", base, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// browser is a headless Chromium tab driven by a test.
type browser struct {
	t       *testing.T
	ctx     context.Context // the tab
	base    string
	shotDir string
}

// newBrowser starts headless Chromium at path with a fresh profile and the
// options extra; it is closed when the test ends.
func newBrowser(t *testing.T, path, base string, extra ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900),
	)
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// chromedp logs from goroutines of its own, which may outlive the
	// test; logging through t after it ends panics, so the log stops at
	// cleanup.
	var (
		logMu  sync.Mutex
		logEnd bool
	)
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		if !logEnd {
			t.Logf(format, args...)
		}
	}
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithErrorf(logf))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		logMu.Lock()
		logEnd = true
		logMu.Unlock()
	})
	// Start the browser now, under a watchdog: the context of the first
	// call lives as long as the browser, so it has no timeout of its own.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("starting Chromium (%s): %v", path, err)
		}
	case <-time.After(stepLimit):
		t.Fatalf("Chromium (%s) did not start within %v", path, stepLimit)
	}
	shotDir := os.Getenv("RETAIL_E2E_ARTIFACTS")
	if shotDir == "" {
		shotDir = t.TempDir()
	} else if err := os.MkdirAll(shotDir, 0o755); err != nil {
		t.Fatalf("artifacts dir: %v", err)
	}
	return &browser{t: t, ctx: ctx, base: base, shotDir: shotDir}
}

// step runs actions; on failure it saves a screenshot of the page, logs
// its path and fails the test.
func (b *browser) step(name string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepLimit)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(name, err)
	}
}

// fail saves a screenshot and fails the test with name and err.
func (b *browser) fail(name string, err error) {
	b.t.Helper()
	var png []byte
	var loc string
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if serr := chromedp.Do(ctx, into(chromedp.Location(), &loc), into(chromedp.FullScreenshot(90), &png)); serr != nil {
		b.t.Logf("no screenshot: %v", serr)
	} else {
		file := strings.NewReplacer("/", "_", " ", "_").Replace(b.t.Name()) + "-" + strings.ReplaceAll(name, " ", "_") + ".png"
		path := filepath.Join(b.shotDir, file)
		if werr := os.WriteFile(path, png, 0o644); werr != nil {
			b.t.Logf("writing the screenshot: %v", werr)
		} else {
			b.t.Logf("screenshot of %s at the failure: %s", loc, path)
		}
	}
	b.t.Fatalf("%s: %v", name, err)
}

// check fails step name unless cond holds.
func (b *browser) check(name string, cond bool, format string, args ...any) {
	b.t.Helper()
	if !cond {
		b.fail(name, fmt.Errorf(format, args...))
	}
}

// into makes an action that stores a's value in *p.
func into[T any](a chromedp.Action[T], p *T) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		v, err := a(ctx, t)
		*p = v
		return chromedp.Void{}, err
	}
}

// waitJS waits until the JavaScript expression is true on a loaded page.
// Unlike a poll in the page, it survives the navigations a click starts:
// an evaluation that fails because the page went away is retried.
func waitJS(expr string) chromedp.Action[chromedp.Void] {
	return pollJS("waiting for "+expr, nil, expr)
}

// pollJS runs first (if not nil) and evaluates expr on the loaded page
// until it is true, every 50 ms until the step's context ends; what names
// the wait in the error.
func pollJS(what string, first chromedp.Action[chromedp.Void], expr string) chromedp.Action[chromedp.Void] {
	full := fmt.Sprintf(`document.readyState === "complete" && !!(%s)`, expr)
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		var last error
		for {
			if first != nil {
				if _, err := first(ctx, t); err != nil {
					return chromedp.Void{}, err
				}
			}
			ok, err := chromedp.Evaluate[bool](full)(ctx, t)
			if err == nil && ok {
				return chromedp.Void{}, nil
			}
			last = err
			select {
			case <-ctx.Done():
				return chromedp.Void{}, fmt.Errorf("%s: %w (last evaluation error: %v)", what, ctx.Err(), last)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// waitText waits until the element sel exists and its text contains want.
func waitText(sel, want string) chromedp.Action[chromedp.Void] {
	return waitJS(fmt.Sprintf(`(e => !!e && e.textContent.includes(%q))(document.querySelector(%q))`, want, sel))
}

// waitGone waits until the page has no element sel.
func waitGone(sel string) chromedp.Action[chromedp.Void] {
	return waitJS(fmt.Sprintf(`document.querySelector(%q) === null`, sel))
}

func TestBrowser_ShopFlow(t *testing.T) {
	path := requireChromium(t)
	base := startShop(t)
	start := time.Now()
	defer func() { t.Logf("browser part took %v", time.Since(start).Round(time.Millisecond)) }()
	b := newBrowser(t, path, base)

	// Home: the catalog is listed.
	var catalog string
	b.step("home",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#catalog")),
		into(chromedp.Text(chromedp.CSS("#catalog")), &catalog),
	)
	b.check("home", strings.Contains(catalog, "Electric kettle") && strings.Contains(catalog, "Stoneware mug"),
		"#catalog %q does not list the kettle and the mug", catalog)

	// An item page, reached by its catalog link.
	var item string
	b.step("item page",
		chromedp.Click(chromedp.CSS(`#catalog a[href="/item?item=kettle"]`)),
		chromedp.WaitVisible(chromedp.CSS("#item")),
		into(chromedp.Text(chromedp.CSS("#item")), &item),
		chromedp.WaitVisible(chromedp.CSS("#add")),
	)
	b.check("item page", item == "Electric kettle", "#item %q, want Electric kettle", item)

	// A guest adds it to the cart.
	var flash, cartLink string
	b.step("guest add to cart",
		chromedp.Click(chromedp.CSS(`#add button`)),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
		into(chromedp.Text(chromedp.CSS("#flash")), &flash),
		into(chromedp.Text(chromedp.CSS("#cart-link")), &cartLink),
	)
	b.check("guest add to cart", strings.Contains(flash, "Electric kettle"), "#flash %q does not name the kettle", flash)
	b.check("guest add to cart", strings.TrimSpace(cartLink) == "Cart · 1 item", "#cart-link %q, want Cart · 1 item", cartLink)

	// Logging in as alice keeps the cart.
	var user string
	b.step("login",
		chromedp.Click(chromedp.CSS(`a[href^="/login"]`)),
		chromedp.WaitVisible(chromedp.CSS(`input[name="user"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="user"]`), "alice"),
		chromedp.Submit(chromedp.CSS(`input[name="user"]`)),
		chromedp.WaitVisible(chromedp.CSS("#user")),
		into(chromedp.Text(chromedp.CSS("#user")), &user),
		into(chromedp.Text(chromedp.CSS("#cart-link")), &cartLink),
	)
	b.check("login", user == "alice", "#user %q, want alice", user)
	b.check("login", strings.TrimSpace(cartLink) == "Cart · 1 item", "after login #cart-link %q, want Cart · 1 item (the guest's cart)", cartLink)

	// The cart page: set the kettle's quantity to 3.
	var count string
	b.step("change quantity",
		chromedp.Click(chromedp.CSS("#cart-link")),
		chromedp.WaitVisible(chromedp.CSS("#cart")),
		chromedp.SetValue(chromedp.CSS(`#cart input[type="number"]`), "3"),
		chromedp.Click(chromedp.CSS(`#cart input[type="number"] ~ button`)),
		waitText("#cart-link", "Cart · 3 items"),
		chromedp.WaitVisible(chromedp.CSS("#cart")),
		into(chromedp.Value(chromedp.CSS(`#cart input[type="number"]`)), &count),
	)
	b.check("change quantity", count == "3", "quantity input %q after the update, want 3", count)

	// Remove the line: the cart is empty.
	b.step("remove",
		chromedp.Click(chromedp.CSS(`#cart input[type="hidden"][name="count"][value="0"] ~ button`)),
		chromedp.WaitVisible(chromedp.CSS("#empty")),
		waitText("#cart-link", "Cart · 0 items"),
		waitGone("#cart"),
	)

	// Log out: nobody is logged in.
	b.step("logout",
		chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`a[href^="/login"]`)),
		waitGone("#user"),
	)
	var loc string
	b.step("after logout", into(chromedp.Location(), &loc))
	b.check("after logout", strings.HasPrefix(loc, base), "location %q is not the shop", loc)
}

// The back button after a logout shows no page of the visitor who left:
// personal pages are no-store, so the browser asks the shop again, which
// knows no session, instead of showing its copy from the history.
func TestBrowser_BackAfterLogoutShowsNoPersonalPage(t *testing.T) {
	path := requireChromium(t)
	base := startShop(t)
	b := newBrowser(t, path, base)

	var user string
	b.step("login and fill the cart",
		chromedp.Navigate(base+"/item?item=kettle"),
		chromedp.WaitVisible(chromedp.CSS("#add")),
		chromedp.Click(chromedp.CSS(`#add button`)),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="user"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="user"]`), "alice"),
		chromedp.Submit(chromedp.CSS(`input[name="user"]`)),
		chromedp.WaitVisible(chromedp.CSS("#user")),
		chromedp.Click(chromedp.CSS("#cart-link")),
		chromedp.WaitVisible(chromedp.CSS("#cart")),
		into(chromedp.Text(chromedp.CSS("#user")), &user),
	)
	b.check("login and fill the cart", user == "alice", "#user %q, want alice", user)
	b.step("logout",
		chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`a[href^="/login"]`)),
		waitGone("#user"),
	)
	// A page the browser restores from its back/forward cache may leave
	// this step's script context unusable: a regression may then show as
	// a timeout here, with a screenshot of what the browser shows.
	var loc, body string
	b.step("back",
		chromedp.Evaluate[chromedp.Void](`history.back()`),
		waitJS(`location.pathname === "/cart"`),
		chromedp.WaitVisible(chromedp.CSS("main")),
		into(chromedp.Location(), &loc),
		into(chromedp.Text(chromedp.CSS("body")), &body),
	)
	b.check("back", !strings.Contains(body, "alice") && !strings.Contains(body, "Electric kettle"),
		"back at %s after the logout shows the page of the visitor who left:\n%s", loc, body)
}
