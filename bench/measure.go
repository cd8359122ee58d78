package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// population is the keyspace every contender is loaded with and drawn
// from: tokens in the form retailhttp issues (32 lowercase hex digits), a
// user each, and items of Zipf-distributed popularity (item-0 the most
// viewed).
type population struct {
	tokens, users, items []string
	loaded               []string // the item session i viewed when loaded
}

// zipfS is the exponent of the items' popularity.
const zipfS = 1.1

func newPopulation(sessions, items int) *population {
	p := &population{tokens: make([]string, sessions), users: make([]string, sessions), items: make([]string, items)}
	for i := range sessions {
		p.tokens[i], p.users[i] = tokenOf(i), "user-"+strconv.Itoa(i)
	}
	for i := range items {
		p.items[i] = "item-" + strconv.Itoa(i)
	}
	w := newWorker(p, 0, 42)
	p.loaded = make([]string, sessions)
	for i := range p.loaded {
		p.loaded[i] = w.item()
	}
	return p
}

// tokenOf is session i's token.
func tokenOf(i int) string { return fmt.Sprintf("%032x", i) }

// worker is one calling goroutine's random choices.
type worker struct {
	r   *rand.Rand
	z   *rand.Zipf
	pop *population
}

func newWorker(pop *population, id int, seed uint64) *worker {
	r := rand.New(rand.NewPCG(seed, uint64(id)+1))
	return &worker{r: r, z: rand.NewZipf(r, zipfS, 1, uint64(len(pop.items)-1)), pop: pop}
}

// session picks a session uniformly; item picks an item by popularity.
func (w *worker) session() int { return w.r.IntN(len(w.pop.tokens)) }
func (w *worker) item() string { return w.pop.items[w.z.Uint64()] }

// result is one row of the table.
type result struct {
	op, name string
	calls    uint64          // calls (sessions removed, for clean_sessions) in the window
	elapsed  time.Duration   // the measured window
	lat      []time.Duration // sampled latencies, sorted
	errs     uint64
	firstErr error
	cpu      map[string]float64 // the servers' CPU seconds in the window, by address
	note     string             // shown instead of figures for a row not measured
}

func (r *result) rate() float64 { return float64(r.calls) / max(r.elapsed.Seconds(), 1e-9) }

func (r *result) quantile(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[min(len(r.lat)-1, int(q*float64(len(r.lat))))]
}

// serverUs returns the servers' CPU µs a call, summed over them and on
// the busiest alone.
func (r *result) serverUs() (total, hottest float64) {
	if r.calls == 0 {
		return 0, 0
	}
	for _, s := range r.cpu {
		total, hottest = total+s, max(hottest, s)
	}
	return total * 1e6 / float64(r.calls), hottest * 1e6 / float64(r.calls)
}

// window times a stretch of work on the servers' CPU and the wall clock.
func (b *bench) window(ctx context.Context, r *result, work func()) error {
	cpu0, err := b.srv.cpu(ctx)
	if err != nil {
		return err
	}
	t0 := time.Now()
	work()
	r.elapsed = time.Since(t0)
	cpu1, err := b.srv.cpu(ctx)
	if err != nil {
		return err
	}
	r.cpu = map[string]float64{}
	for addr, s := range cpu1 {
		r.cpu[addr] = s - cpu0[addr]
	}
	return nil
}

// measure calls fn from -c goroutines for the warm-up, then for -d
// measured, counting every call and timing one in eight. A call's error is
// counted, and the row shows it.
func (b *bench) measure(ctx context.Context, op, name string, seed uint64, fn func(w *worker) error) (*result, error) {
	const sample = 8
	var measuring, stop atomic.Bool
	type tally struct {
		calls, errs uint64
		first       error
		lat         []time.Duration
	}
	tallies := make([]tally, b.cfg.conc)
	var wg sync.WaitGroup
	for g := range tallies {
		t, w := &tallies[g], newWorker(b.pop, g, seed)
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				on := measuring.Load()
				timed := on && i%sample == 0
				var t0 time.Time
				if timed {
					t0 = time.Now()
				}
				err := fn(w)
				if timed {
					t.lat = append(t.lat, time.Since(t0))
				}
				if on {
					t.calls++
					if err != nil && t.errs == 0 {
						t.first = err
					}
					if err != nil {
						t.errs++
					}
				}
			}
		})
	}
	time.Sleep(b.cfg.warm)
	r := &result{op: op, name: name}
	err := b.window(ctx, r, func() {
		measuring.Store(true)
		time.Sleep(b.cfg.dur)
		stop.Store(true)
		wg.Wait()
	})
	stop.Store(true)
	wg.Wait()
	for _, t := range tallies {
		r.calls, r.errs, r.lat = r.calls+t.calls, r.errs+t.errs, append(r.lat, t.lat...)
		if r.firstErr == nil {
			r.firstErr = t.first
		}
	}
	slices.Sort(r.lat)
	return r, err
}

// parallel runs f(i) for i in [0, n) from conc goroutines and returns the
// first error; for loading and checks, not measured.
func parallel(n, conc int, f func(i int) error) error {
	var (
		next  atomic.Int64
		once  sync.Once
		first error
		wg    sync.WaitGroup
	)
	for range min(conc, n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					next.Store(int64(n))
				}
			}
		})
	}
	wg.Wait()
	return first
}

// printTable writes the rows, grouped by operation, each with its ratio to
// the first row of its group (retail's).
func printTable(w io.Writer, rows []*result) {
	const format = "%-19s %-28s %9s %9s %9s %8s %5s %8s %8s %9s\n"
	fmt.Fprintf(w, format, "op", "contender", "ops/s", "p50", "p99", "vs first", "errs", "srv µs", "hot µs", "cap/s")
	fmt.Fprintln(w, strings.Repeat("-", 124))
	var first *result
	var errLines []string
	for i, r := range rows {
		if i > 0 && r.op != rows[i-1].op {
			fmt.Fprintln(w)
		}
		if i == 0 || r.op != rows[i-1].op {
			first = r
		}
		if r.note != "" {
			fmt.Fprintf(w, "%-19s %-28s %s\n", r.op, r.name, r.note)
			continue
		}
		ratio := "-"
		if first.note == "" && first.rate() > 0 {
			ratio = fmt.Sprintf("%.2fx", r.rate()/first.rate())
		}
		srv, hot, capacity := "-", "-", "-"
		if t, h := r.serverUs(); h > 0 {
			srv, hot, capacity = fmt.Sprintf("%.2f", t), fmt.Sprintf("%.2f", h), fmtRate(1e6/h)
		}
		fmt.Fprintf(w, format, r.op, r.name, fmtRate(r.rate()), fmtDur(r.quantile(0.5)), fmtDur(r.quantile(0.99)),
			ratio, strconv.FormatUint(r.errs, 10), srv, hot, capacity)
		if r.errs > 0 {
			errLines = append(errLines, fmt.Sprintf("%s %s: %d errors, the first: %v", r.op, r.name, r.errs, r.firstErr))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "vs first: ops/s over the first row of the op (retail's); above 1 is faster than retail.")
	fmt.Fprintln(w, "srv µs: the servers' CPU (INFO cpu, user+sys) a call in the window, summed over them; hot µs: on the busiest")
	fmt.Fprintln(w, "server alone; cap/s: 1e6 / hot µs, the calls a second that server could take with a core to itself.")
	fmt.Fprintln(w, "clean_sessions: ops/s is sessions removed a second by one goroutine, µs a removed session, p50/p99 a pass.")
	for _, l := range errLines {
		fmt.Fprintln(w, l)
	}
}

func fmtRate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.2fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}
