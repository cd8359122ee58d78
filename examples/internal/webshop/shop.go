package webshop

import (
	"bytes"
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/retailhttp"
)

//go:embed templates.html
var templateFS embed.FS

var templates = template.Must(template.ParseFS(templateFS, "templates.html"))

// popularCount is how many items the home page lists as popular, and
// popularWait how long it waits for them at most.
const (
	popularCount = 5
	popularWait  = 500 * time.Millisecond
)

// maxCount is the largest quantity of one item a cart takes.
const maxCount = 99

// shop is the web shop: its handlers over a retail.Store.
type shop struct {
	store    retail.Store
	catalog  catalog
	sessions *retailhttp.SessionManager
	log      *slog.Logger

	lifetime, remember time.Duration // of a login without and with "remember me"
}

// shopOptions configures newShop.
type shopOptions struct {
	// SigningKey, if not empty, switches the session cookies from tokens to
	// signed cookies.
	SigningKey []byte
	// Secure marks the session cookie Secure (for a shop behind HTTPS).
	Secure bool
	// Pages is the page cache, shared with the row cacher so that a changed
	// row purges its item's pages; a new one over the store if nil.
	Pages *retail.PageCache
	// Lifetime is the store's session lifetime, which the cookie's lifetime
	// follows; retail.DefaultLifetime if zero.
	Lifetime time.Duration
	// Remember is the lifetime of a session whose visitor ticked "remember
	// me" at login, with a persistent cookie as long; without it a login
	// gets a browser-session cookie and Lifetime. Lifetime if zero. The
	// store's lifetime must be the longer of the two.
	Remember time.Duration
	// RequestTimeout bounds each request's work (DefaultRequestTimeout if
	// zero): the store's calls take the request's context, and a Redis
	// that does not answer (down, stalled) fails them at the deadline, so
	// that the visitor gets an error page rather than a request that hangs
	// while rueidis retries.
	RequestTimeout time.Duration
	Logger         *slog.Logger
	// Routes are served beside the shop's, outside its middlewares, by
	// pattern (an Extension's, such as "GET /metrics").
	Routes map[string]http.Handler
}

// newShop returns the shop's handler over store. Requests pass through the
// session middleware, which counts item views, then the page cache, which
// serves popular item pages to anonymous visitors, then the routes; but
// /debug/vars serves the expvar variables, among them "retail", the store's
// Stats.
func newShop(store retail.Store, cat catalog, opts shopOptions) (http.Handler, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Lifetime == 0 {
		opts.Lifetime = retail.DefaultLifetime
	}
	if opts.Remember == 0 {
		opts.Remember = opts.Lifetime
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	s := &shop{store: store, catalog: cat, log: opts.Logger, lifetime: opts.Lifetime, remember: opts.Remember}
	sessionOpts := retailhttp.SessionOptions{
		Secure: opts.Secure,
		MaxAge: opts.Lifetime,
		// A guest session lasts the shop's lifetime, not the Store's,
		// which is the longer "remember me" lifetime.
		GuestLifetime: opts.Lifetime,
		Item:          s.viewedItem,
		// Crawlers' views do not make an item popular.
		CountView: func(r *http.Request) bool { return !retailhttp.LikelyBot(r) },
		Logger:    opts.Logger,
	}
	if opts.Secure {
		// Over HTTPS: no subdomain, and no page served over HTTP, can set
		// or shadow a cookie of this name.
		sessionOpts.CookieName = "__Host-" + retailhttp.DefaultSessionCookie
	}
	if len(opts.SigningKey) > 0 {
		sessionOpts.SigningKeys = [][]byte{opts.SigningKey}
	}
	sessions, err := retailhttp.NewSessionManager(store, sessionOpts)
	if err != nil {
		return nil, err
	}
	s.sessions = sessions
	cache := opts.Pages
	if cache == nil {
		var err error
		if cache, err = retail.NewPageCache(store, retail.PageCacheOptions{}); err != nil {
			return nil, err
		}
	}
	pages, err := retailhttp.NewPageMiddleware(cache, retailhttp.PageMiddlewareOptions{Logger: opts.Logger})
	if err != nil {
		return nil, err
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.home)
	mux.HandleFunc("GET /item", s.item)
	mux.HandleFunc("GET /cart", s.cart)
	mux.HandleFunc("POST /cart", s.setCartLine)
	mux.HandleFunc("POST /cart/add", s.addToCart)
	mux.HandleFunc("GET /login", s.loginForm)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.logout)
	mux.HandleFunc("GET /devices", s.devices)
	mux.HandleFunc("POST /devices/end", s.endDevice)
	mux.HandleFunc("POST /devices/end-others", s.endOtherDevices)
	mux.HandleFunc("GET /checkout", s.checkout)
	mux.HandleFunc("POST /checkout", s.placeOrder)
	mux.HandleFunc("GET /favicon.ico", favicon)
	mux.HandleFunc("GET /favicon.svg", favicon)
	mux.HandleFunc("/", s.notFound)

	// The store's counters, for an operator, at /debug/vars; outside the
	// middlewares, so that reading them counts nothing.
	publishStats(store)
	root := http.NewServeMux()
	root.HandleFunc("GET /debug/vars", debugVars)
	for pattern, h := range opts.Routes {
		root.Handle(pattern, h)
	}
	// Cross-origin POSTs (a form on another site) are refused, with a page
	// that says why; SameSite=Lax cookies already keep them anonymous.
	crossOrigin := http.NewCrossOriginProtection()
	crossOrigin.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.errorPage(w, r, http.StatusForbidden, "Form from another site",
			"This form was sent from another site, so the shop did not act on it. Please use the shop's own pages.")
	}))
	root.Handle("/", withDeadline(limitBody(crossOrigin.Handler(sessions.Handler(pages.Handler(mux)))), opts.RequestTimeout))
	return root, nil
}

