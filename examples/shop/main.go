// Command shop is a small web shop on the retail library: the "Fake Web
// Retailer" of "Redis in Action" chapter 2, server-rendered.
//
//	go run ./examples/shop                       # in-memory store on 127.0.0.1:8080
//	go run ./examples/shop -redis 127.0.0.1:6380 # Redis (several addresses: a cluster)
//	go run ./examples/shop -idle-timeout 2s      # sessions end after 2 idle seconds
//	go run ./examples/shop -metrics              # OpenTelemetry metrics at /metrics
//
// The home page lists the most viewed items (every visitor's views count);
// item pages show the visitor's recently viewed items and add to the cart,
// which a guest may fill and keeps on logging in; popular item pages are
// served from the page cache to anonymous visitors (see the X-Cache
// response header). Logging in takes any name of 1 to 64 bytes. The session cleaner, the row cacher
// (which refreshes the items' cached rows) and the view rescaler run in the
// background. /debug/vars shows the store's counters (retail.Stats) as the
// expvar variable "retail": page cache hits, sessions started and cleaned,
// rows refreshed. SIGINT or SIGTERM shuts the shop down cleanly.
//
// With -metrics, the Store is wrapped by package retailotel and its
// metrics are served at /metrics in Prometheus's text format, through
// OpenTelemetry's Prometheus exporter.
//
// The shop itself is package webshop (examples/internal/webshop). This
// command is a module of its own, so that the retail module does not
// depend on OpenTelemetry; the repository's go.work runs it from the root.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/examples/internal/webshop"
	retailotel "github.com/retailkit/retail/otel"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "shop:", err)
		}
		os.Exit(2)
	}
}

// run serves the shop, with metrics if the arguments say -metrics.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return webshop.Run(ctx, args, stdout, stderr, withMetrics())
}

// withMetrics adds the -metrics flag to the shop: with it, the shop's
// Store is wrapped by retailotel and its metrics are served at /metrics.
func withMetrics() webshop.Extension {
	var metrics *bool
	return webshop.Extension{
		Flags: func(fs *flag.FlagSet) {
			metrics = fs.Bool("metrics", false, "serve OpenTelemetry metrics of the store at /metrics (Prometheus text format)")
		},
		Setup: func(store retail.Store, backend string) (webshop.Setup, error) {
			if !*metrics {
				return webshop.Setup{}, nil
			}
			return serveMetrics(store, backend)
		},
	}
}

// serveMetrics wraps store with a meter provider whose reader is a
// Prometheus exporter, on a registry of its own: /metrics shows the
// Store's metrics only, not the process's.
func serveMetrics(store retail.Store, backend string) (webshop.Setup, error) {
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry))
	if err != nil {
		return webshop.Setup{}, err
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	wrapped, err := retailotel.Wrap(store, retailotel.Options{Backend: backend, MeterProvider: provider})
	if err != nil {
		return webshop.Setup{}, err
	}
	return webshop.Setup{
		Store:  wrapped,
		Routes: map[string]http.Handler{"GET /metrics": promhttp.HandlerFor(registry, promhttp.HandlerOpts{})},
		Close:  func() { provider.Shutdown(context.Background()) },
	}, nil
}
