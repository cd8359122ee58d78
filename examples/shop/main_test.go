package main

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

const waitLimit = 10 * time.Second

// syncBuffer is an io.Writer that the shop writes to while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

var servingRE = regexp.MustCompile(`serving on (http://\S+)`)

// startShop runs the shop with args on a free port until the test ends and
// returns its base URL.
func startShop(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), &stdout, &stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run after cancel = %v, want nil", err)
			}
		case <-time.After(waitLimit):
			t.Errorf("run did not return within %v of cancel", waitLimit)
		}
	})
	deadline := time.Now().Add(waitLimit)
	for {
		if m := servingRE.FindStringSubmatch(stdout.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("run returned %v before serving; stderr:\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("run printed no address within %v; stdout: %q", waitLimit, stdout.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
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