// maxBodyBytes bounds a request's body: the shop's forms hold an item and
// a count, a name and the path to go back to. Past it, reading the body
// fails and the form reads as empty; without it, net/http buffers up to
// 10 MB of a form for each request that sends one.
const maxBodyBytes = 64 << 10

// limitBody passes each request to h with its body limited to maxBodyBytes.
func limitBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		}
		h.ServeHTTP(w, r)
	})
}

// DefaultRequestTimeout is how long a request's work may take.
const DefaultRequestTimeout = 5 * time.Second

// withDeadline passes each request to h with a context that ends after d.
func withDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// viewedItem tells the session middleware which item a request views: only
// item pages of items the shop sells count as views.
func (s *shop) viewedItem(r *http.Request) string {
	if r.URL.Path != "/item" {
		return ""
	}
	id := retailhttp.ItemFromQuery(r)
	if _, ok := s.catalog[id]; !ok {
		return ""
	}
	return id
}

// common is what every page shows.
type common struct {
	Title     string
	User      string // "" for a guest or an anonymous visitor
	Session   bool   // the visitor has a session (logged in or a guest with a cart)
	CartUnits int    // items in the cart, counting each unit
	Flash     string // a one-time message from the previous request
	Here      string // this page's path and query, to come back to after logging in
	Rendered  string
	// Keep marks a page that the browser may show again from its history
	// as it was (see the script in the templates): the answer to a form
	// that a GET of its address cannot give again.
	Keep bool

	cart map[string]int // the visitor's cart, for the pages that show more of it
}

// flashKey is the session value holding a one-time message.
const flashKey = "flash"

// orderKey is the session value holding the number of the order that the
// order summary shows, until the order is placed.
const orderKey = "order"

// itemLink is an item as the pages list it.
type itemLink struct {
	ID, Name, Price, URL string
	Views                float64
}

func (s *shop) link(id string) itemLink {
	it := s.catalog[id]
	return itemLink{ID: id, Name: it.Name, Price: price(it.Cents), URL: itemURL(id)}
}

func itemURL(id string) string { return "/item?item=" + url.QueryEscape(id) }

func price(cents int) string { return fmt.Sprintf("$%d.%02d", cents/100, cents%100) }

