package retail_test

import (
	"context"
	"errors"
	"log"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
	"github.com/retailkit/retail/retailhttp"
)

// loadRow loads a database row for the row cacher; a shop reads its
// database here.
func loadRow(ctx context.Context, id string) (any, error) {
	return map[string]any{"id": id, "price": 1999}, nil
}

// Example_server is the server README.md shows ("Use it in your code"):
// readme_test.go checks that the README quotes it exactly, from "// README
// begins" to "// README ends".
func Example_server() {
	// README begins
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	store, err := memory.New(memory.Options{}) // or rueidisbackend.New(client, rueidisbackend.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	// The book's background loops, started before serving.
	cleaner, err1 := retail.NewSessionCleaner(store, retail.SessionCleanerOptions{})
	rows, err2 := retail.NewRowCacher(store, loadRow, retail.RowCacherOptions{})
	rescaler, err3 := retail.NewViewRescaler(store, retail.ViewRescalerOptions{})
	if err := errors.Join(err1, err2, err3); err != nil {
		log.Fatal(err)
	}
	go cleaner.Run(ctx)
	go rows.Run(ctx)
	go rescaler.Run(ctx)

	sessions, err := retailhttp.NewSessionManager(store, retailhttp.SessionOptions{Secure: true})
	if err != nil {
		log.Fatal(err)
	}
	cache, err := retail.NewPageCache(store, retail.PageCacheOptions{})
	if err != nil {
		log.Fatal(err)
	}
	pages, err := retailhttp.NewPageMiddleware(cache, retailhttp.PageMiddlewareOptions{})
	if err != nil {
		log.Fatal(err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		// Check the password first. The guest's cart and recent items stay.
		if _, err := sessions.Login(r.Context(), w, r.FormValue("user")); err != nil {
			http.Error(w, "cannot log in", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})
	mux.HandleFunc("POST /cart", func(w http.ResponseWriter, r *http.Request) {
		s, err := sessions.Ensure(r.Context(), w) // a guest's first cart line starts a session
		if err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		if _, err := store.IncrementCart(r.Context(), s.Token, r.FormValue("item"), 1); err != nil {
			http.Error(w, "cannot add to the cart", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, "/cart", http.StatusSeeOther)
	})

	// Sessions outside: every view of /?item=X counts, cache hits too. The deadline
	// makes a Redis that does not answer fail requests rather than hold them.
	h := http.TimeoutHandler(sessions.Handler(pages.Handler(mux)), 5*time.Second, "try again")
	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: h, ReadTimeout: 10 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()
	<-ctx.Done()
	srv.Shutdown(context.Background())
	// README ends
}
