package main

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/retailkit/retail/examples/shop/webshop"
)

// TestMetricsFlag_SaysWhereTheMetricsBuildIs: this build knows -metrics,
// and refuses it before serving, naming the otel module's build.
func TestMetricsFlag_SaysWhereTheMetricsBuildIs(t *testing.T) {
	var out bytes.Buffer
	err := webshop.Run(context.Background(), []string{"-addr", "127.0.0.1:0", "-metrics"}, &out, &out, withoutMetrics())
	if !errors.Is(err, errNoMetrics) {
		t.Errorf("Run(-metrics) = %v, want %v", err, errNoMetrics)
	}
	if out.Len() != 0 {
		t.Errorf("Run(-metrics) printed %q, want nothing (it must not serve)", out.String())
	}
}