// common fills in what every page shows. Pages of a visitor with a
// session are personal: no-store, so that no cache keeps them and no
// browser shows them again from its history (no-cache would not stop
// that: after a logout, the back button would show the cart of the
// visitor who just left); the page cache skips them anyway. no-store does
// not keep a page out of Chromium's back/forward cache when no cookie
// changed (a logout from another device): the script in the templates'
// head loads such a page again.
func (s *shop) common(w http.ResponseWriter, r *http.Request, title string) (common, error) {
	c := common{Title: title, Here: r.URL.RequestURI(), Rendered: time.Now().Format(time.TimeOnly)}
	sess, ok := retailhttp.SessionFrom(r.Context())
	if !ok {
		return c, nil
	}
	w.Header().Set("Cache-Control", "no-store")
	c.Session, c.User = true, sess.User
	ctx := r.Context()
	var err error
	if c.cart, err = s.store.Cart(ctx, sess.Token); err != nil {
		return c, err
	}
	for _, n := range c.cart {
		c.CartUnits += n
	}
	flash, ok, err := s.store.PopValue(ctx, sess.Token, flashKey)
	if err != nil {
		return c, err
	}
	if ok {
		c.Flash = string(flash)
	}
	return c, nil
}

// flash leaves a message for the session's next page. Failing to is not
// worth failing the request over.
func (s *shop) flash(ctx context.Context, token, msg string) {
	if err := s.store.SetValue(ctx, token, flashKey, []byte(msg)); err != nil {
		s.log.WarnContext(ctx, "shop: leaving a message failed", "err", err)
	}
}

func (s *shop) home(w http.ResponseWriter, r *http.Request) {
	type homePage struct {
		common
		Popular []itemLink
		Items   []itemLink
	}
	c, err := s.common(w, r, "Home")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := homePage{common: c}
	// The popular items are worth a moment of the page, not the page: while
	// the view counts' Redis node is down (a failover, say) the home page
	// lists the catalog without them.
	ctx, cancel := context.WithTimeout(r.Context(), popularWait)
	top, err := s.store.TopItems(ctx, popularCount)
	cancel()
	if err != nil {
		if r.Context().Err() != nil {
			s.fail(w, r, err)
			return
		}
		s.log.WarnContext(r.Context(), "shop: the home page goes without its popular items", "err", err)
	}
	for _, iv := range top {
		if _, ok := s.catalog[iv.Item]; ok {
			l := s.link(iv.Item)
			l.Views = iv.Views
			p.Popular = append(p.Popular, l)
		}
	}
	for _, id := range s.catalog.ids() {
		p.Items = append(p.Items, s.link(id))
	}
	s.render(w, r, "home", p)
}

