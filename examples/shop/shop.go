package main

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/retailhttp"
)

//go:embed templates.html
var templateFS embed.FS

var templates = template.Must(template.ParseFS(templateFS, "templates.html"))

// popularCount is how many items the home page lists as popular.
const popularCount = 5

// maxCount is the largest quantity of one item a cart takes.
const maxCount = 99

// shop is the web shop: its handlers over a retail.Store.
type shop struct {
	store    retail.Store
	catalog  catalog
	sessions *retailhttp.SessionManager
	log      *slog.Logger
}

// shopOptions configures newShop.
type shopOptions struct {
	// SigningKey, if not empty, switches the session cookies from tokens to
	// signed cookies.
	SigningKey []byte
	// Secure marks the session cookie Secure (for a shop behind HTTPS).
	Secure bool
	Logger *slog.Logger
}

// newShop returns the shop's handler over store. Requests pass through the
// session middleware, which counts item views, then the page cache, which
// serves popular item pages to anonymous visitors, then the routes.
func newShop(store retail.Store, cat catalog, opts shopOptions) (http.Handler, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &shop{store: store, catalog: cat, log: opts.Logger}
	sessionOpts := retailhttp.SessionOptions{
		Secure: opts.Secure,
		Item:   s.viewedItem,
		Logger: opts.Logger,
	}
	if len(opts.SigningKey) > 0 {
		sessionOpts.SigningKeys = [][]byte{opts.SigningKey}
	}
	sessions, err := retailhttp.NewSessionManager(store, sessionOpts)
	if err != nil {
		return nil, err
	}
	s.sessions = sessions
	cache, err := retail.NewPageCache(store, retail.PageCacheOptions{})
	if err != nil {
		return nil, err
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
	mux.HandleFunc("GET /login", s.loginForm)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.logout)

	// Cross-origin POSTs (a form on another site) are refused; SameSite=Lax
	// cookies already keep them anonymous.
	return http.NewCrossOriginProtection().Handler(sessions.Handler(pages.Handler(mux))), nil
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
	User      string
	CartCount int
	Rendered  string

	cart map[string]int // the visitor's cart, for the pages that show more of it
}

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

// common fills in what every page shows. Pages of a logged-in visitor are
// personal: they say so, and the page cache skips them anyway.
func (s *shop) common(w http.ResponseWriter, r *http.Request, title string) (common, error) {
	c := common{Title: title, Rendered: time.Now().Format(time.TimeOnly)}
	sess, ok := retailhttp.SessionFrom(r.Context())
	if !ok {
		return c, nil
	}
	w.Header().Set("Cache-Control", "private")
	c.User = sess.User
	var err error
	c.cart, err = s.store.Cart(r.Context(), sess.Token)
	if err != nil {
		return c, err
	}
	for _, n := range c.cart {
		c.CartCount += n
	}
	return c, nil
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
	top, err := s.store.TopItems(r.Context(), popularCount)
	if err != nil {
		s.fail(w, r, err)
		return
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
		http.NotFound(w, r)
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
			if _, ok := s.catalog[rid]; ok {
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

func (s *shop) cart(w http.ResponseWriter, r *http.Request) {
	type line struct {
		itemLink
		Count int
		Total string
	}
	type cartPage struct {
		common
		Lines []line
		Total string
	}
	if _, ok := retailhttp.SessionFrom(r.Context()); !ok {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	c, err := s.common(w, r, "Cart")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := cartPage{common: c}
	total := 0
	for _, id := range s.catalog.ids() {
		n := c.cart[id]
		if n <= 0 {
			continue
		}
		cents := n * s.catalog[id].Cents
		total += cents
		p.Lines = append(p.Lines, line{itemLink: s.link(id), Count: n, Total: price(cents)})
	}
	p.Total = price(total)
	s.render(w, r, "cart", p)
}

// setCartLine sets the count of an item in the cart: the book's
// add_to_cart, where a count of zero removes the line.
func (s *shop) setCartLine(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sess, ok := retailhttp.SessionFrom(ctx)
	if !ok {
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	}
	id := r.PostFormValue("item")
	count, err := strconv.Atoi(r.PostFormValue("count"))
	if _, known := s.catalog[id]; !known || err != nil || count < 0 || count > maxCount {
		http.Error(w, "bad cart line", http.StatusBadRequest)
		return
	}
	switch err := s.store.AddToCart(ctx, sess.Token, id, count); {
	case errors.Is(err, retail.ErrNoSession):
		// The session was cleaned while the page was open.
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	if r.PostFormValue("from") == "item" {
		http.Redirect(w, r, itemURL(id), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/cart", http.StatusSeeOther)
}

type loginPage struct {
	common
	Error string
}

func (s *shop) loginForm(w http.ResponseWriter, r *http.Request) {
	c, err := s.common(w, r, "Log in")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, "login", loginPage{common: c})
}

func (s *shop) login(w http.ResponseWriter, r *http.Request) {
	user := strings.TrimSpace(r.PostFormValue("user"))
	if user == "" || len(user) > 64 || strings.ContainsFunc(user, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
		c, err := s.common(w, r, "Log in")
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.renderStatus(w, r, http.StatusBadRequest, "login", loginPage{common: c, Error: "Please give a name of 1 to 64 characters."})
		return
	}
	if _, err := s.sessions.Login(r.Context(), w, user); err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
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
	http.Error(w, "Sorry, something went wrong. Please try again.", http.StatusInternalServerError)
}
