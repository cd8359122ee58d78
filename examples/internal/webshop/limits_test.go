package webshop

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/retailkit/retail/backend/memory"
)

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestShop_FormBodiesAreBounded: every POST handler of the shop parses
// its form, and net/http buffers up to 10 MB of a url-encoded body for
// that. A client that sends 9 MB and then stalls holds them for as long as
// its connection lives: 100 such connections held 1.07 GB of live heap in
// the shop. The shop needs a few hundred bytes of form: it must read no
// more than maxBodyBytes of a body, whatever the body's length.
func TestShop_FormBodiesAreBounded(t *testing.T) {
	store, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h, err := newShop(store, newCatalog(), shopOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/cart/add", "/login", "/cart", "/logout", "/checkout"} {
		body := &countingReader{r: io.MultiReader(strings.NewReader("item=kettle&count=1&user=x&x="), strings.NewReader(strings.Repeat("a", 5<<20)))}
		r := httptest.NewRequest(http.MethodPost, "http://shop.test"+path, body)
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if body.n > 1<<20 {
			t.Errorf("POST %s with a 5 MB form: the shop read %d bytes of it (status %d); want at most 1 MB", path, body.n, w.Code)
		}
	}
	if count, _ := store.SessionCount(context.Background()); count != 0 {
		t.Errorf("SessionCount = %d after oversized forms; want 0", count)
	}
}

// TestShop_ServerHasTimeouts: the shop's server must close a keep-alive
// connection left idle and a request whose body stalls. Without IdleTimeout
// and ReadTimeout (ReadHeaderTimeout covers the header only) 15,000 idle
// keep-alive connections stayed open for minutes and held 137 MB of live
// heap (421 MB RSS), and 10,000 stalled POST bodies 189 MB; the process's
// file limit was the only bound.
func TestShop_ServerHasTimeouts(t *testing.T) {
	srv := newServer(http.NotFoundHandler(), slog.Default())
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Errorf("the shop's server: ReadHeaderTimeout %v, ReadTimeout %v, IdleTimeout %v; want each positive",
			srv.ReadHeaderTimeout, srv.ReadTimeout, srv.IdleTimeout)
	}
}
