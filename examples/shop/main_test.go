package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/retailkit/retail/examples/internal/webshop/webshoptest"
)

const waitLimit = webshoptest.WaitLimit

// startShop runs this command with args until the test ends and returns
// its base URL.
func startShop(t *testing.T, args ...string) string {
	t.Helper()
	return webshoptest.Start(t, run, args...).Base
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return res.StatusCode, string(body)
}

// sample returns the value of the first sample of metric whose labels
// include every one of labels, or "" if there is none.
func sample(exposition, metric string, labels ...string) string {
	for line := range strings.Lines(exposition) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), "{")
		if !ok || name != metric {
			continue
		}
		set, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(","+set+",", ","+l+",")
		}
		if all {
			return value
		}
	}
	return ""
}

// TestMetrics_ServesTheStoresMetricsWithoutUserData runs the shop with
// -metrics: after an anonymous visitor's miss and hit on an item page and
// a logged-in visitor's visit, /metrics shows the page cache's hit and
// miss, the session started, calls by operation and their latencies, and
// neither the user's name nor the session's token.
func TestMetrics_ServesTheStoresMetricsWithoutUserData(t *testing.T) {
	base := startShop(t, "-metrics")
	anon := &http.Client{Timeout: waitLimit}
	for range 2 { // ranks the kettle and caches its page (a miss), then a hit
		if status, _ := get(t, anon, base+"/item?item=kettle"); status != http.StatusOK {
			t.Fatalf("GET /item?item=kettle: status %d", status)
		}
	}
	jar, _ := cookiejar.New(nil)
	alice := &http.Client{Timeout: waitLimit, Jar: jar}
	const user = "alice-SECRET"
	res, err := alice.PostForm(base+"/login", url.Values{"user": {user}})
	if err != nil {
		t.Fatalf("POST /login: %v", err)
	}
	res.Body.Close()
	baseURL, _ := url.Parse(base)
	cookies := jar.Cookies(baseURL)
	if res.StatusCode != http.StatusOK || len(cookies) == 0 {
		t.Fatalf("POST /login: status %d, %d cookies, want 200 and a session cookie", res.StatusCode, len(cookies))
	}
	get(t, alice, base+"/item?item=kettle")

	status, body := get(t, anon, base+"/metrics")
	if status != http.StatusOK {
		t.Fatalf("GET /metrics: status %d, want 200", status)
	}
	for _, want := range []struct {
		metric string
		labels []string
		value  string // "" for any
	}{
		{"retail_page_cache_requests_total", []string{`retail_result="hit"`, `retail_backend="memory"`}, "1"},
		{"retail_page_cache_requests_total", []string{`retail_result="miss"`}, "1"},
		{"retail_sessions_started_total", nil, "1"},
		{"retail_calls_total", []string{`retail_operation="StartSessionFor"`, `retail_outcome="ok"`}, "1"}, // the shop logs in with LoginWith
		{"retail_calls_total", []string{`retail_operation="CountView"`, `retail_outcome="ok"`}, "2"},
		{"retail_call_duration_seconds_count", []string{`retail_operation="RefreshSession"`}, ""},
		{"retail_client_cache_reads_total", []string{`retail_result="hit"`}, "0"},
		{"retail_cleaner_lag", nil, ""},
	} {
		got := sample(body, want.metric, want.labels...)
		if got == "" || want.value != "" && got != want.value {
			t.Errorf("/metrics: %s%v = %q, want %q", want.metric, want.labels, got, want.value)
		}
	}
	for _, secret := range []string{"alice", "SECRET", cookies[0].Value} {
		if strings.Contains(body, secret) {
			t.Errorf("/metrics shows %q, the user's name or session cookie", secret)
		}
	}
}

// TestMetrics_OffWithoutTheFlag: without -metrics the shop serves no
// /metrics.
func TestMetrics_OffWithoutTheFlag(t *testing.T) {
	base := startShop(t)
	if status, _ := get(t, &http.Client{Timeout: waitLimit}, base+"/metrics"); status != http.StatusNotFound {
		t.Errorf("GET /metrics without -metrics: status %d, want 404", status)
	}
}
