package main

import (
	"fmt"
	"io"
	"math/bits"
	"strings"
	"time"

	"github.com/retailkit/retail"
)

// op is one kind of Store call the simulation makes.
type op int

const (
	opLogin       op = iota // UpdateToken without an item: a user logs in
	opCheckToken            // CheckToken: the session middleware's lookup
	opUpdateToken           // UpdateToken with an item: a view
	opPage                  // PageCache.CacheRequest of the item page
	opRow                   // Row: the item page reads the item's cached row
	opAddToCart             // AddToCart
	opCart                  // Cart: the user looks at the cart
	opLogout                // Logout
	numOps
)

var opNames = [numOps]string{"login", "check_token", "update_token", "page", "row", "add_to_cart", "cart", "logout"}

// A histogram counts latencies in log-linear buckets: 2^subBits buckets
// per power of two of nanoseconds, so a percentile is exact to about 3%.
const (
	subBits    = 5
	subBuckets = 1 << subBits
	numBuckets = (64 - subBits + 1) * subBuckets
)

type histogram struct {
	counts [numBuckets]uint64
	n      uint64
}

func bucketOf(ns uint64) int {
	if ns < subBuckets {
		return int(ns)
	}
	exp := bits.Len64(ns) - 1 // at least subBits
	sub := (ns >> (exp - subBits)) & (subBuckets - 1)
	return (exp-subBits+1)*subBuckets + int(sub)
}

// bucketMid returns the middle of bucket i's range of nanoseconds.
func bucketMid(i int) uint64 {
	if i < subBuckets {
		return uint64(i)
	}
	exp := i/subBuckets + subBits - 1
	sub := uint64(i % subBuckets)
	low := (subBuckets + sub) << (exp - subBits)
	width := uint64(1) << (exp - subBits)
	return low + width/2
}

func (h *histogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(uint64(d))]++
	h.n++
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// quantile returns the latency below which a fraction q of the samples
// fall, or 0 without samples.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q * float64(h.n))
	if rank >= h.n {
		rank = h.n - 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen > rank {
			return time.Duration(bucketMid(i))
		}
	}
	return 0
}

// result is what a run measured.
type result struct {
	elapsed   time.Duration
	hists     [numOps]histogram
	errors    [numOps]uint64
	pageHits  uint64
	visits    uint64
	relogins  uint64
	sessions  int
	sessErr   error
	store     retail.Stats // the store's counters at the end
	benchmark *ceiling     // nil if not measured
}

func (r *result) totalOps() uint64 {
	var n uint64
	for i := range r.hists {
		n += r.hists[i].n
	}
	return n
}

func (r *result) opsPerSec(n uint64) float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(n) / r.elapsed.Seconds()
}

// writeTable prints the per-operation table and, if measured, the
// redis-benchmark ceiling and our ratio to it.
func (r *result) writeTable(w io.Writer) {
	all := &histogram{}
	const row = "%-13s %12s %12s %9s %9s %7s\n"
	fmt.Fprintf(w, row, "operation", "calls", "ops/s", "p50", "p99", "errors")
	var errs uint64
	for o := range numOps {
		h := &r.hists[o]
		all.merge(h)
		errs += r.errors[o]
		fmt.Fprintf(w, row, opNames[o], rate(float64(h.n)), rate(r.opsPerSec(h.n)), latency(h.quantile(0.50)), latency(h.quantile(0.99)), fmt.Sprint(r.errors[o]))
	}
	fmt.Fprintf(w, row, "all", rate(float64(all.n)), rate(r.opsPerSec(all.n)), latency(all.quantile(0.50)), latency(all.quantile(0.99)), fmt.Sprint(errs))

	hitRatio := 0.0
	if n := r.hists[opPage].n; n > 0 {
		hitRatio = 100 * float64(r.pageHits) / float64(n)
	}
	fmt.Fprintf(w, "\n%s visits (%s/s), page cache hits %.1f%%, %d re-logins after cleaning, %s sessions at the end\n",
		rate(float64(r.visits)), rate(r.opsPerSec(r.visits)), hitRatio, r.relogins, sessionsText(r.sessions, r.sessErr))
	writeStats(w, r.store)
	if b := r.benchmark; b != nil {
		ours := r.opsPerSec(all.n)
		fmt.Fprintf(w, "redis-benchmark ceiling (%s): SET %s/s, GET %s/s\n", b.command, rate(b.set), rate(b.get))
		fmt.Fprintf(w, "our ops/s against the ceiling (mean of SET and GET): %.2f (%s / %s)\n", ours/b.mean(), rate(ours), rate(b.mean()))
	}
}

// writeStats prints the store's counters. The simulated users log in with
// UpdateToken, which retail.Stats does not count as starting a session.
func writeStats(w io.Writer, st retail.Stats) {
	n := func(v uint64) string { return rate(float64(v)) }
	fmt.Fprintf(w, "store counters (retail.Stats):\n")
	fmt.Fprintf(w, "  page cache    %s hits, %s misses, %s bypasses, %s coalesced renders\n",
		n(st.PageHits), n(st.PageMisses), n(st.PageBypasses), n(st.CoalescedRenders))
	fmt.Fprintf(w, "  sessions      %s started, %s logouts, %s ended by LogoutUser, %s cleaned, cleaning lag %s, %s index entries repaired\n",
		n(st.SessionsStarted), n(st.Logouts), n(st.LogoutUserSessions), n(st.SessionsCleaned), n(st.CleaningLag), n(st.SessionsRepaired))
	fmt.Fprintf(w, "  workers       %s rows refreshed, %s rescales\n", n(st.RowsRefreshed), n(st.Rescales))
	fmt.Fprintf(w, "  client cache  %s hits, %s misses\n", n(st.ClientCacheHits), n(st.ClientCacheMisses))
}

func sessionsText(n int, err error) string {
	if err != nil {
		return "? (" + err.Error() + ")"
	}
	return rate(float64(n))
}

// rate formats an ops/s figure with thousands separators.
func rate(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// latency formats a duration with three significant digits.
func latency(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.3gµs", float64(d)/float64(time.Microsecond))
	default:
		return fmt.Sprintf("%.3gms", float64(d)/float64(time.Millisecond))
	}
}