func (s *shop) item(w http.ResponseWriter, r *http.Request) {
	type itemPage struct {
		common
		Item   itemLink
		About  string
		InCart int
		Recent []itemLink
	}
	ctx := r.Context()
	id := r.URL.Query().Get("item")
	it, ok, err := s.loadItem(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !ok {
		s.notFound(w, r)
		return
	}
	c, err := s.common(w, r, it.Name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := itemPage{common: c, Item: s.link(id)}
	p.Item.Name, p.Item.Price = it.Name, price(it.Cents)
	p.About = it.About
	if sess, ok := retailhttp.SessionFrom(ctx); ok {
		p.InCart = c.cart[id]
		recent, err := s.store.RecentItems(ctx, sess.Token)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		for _, rid := range recent {
			if _, ok := s.catalog[rid]; ok && rid != id {
				p.Recent = append(p.Recent, s.link(rid))
			}
		}
	}
	s.render(w, r, "item", p)
}

// loadItem reads an item from the row cache, which the RowCacher keeps
// fresh, and from the catalog (the database) if the row is not cached yet.
func (s *shop) loadItem(ctx context.Context, id string) (item, bool, error) {
	if _, ok := s.catalog[id]; !ok {
		return item{}, false, nil
	}
	data, ok, err := s.store.Row(ctx, id)
	if err != nil {
		return item{}, false, err
	}
	if ok {
		var it item
		if err := json.Unmarshal(data, &it); err == nil {
			return it, true, nil
		}
	}
	return s.catalog[id], true, nil
}

// cartLine is a line of the cart as the cart and checkout pages show it.
type cartLine struct {
	itemLink
	Count int
	Total string
}

// lines returns the lines of cart in catalog order and their total.
func (s *shop) lines(cart map[string]int) ([]cartLine, string) {
	var lines []cartLine
	total := 0
	for _, id := range s.catalog.ids() {
		n := cart[id]
		if n <= 0 {
			continue
		}
		cents := n * s.catalog[id].Cents
		total += cents
		lines = append(lines, cartLine{itemLink: s.link(id), Count: n, Total: price(cents)})
	}
	return lines, price(total)
}

type cartPage struct {
	common
	Lines []cartLine
	Total string
	Order string // the order number, on the confirmation page
}

func (s *shop) cart(w http.ResponseWriter, r *http.Request) {
	c, err := s.common(w, r, "Cart")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := cartPage{common: c}
	p.Lines, p.Total = s.lines(c.cart)
	s.render(w, r, "cart", p)
}

// checkout shows the order summary: what the order holds and costs,
// before it is placed. There is no payment in this demonstration.
func (s *shop) checkout(w http.ResponseWriter, r *http.Request) {
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		// Another site's link: numbering a new summary would void the
		// one the visitor may have open. The cart page links here.
		http.Redirect(w, r, "/cart", http.StatusSeeOther)
		return
	}
	c, err := s.common(w, r, "Order summary")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := cartPage{common: c, Order: orderNumber()}
	p.Lines, p.Total = s.lines(c.cart)
	if len(p.Lines) == 0 {
		http.Redirect(w, r, "/cart", http.StatusSeeOther)
		return
	}
	// The cart has lines, so there is a session. The form places the order
	// of this number only, once: see placeOrder.
	sess, _ := retailhttp.SessionFrom(r.Context())
	switch err := s.store.SetValue(r.Context(), sess.Token, orderKey, orderValue(p.Order, c.cart)); {
	case errors.Is(err, retail.ErrNoSession):
		// The session ended meanwhile (a logout in another tab).
		http.Redirect(w, r, "/cart", http.StatusSeeOther)
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	s.render(w, r, "checkout", p)
}

// placeOrder places the order (a real shop would take payment and write
// the order to its database here), empties the cart and confirms. It
// places the order the latest summary numbered, and only once: it takes
// the number out of the session (PopValue, atomic), so that a second
// submission of the form, a double click say, finds none and places
// nothing. A summary older than the latest (another tab) places nothing
// and leaves the latest as it is.
func (s *shop) placeOrder(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess, ok := retailhttp.SessionFrom(ctx)
	if !ok {
		http.Redirect(w, r, "/cart", http.StatusSeeOther)
		return
	}
	want := r.PostFormValue("order")
	latest, ok, err := s.store.Value(ctx, sess.Token, orderKey)
	if err == nil && ok && orderNumberOf(latest) == want {
		latest, ok, err = s.store.PopValue(ctx, sess.Token, orderKey)
		if err == nil && ok && orderNumberOf(latest) != want {
			// A newer summary came between the two calls: it stays.
			err = s.store.SetValue(ctx, sess.Token, orderKey, latest)
		}
	}
	if err != nil && !errors.Is(err, retail.ErrNoSession) {
		s.fail(w, r, err)
		return
	}
	if err != nil || !ok || orderNumberOf(latest) != want {
		// Placed already, or not the latest summary (a session that ended
		// meanwhile has nowhere to keep a flash).
		if err == nil {
			s.flash(ctx, sess.Token, "That order summary is no longer current.")
		}
		http.Redirect(w, r, "/cart", http.StatusSeeOther)
		return
	}
	order := orderNumberOf(latest)
	c, err := s.common(w, r, "Thank you")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !bytes.Equal(latest, orderValue(order, c.cart)) {
		// The cart changed since the summary was shown (another tab, or
		// another holder of the session): the visitor did not see what
		// would be ordered. The summary is used up; show a new one.
		s.flash(ctx, sess.Token, "Your cart changed since the order summary. Please check it again.")
		next := "/checkout"
		if lines, _ := s.lines(c.cart); len(lines) == 0 {
			// Emptied: /checkout would pop the flash and send the
			// visitor to the cart without it.
			next = "/cart"
		}
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	p := cartPage{common: c, Order: order}
	p.Lines, p.Total = s.lines(c.cart)
	if len(p.Lines) == 0 {
		http.Redirect(w, r, "/cart", http.StatusSeeOther)
		return
	}
	for _, l := range p.Lines {
		if err := s.store.AddToCart(ctx, sess.Token, l.ID, 0); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	p.CartUnits, p.Keep = 0, true
	s.render(w, r, "ordered", p)
}

// orderValue is what the orderKey value holds: the order number and the
// cart the summary showed, so that placeOrder places that cart only.
func orderValue(number string, cart map[string]int) []byte {
	ids := make([]string, 0, len(cart))
	for id, n := range cart {
		if n > 0 {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	b := []byte(number)
	for _, id := range ids {
		b = fmt.Appendf(b, " %s=%d", url.QueryEscape(id), cart[id])
	}
	return b
}

// orderNumberOf returns the order number of an orderKey value.
func orderNumberOf(v []byte) string {
	number, _, _ := strings.Cut(string(v), " ")
	return number
}

// orderNumber returns a new order number: a demonstration has no order
// database to number orders in, so it is random.
func orderNumber() string {
	var b [4]byte
	rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

// setCartLine sets the count of an item in the cart, from the cart page:
// the book's add_to_cart, where a count of zero removes the line.
func (s *shop) setCartLine(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PostFormValue("item")
	count, err := strconv.Atoi(r.PostFormValue("count"))
	if _, known := s.catalog[id]; !known || err != nil || count < 0 || count > maxCount {
		http.Error(w, "bad cart line", http.StatusBadRequest)
		return
	}
	sess, ok := retailhttp.SessionFrom(ctx)
	if !ok {
		// The session ended while the page was open: its cart is gone.
		http.Redirect(w, r, "/cart", http.StatusSeeOther)
		return
	}
	switch err := s.store.AddToCart(ctx, sess.Token, id, count); {
	case errors.Is(err, retail.ErrNoSession):
		http.Redirect(w, r, "/cart", http.StatusSeeOther)
		return
	case errors.Is(err, retail.ErrInvalid):
		s.flash(ctx, sess.Token, "Your cart is full.")
	case err != nil:
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/cart", http.StatusSeeOther)
}

// addToCart adds units of an item to the cart, from its page. It is the
// first thing a guest does that needs state, so it starts a guest session
// if the visitor has none.
func (s *shop) addToCart(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PostFormValue("item")
	n, err := strconv.Atoi(r.PostFormValue("count"))
	if _, known := s.catalog[id]; !known || err != nil || n < 1 || n > maxCount {
		http.Error(w, "bad cart line", http.StatusBadRequest)
		return
	}
	sess, err := s.sessions.Ensure(ctx, w)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	name := s.catalog[id].Name
	switch count, err := s.store.IncrementCart(ctx, sess.Token, id, n); {
	case errors.Is(err, retail.ErrNoSession):
		// The session ended meanwhile (a logout in another tab): its
		// cart is gone.
	case errors.Is(err, retail.ErrInvalid):
		s.flash(ctx, sess.Token, "Sorry, that is more than your cart takes.")
	case err != nil:
		s.fail(w, r, err)
		return
	case count > maxCount:
		// Past what the cart page's form takes: the line is set to the
		// most it takes.
		if err := s.store.AddToCart(ctx, sess.Token, id, maxCount); err != nil && !errors.Is(err, retail.ErrNoSession) {
			s.fail(w, r, err)
			return
		}
		s.flash(ctx, sess.Token, fmt.Sprintf("Your cart takes at most %d × %s; it has %d now.", maxCount, name, maxCount))
	default:
		s.flash(ctx, sess.Token, fmt.Sprintf("Added %d × %s to your cart (%d in it now).", n, name, count))
	}
	http.Redirect(w, r, itemURL(id), http.StatusSeeOther)
}

type loginPage struct {
	common
	Error string
	Next  string // where to go after logging in
}

// localPath returns p if it is a path (with a query) on this site, and "/"
// otherwise, so that a login link cannot send a visitor to another site.
// Browsers drop tabs and newlines from URLs and read "\\" as "/", so
// "/\t/evil.test" or "/\\evil.test" would leave the site: only a plain
// absolute path, which url.Parse reads with no scheme and no host, stays.
func localPath(p string) string {
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil ||
		!strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\t\r\n") {
		return "/"
	}
	return p
}

func (s *shop) loginForm(w http.ResponseWriter, r *http.Request) {
	c, err := s.common(w, r, "Log in")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	next := localPath(r.URL.Query().Get("next"))
	// The header's "Log in" link on this page goes where the form goes,
	// not back to this form (which a login would then show again).
	c.Here = next
	s.render(w, r, "login", loginPage{common: c, Next: next})
}

// login logs the visitor in, keeping what they did as a guest (the cart,
// the recently viewed items), and sends them back where they came from.
func (s *shop) login(w http.ResponseWriter, r *http.Request) {
	user := strings.TrimSpace(r.PostFormValue("user"))
	next := localPath(r.PostFormValue("next"))
	if user == "" || len(user) > 64 || !utf8.ValidString(user) || strings.ContainsFunc(user, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
		c, err := s.common(w, r, "Log in")
		if err != nil {
			s.fail(w, r, err)
			return
		}
		c.Here = next
		// The shop's limit is 64 bytes of UTF-8, which the form's
		// maxlength (64 characters) does not check.
		s.renderStatus(w, r, http.StatusBadRequest, "login", loginPage{common: c, Next: next,
			Error: "Please give a name of 1 to 64 bytes, without control characters (a letter with an accent counts as 2 bytes, others up to 4)."})
		return
	}
	// "Remember me": a persistent cookie and the longer lifetime; otherwise
	// the cookie goes when the browser closes.
	login := retailhttp.LoginOptions{Lifetime: s.lifetime, BrowserSession: true}
	if r.PostFormValue("remember") != "" {
		login = retailhttp.LoginOptions{Lifetime: s.remember}
	}
	login.Label = deviceLabel(r.UserAgent())
	if _, err := s.sessions.LoginWith(r.Context(), w, user, login); err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *shop) logout(w http.ResponseWriter, r *http.Request) {
	if err := s.sessions.Logout(r.Context(), w); err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *shop) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	s.renderStatus(w, r, http.StatusOK, name, data)
}

// renderStatus executes a template into a buffer first, so that a failing
// template yields an error page rather than half a page.
func (s *shop) renderStatus(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, name, data); err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

func (s *shop) fail(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() == nil {
		s.log.ErrorContext(r.Context(), "shop: request failed", "path", r.URL.Path, "err", err)
	}
	s.errorPage(w, r, http.StatusInternalServerError, "Something went wrong", "Sorry, something went wrong on our side. Please try again in a moment.")
}

// notFound answers a page the shop does not have, in the shop's layout.
func (s *shop) notFound(w http.ResponseWriter, r *http.Request) {
	s.errorPage(w, r, http.StatusNotFound, "Not found", "We have no page at this address. Perhaps the item is no longer for sale.")
}

// errorPage renders the error template. It does not look at the session,
// which may be what failed.
func (s *shop) errorPage(w http.ResponseWriter, r *http.Request, status int, title, message string) {
	type errorData struct {
		common
		Status  int
		Message string
	}
	var b bytes.Buffer
	data := errorData{common: common{Title: title, Rendered: time.Now().Format(time.TimeOnly)}, Status: status, Message: message}
	if err := templates.ExecuteTemplate(&b, "error", data); err != nil {
		http.Error(w, message, status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// faviconSVG is the shop's icon: a teapot's silhouette on the brand colour.
const faviconSVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">` +
	`<rect width="32" height="32" rx="6" fill="#a33"/>` +
	`<path d="M8 13h14v7a6 6 0 0 1-6 6h-2a6 6 0 0 1-6-6z" fill="#fff"/>` +
	`<path d="M22 15h2a3 3 0 0 1 0 6h-2" stroke="#fff" stroke-width="2" fill="none"/>` +
	`<rect x="12" y="9" width="6" height="3" rx="1" fill="#fff"/></svg>`

func favicon(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	io.WriteString(w, faviconSVG)
}
