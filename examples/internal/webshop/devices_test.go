package webshop

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/retailkit/retail"
)

const (
	firefoxLinux = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
	chromeMac    = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"
	edgeWindows  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0"
)

func TestDeviceLabel_NamesBrowserAndSystem(t *testing.T) {
	for _, tc := range []struct{ ua, want string }{
		{firefoxLinux, "Firefox on Linux"},
		{chromeMac, "Chrome on macOS"},
		{edgeWindows, "Edge on Windows"},
		{"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36", "Chrome on Android"},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1", "Safari on iOS"},
		{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/126.0.0.0 Safari/537.36", "Chrome on Linux"},
		{"curl/8.5.0", "curl"},
		{"", "Unknown browser"},
	} {
		got := deviceLabel(tc.ua)
		if got != tc.want {
			t.Errorf("deviceLabel(%q) = %q, want %q", tc.ua, got, tc.want)
		}
		if len(got) > retail.MaxLabelLen {
			t.Errorf("deviceLabel(%q) = %q, longer than MaxLabelLen", tc.ua, got)
		}
	}
}

// userAgent sets the User-Agent of every request.
type userAgent struct {
	ua   string
	next http.RoundTripper
}

func (u userAgent) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("User-Agent", u.ua)
	return u.next.RoundTrip(r)
}

// visitorWith is a visitor whose browser sends ua.
func (s *testShop) visitorWith(ua string) *visitor {
	v := s.visitor()
	v.client.Transport = userAgent{ua: ua, next: http.DefaultTransport}
	return v
}

var (
	deviceRow   = regexp.MustCompile(`(?s)<tr class="device( this)?">\s*<td class="label">([^<]*).*?</tr>`)
	deviceEndID = regexp.MustCompile(`name="id" value="([^"]*)"`)
)

type listedDevice struct {
	label, id string
	this      bool
}

// devicesOf reads the devices page.
func devicesOf(t *testing.T, v *visitor) []listedDevice {
	t.Helper()
	p := v.get("/devices")
	if p.status != http.StatusOK {
		t.Fatalf("GET /devices: status %d, want 200", p.status)
	}
	var out []listedDevice
	for _, m := range deviceRow.FindAllStringSubmatch(p.body, -1) {
		d := listedDevice{label: strings.TrimSpace(m[2]), this: m[1] != ""}
		if id := deviceEndID.FindStringSubmatch(m[0]); id != nil {
			d.id = id[1]
		}
		out = append(out, d)
	}
	return out
}

func TestShop_DevicesPageLogsOutAnotherDevice(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			s := newTestShop(t, mode.opts)
			laptop, phone := s.visitorWith(firefoxLinux), s.visitorWith(chromeMac)
			laptop.login("alice")
			phone.login("alice")
			got := devicesOf(t, laptop)
			slices.SortFunc(got, func(a, b listedDevice) int { return strings.Compare(a.label, b.label) })
			if len(got) != 2 || got[0].label != "Chrome on macOS" || got[0].this || got[0].id == "" ||
				got[1].label != "Firefox on Linux" || !got[1].this || got[1].id != "" {
				t.Fatalf("devices page of the laptop = %+v, want Chrome on macOS with a button, and this Firefox on Linux", got)
			}
			p := laptop.post("/devices/end", url.Values{"id": {got[0].id}})
			if p.status != http.StatusOK || !strings.Contains(p.body, "That device is logged out.") {
				t.Errorf("POST /devices/end: status %d, want 200 and the message", p.status)
			}
			if who := loggedInAs(phone.get("/cart")); who != "" {
				t.Errorf("the phone after it was logged out: logged in as %q, want nobody", who)
			}
			if who := loggedInAs(laptop.get("/cart")); who != "alice" {
				t.Errorf("the laptop: logged in as %q, want alice", who)
			}
			if got := devicesOf(t, laptop); len(got) != 1 || !got[0].this {
				t.Errorf("devices page after = %+v, want only this one", got)
			}
		})
	}
}

func TestShop_DevicesPageLogsOutAllOthers(t *testing.T) {
	s := newTestShop(t, shopOptions{})
	a, b, c := s.visitorWith(firefoxLinux), s.visitorWith(chromeMac), s.visitorWith(edgeWindows)
	other := s.visitorWith(firefoxLinux)
	a.login("alice")
	b.login("alice")
	c.login("alice")
	other.login("bob")
	// An ID that is not one of alice's does nothing.
	bobs := devicesOf(t, other)
	b.post("/devices/end", url.Values{"id": {retail.SessionID("nobody")}})
	p := b.post("/devices/end-others", nil)
	if p.status != http.StatusOK || !strings.Contains(p.body, "Every other device is logged out.") {
		t.Errorf("POST /devices/end-others: status %d, want 200 and the message", p.status)
	}
	for name, v := range map[string]*visitor{"a": a, "c": c} {
		if who := loggedInAs(v.get("/cart")); who != "" {
			t.Errorf("visitor %s after end-others: logged in as %q, want nobody", name, who)
		}
	}
	if who := loggedInAs(b.get("/cart")); who != "alice" {
		t.Errorf("visitor b: logged in as %q, want alice", who)
	}
	if got := devicesOf(t, other); len(got) != 1 || len(bobs) != 1 {
		t.Errorf("bob's devices = %+v, want his one session kept", got)
	}
	// The page is for logged-in visitors.
	guest := s.visitor()
	res, err := guest.client.Get(s.url + "/devices")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Request.URL.Path != "/login" {
		t.Errorf("GET /devices as nobody ended at %s, want /login", res.Request.URL.Path)
	}
}
