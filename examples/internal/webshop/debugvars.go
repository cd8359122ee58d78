package webshop

import (
	"expvar"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/retailkit/retail"
)

// The expvar variable "retail" shows the Stats of the store of the shop made
// last: a process serves one shop, but tests make many, and expvar.Publish
// panics if a name is published twice.
var (
	publishOnce sync.Once
	statsStore  atomic.Pointer[retail.Store]
)

// publishStats makes the expvar variable "retail" show store's Stats.
func publishStats(store retail.Store) {
	statsStore.Store(&store)
	publishOnce.Do(func() {
		expvar.Publish("retail", expvar.Func(func() any { return (*statsStore.Load()).Stats() }))
	})
}

// debugVars serves the expvar variables as JSON, as expvar.Handler does,
// but without "cmdline": the command line may hold -cookie-key, a secret.
func debugVars(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprint(w, "{\n")
	first := true
	expvar.Do(func(kv expvar.KeyValue) {
		if kv.Key == "cmdline" {
			return
		}
		if !first {
			fmt.Fprint(w, ",\n")
		}
		first = false
		fmt.Fprintf(w, "%q: %s", kv.Key, kv.Value)
	})
	fmt.Fprint(w, "\n}\n")
}
