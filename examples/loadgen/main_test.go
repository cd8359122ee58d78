package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
)

func TestRun_MemoryPrintsProgressAndATable(t *testing.T) {
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	progressEvery = 20 * time.Millisecond
	var stdout, stderr bytes.Buffer
	args := []string{"-duration", "1s", "-users", "4", "-items", "100", "-rescale", "500ms", "-keep", "50"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run(%q) = %v; stderr:\n%s", args, err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"memory backend, 4 users, 100 items", "ops/s  page hits", "operation", "page cache hits", "store counters (retail.Stats):"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q; output:\n%s", want, out)
		}
	}
	for _, name := range append(opNames[:], "all") {
		if !strings.Contains(out, "\n"+name+" ") {
			t.Errorf("table lacks a row for %s; output:\n%s", name, out)
		}
	}
	if strings.Contains(out, "redis-benchmark") {
		t.Errorf("memory run mentions redis-benchmark; output:\n%s", out)
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr = %q, want no errors", stderr.String())
	}
}

// TestSimulate_StoreCountsThePagesServed checks the store's counters
// against what the simulated users saw: every page cache hit they got. A
// user views an item, which ranks it, before asking for its page, so pages
// bypass the cache only when the end of the run cuts the question short:
// once per user at most.
func TestSimulate_StoreCountsThePagesServed(t *testing.T) {
	const users = 4
	store, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatalf("memory.New = %v", err)
	}
	defer store.Close()
	s, err := newSim(store, 50, func(o op, err error) { t.Errorf("%s failed: %v", opNames[o], err) })
	if err != nil {
		t.Fatalf("newSim = %v", err)
	}
	var out sync.Mutex
	res := simulate(context.Background(), s, config{duration: 200 * time.Millisecond, users: users}, io.Discard, &out)

	st := store.Stats()
	if st.PageHits != res.pageHits || st.PageBypasses > users {
		t.Errorf("Stats() = %d page hits, %d bypasses, want %d (the users') and at most %d", st.PageHits, st.PageBypasses, res.pageHits, users)
	}
	if st.PageHits+st.PageMisses < res.hists[opPage].n {
		t.Errorf("Stats() = %d page hits + %d misses, want at least the %d page calls timed", st.PageHits, st.PageMisses, res.hists[opPage].n)
	}
}

func TestWriteStats(t *testing.T) {
	var b bytes.Buffer
	writeStats(&b, retail.Stats{
		PageHits: 12345, PageMisses: 6, PageBypasses: 7, CoalescedRenders: 8,
		SessionsStarted: 9, Logouts: 10, LogoutUserSessions: 11, SessionsCleaned: 1200, CleaningLag: 13,
		SessionsRepaired: 18, RowsRefreshed: 14, Rescales: 15, ClientCacheHits: 1600000, ClientCacheMisses: 17,
	})
	want := `store counters (retail.Stats):
  page cache    12,345 hits, 6 misses, 7 bypasses, 8 coalesced renders
  sessions      9 started, 10 logouts, 11 ended by LogoutUser, 1,200 cleaned, cleaning lag 13, 18 index entries repaired
  workers       14 rows refreshed, 15 rescales
  client cache  1,600,000 hits, 17 misses
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("writeStats mismatch (-want +got):\n%s", diff)
	}
}

func TestRun_RefusesAddressesOffLoopback(t *testing.T) {
	for _, addr := range []string{"10.1.2.3:6379", "example.com:6380", "127.0.0.1:7000,192.168.1.9:7001"} {
		var out bytes.Buffer
		err := run(context.Background(), []string{"-redis", addr}, &out, &out)
		if !errors.Is(err, errNotLoopback) {
			t.Errorf("run(-redis %s) = %v, want %v", addr, err, errNotLoopback)
		}
	}
}

func TestCheckLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:6380":   true,
		"127.3.4.5:1":      true,
		"[::1]:7000":       true,
		"localhost:6380":   true,
		"10.0.0.1:6380":    false,
		"[2001:db8::1]:80": false,
		"redis.test:6380":  false,
		"127.0.0.1":        false, // no port
	} {
		if got := checkLoopback(addr) == nil; got != want {
			t.Errorf("checkLoopback(%q) accepted = %v, want %v", addr, got, want)
		}
	}
}

func TestParseFlags_RejectsOutOfRangeValues(t *testing.T) {
	for _, args := range [][]string{
		{"-duration", "0s"},
		{"-duration", "11m"},
		{"-users", "0"},
		{"-items", "0"},
		{"-keep", "0"},
		{"-rescale", "-1s"},
		{"-ceiling", "maybe"},
		{"extra"},
	} {
		var out bytes.Buffer
		if _, err := parseFlags(args, &out); err == nil {
			t.Errorf("parseFlags(%q) = nil error, want one", args)
		}
	}
}

func TestParseBenchmark(t *testing.T) {
	out := "SET: rps=512000.0 (overall: 498000.0) avg_msec=1.2 (overall: 1.3)\r" +
		"SET: 673400.69 requests per second, p50=0.759 msec\n" +
		"GET: rps=700000.0 (overall: 690000.0) avg_msec=1.0 (overall: 1.0)\r" +
		"GET: 769230.81 requests per second, p50=0.671 msec\n\n"
	set, get, err := parseBenchmark(out)
	if err != nil {
		t.Fatalf("parseBenchmark = %v", err)
	}
	if diff := cmp.Diff([]float64{673400.69, 769230.81}, []float64{set, get}); diff != "" {
		t.Errorf("parseBenchmark SET, GET mismatch (-want +got):\n%s", diff)
	}
	if _, _, err := parseBenchmark("Could not connect to Redis"); err == nil {
		t.Errorf("parseBenchmark(no rates) = nil error, want one")
	}
}

func TestHistogram_BucketsAreWithinThreePercent(t *testing.T) {
	for ns := uint64(1); ns < 1<<40; ns = ns*3/2 + 1 {
		mid := bucketMid(bucketOf(ns))
		if err := math.Abs(float64(mid)-float64(ns)) / float64(ns); err > 1.0/32 {
			t.Errorf("bucketMid(bucketOf(%d)) = %d, %.1f%% off, want within 3.1%%", ns, mid, 100*err)
		}
	}
}

func TestHistogram_Quantiles(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.99, 990 * time.Microsecond}} {
		got := h.quantile(tc.q)
		if math.Abs(float64(got-tc.want))/float64(tc.want) > 0.04 {
			t.Errorf("quantile(%v) = %v, want %v within 4%%", tc.q, got, tc.want)
		}
	}
	if got := (&histogram{}).quantile(0.5); got != 0 {
		t.Errorf("empty quantile(0.5) = %v, want 0", got)
	}
}
