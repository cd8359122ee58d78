package main

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/retailhttp"
)

// The shape of a visit to the Fake Web Retailer.
const (
	maxViewsPerVisit = 10   // a visit views 1..10 items
	cartChance       = 0.2  // chance that a view puts the item in the cart
	logoutChance     = 0.1  // chance that a visit ends with a logout
	zipfS            = 1.1  // item popularity: rank k is viewed in proportion to 1/(1+k)^zipfS
	pageBytes        = 2048 // size of a rendered item page
)

// sim is the simulated traffic: users that visit the shop one after
// another, each visit a fresh session.
type sim struct {
	store  retail.Store
	pages  *retail.PageCache
	items  []string
	urls   []*url.URL
	page   []byte // the rendered page, minus the item
	errLog func(op, error)
}

func newSim(store retail.Store, items int, errLog func(op, error)) (*sim, error) {
	pages, err := retail.NewPageCache(store, retail.PageCacheOptions{})
	if err != nil {
		return nil, err
	}
	s := &sim{store: store, pages: pages, errLog: errLog}
	for i := range items {
		id := fmt.Sprintf("item-%05d", i)
		s.items = append(s.items, id)
		s.urls = append(s.urls, &url.URL{Scheme: "http", Host: "shop.test", Path: "/", RawQuery: "item=" + id})
	}
	s.page = make([]byte, pageBytes)
	for i := range s.page {
		s.page[i] = 'a' + byte(i%26)
	}
	return s, nil
}

// user is one simulated browser: it records what it measures in its own
// histograms and counters, read once it has stopped, and counts its calls
// and page cache lookups in atomics for the progress line.
type user struct {
	sim      *sim
	name     string
	rng      *rand.Rand
	zipf     *rand.Zipf
	hists    [numOps]histogram
	errors   [numOps]uint64
	visits   uint64
	relogins uint64
	ops      atomic.Uint64
	hits     atomic.Uint64
	pages    atomic.Uint64
}

func (s *sim) newUser(i int) *user {
	rng := rand.New(rand.NewPCG(uint64(i), 0x5eed))
	return &user{
		sim:  s,
		name: fmt.Sprintf("user-%d", i),
		rng:  rng,
		zipf: rand.NewZipf(rng, zipfS, 1, uint64(len(s.items)-1)),
	}
}

// run makes visits until ctx ends. Calls cut short by the end of ctx are
// not counted.
func (u *user) run(ctx context.Context) {
	for ctx.Err() == nil {
		u.visit(ctx)
	}
}

func (u *user) visit(ctx context.Context) {
	token := newToken()
	if !u.call(ctx, opLogin, func() error { return u.sim.store.UpdateToken(ctx, token, u.name, "") }) {
		return
	}
	u.visits++
	views := 1 + u.rng.IntN(maxViewsPerVisit)
	for range views {
		i := int(u.zipf.Uint64())
		item := u.sim.items[i]
		// What the session middleware does on every request.
		var known bool
		if !u.call(ctx, opCheckToken, func() (err error) {
			_, known, err = u.sim.store.CheckToken(ctx, token)
			return err
		}) {
			return
		}
		if !known {
			// Cleaned while the user browsed: log in again.
			u.relogins++
			token = newToken()
			if !u.call(ctx, opLogin, func() error { return u.sim.store.UpdateToken(ctx, token, u.name, "") }) {
				return
			}
		}
		if !u.call(ctx, opUpdateToken, func() error { return u.sim.store.UpdateToken(ctx, token, u.name, item) }) {
			return
		}
		// The item page: the book's cache_request, and the item's row.
		if !u.call(ctx, opPage, func() error {
			_, hit, err := u.sim.pages.CacheRequest(ctx, u.sim.urls[i], u.render(item))
			if hit {
				u.hits.Add(1)
			}
			u.pages.Add(1)
			return err
		}) {
			return
		}
		if !u.call(ctx, opRow, func() error {
			_, _, err := u.sim.store.Row(ctx, item)
			return err
		}) {
			return
		}
		if u.rng.Float64() < cartChance {
			count := 1 + u.rng.IntN(3)
			if !u.call(ctx, opAddToCart, func() error {
				err := u.sim.store.AddToCart(ctx, token, item, count)
				if errors.Is(err, retail.ErrNoSession) {
					return nil // cleaned between the view and the click: not a failure
				}
				return err
			}) {
				return
			}
		}
	}
	if !u.call(ctx, opCart, func() error {
		_, err := u.sim.store.Cart(ctx, token)
		return err
	}) {
		return
	}
	if u.rng.Float64() < logoutChance {
		u.call(ctx, opLogout, func() error { return u.sim.store.Logout(ctx, token) })
	}
}

// call times f as one o and reports whether the visit may go on: false
// once ctx has ended.
func (u *user) call(ctx context.Context, o op, f func() error) bool {
	start := time.Now()
	err := f()
	d := time.Since(start)
	if ctx.Err() != nil {
		return false
	}
	u.hists[o].record(d)
	u.ops.Add(1)
	if err != nil {
		u.errors[o]++
		u.sim.errLog(o, err)
	}
	return true
}

func (u *user) render(item string) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) {
		body := make([]byte, 0, len(u.sim.page)+len(item))
		body = append(body, item...)
		return append(body, u.sim.page...), nil
	}
}

// newToken returns a session token as retailhttp.SessionManager makes them.
func newToken() string {
	var b [retailhttp.TokenLen / 2]byte
	crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// errorLog prints the first few errors of each operation.
type errorLog struct {
	mu     sync.Mutex
	counts [numOps]int
	print  func(string)
}

const errorsShown = 3

func (l *errorLog) log(o op, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[o]++
	if l.counts[o] <= errorsShown {
		l.print(fmt.Sprintf("loadgen: %s failed: %v", opNames[o], err))
	}
}
