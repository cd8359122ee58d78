package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

const (
	firefoxLinux = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
	chromeMac    = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"
)

// TestBrowser_DevicesPageLogsOutAnotherDevice logs alice in from two
// browsers with different User-Agents, finds both on the laptop's "your
// devices" page, named by browser and system, logs the phone out from
// there, and checks that the phone is logged out and the laptop is not.
func TestBrowser_DevicesPageLogsOutAnotherDevice(t *testing.T) {
	path := requireChromium(t)
	base := startShop(t)
	laptop := newBrowser(t, path, base, chromedp.UserAgent(firefoxLinux))
	phone := newBrowser(t, path, base, chromedp.UserAgent(chromeMac))

	laptop.login("alice", false)
	phone.login("alice", true)

	var this, others string
	laptop.step("devices page",
		chromedp.Click(chromedp.CSS("#devices-link")),
		chromedp.WaitVisible(chromedp.CSS("#devices")),
		waitJS(`document.querySelectorAll("#devices tr.device").length === 2`),
		into(chromedp.Text(chromedp.CSS("#devices tr.this td.label")), &this),
		into(chromedp.Text(chromedp.CSS("#devices tr.device:not(.this) td.label")), &others),
	)
	laptop.check("devices page", strings.HasPrefix(strings.TrimSpace(this), "Firefox on Linux"), "this device %q, want Firefox on Linux", this)
	laptop.check("devices page", strings.TrimSpace(others) == "Chrome on macOS", "the other device %q, want Chrome on macOS", others)

	laptop.step("log the phone out",
		chromedp.Click(chromedp.CSS("#devices tr.device:not(.this) button.end")),
		waitText("#flash", "That device is logged out."),
		waitJS(`document.querySelectorAll("#devices tr.device").length === 1`),
		waitText("#user", "alice"),
	)

	phone.step("the phone is logged out",
		chromedp.Navigate(base+"/cart"),
		chromedp.WaitVisible(chromedp.CSS(`a[href^="/login"]`)),
		waitGone("#user"),
	)
	laptop.wantSessionWorks("alice")
}
