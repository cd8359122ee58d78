// Command shop is the example shop of examples/shop with OpenTelemetry:
// its -metrics flag serves the Store's metrics (package retailotel) at
// /metrics, in Prometheus's text format, through OpenTelemetry's
// Prometheus exporter. Every other flag is the shop's.
//
//	go -C otel run ./examples/shop -metrics   # from the repository's root
//	curl http://127.0.0.1:8080/metrics
//
// It lives in the otel module so that the retail module, and the shop that
// `go run ./examples/shop` runs, do not depend on OpenTelemetry.
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
	"github.com/retailkit/retail/examples/shop/webshop"
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
