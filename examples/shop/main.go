// Command shop is a small web shop on the retail library: the "Fake Web
// Retailer" of "Redis in Action" chapter 2, server-rendered.
//
//	go run ./examples/shop                       # in-memory store on 127.0.0.1:8080
//	go run ./examples/shop -redis 127.0.0.1:6380 # Redis (several addresses: a cluster)
//	go run ./examples/shop -idle-timeout 2s      # sessions end after 2 idle seconds
//	go -C otel run ./examples/shop -metrics      # the same shop, with OpenTelemetry metrics at /metrics
//
// The home page lists the most viewed items (every visitor's views count);
// item pages show the visitor's recently viewed items and add to the cart,
// which a guest may fill and keeps on logging in; popular item pages are
// served from the page cache to anonymous visitors (see the X-Cache
// response header). Logging in takes any name. The session cleaner, the row cacher
// (which refreshes the items' cached rows) and the view rescaler run in the
// background. /debug/vars shows the store's counters (retail.Stats) as the
// expvar variable "retail": page cache hits, sessions started and cleaned,
// rows refreshed. SIGINT or SIGTERM shuts the shop down cleanly.
//
// The shop itself is package [github.com/retailkit/retail/examples/shop/webshop].
// Its -metrics flag needs OpenTelemetry, which the retail module leaves
// out: the build that serves metrics is the one in the otel module
// (otel/examples/shop), and this one says so.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/examples/shop/webshop"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := webshop.Run(ctx, os.Args[1:], os.Stdout, os.Stderr, withoutMetrics()); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "shop:", err)
		}
		os.Exit(2)
	}
}

// errNoMetrics is what -metrics gives in this build.
var errNoMetrics = errors.New("-metrics: this build has no OpenTelemetry (the retail module leaves it out); " +
	"run the shop from the otel module instead: go -C otel run ./examples/shop -metrics")

// withoutMetrics gives this build the -metrics flag of the otel module's,
// which refuses to start and says where the metrics are.
func withoutMetrics() webshop.Extension {
	var metrics *bool
	return webshop.Extension{
		Flags: func(fs *flag.FlagSet) {
			metrics = fs.Bool("metrics", false, "serve OpenTelemetry metrics at /metrics (only in the otel module's build: go -C otel run ./examples/shop -metrics)")
		},
		Setup: func(retail.Store, string) (webshop.Setup, error) {
			if *metrics {
				return webshop.Setup{}, errNoMetrics
			}
			return webshop.Setup{}, nil
		},
	}
}
