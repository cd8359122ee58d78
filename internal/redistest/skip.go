package redistest

import (
	"os"
	"testing"
)

// Environment variables read by this package; see the package documentation.
const (
	envAddr         = "RETAIL_REDIS_ADDR"
	envClusterAddrs = "RETAIL_REDIS_CLUSTER_ADDRS"
	envRequire      = "RETAIL_REQUIRE_REDIS"
)

// Required reports whether RETAIL_REQUIRE_REDIS=1, in which case a test that cannot reach Redis
// must fail instead of skipping.
func Required() bool {
	return os.Getenv(envRequire) == "1"
}

// Skip skips the test with reason, or fails it when Required reports true.
func Skip(tb testing.TB, reason string) {
	tb.Helper()
	if Required() {
		tb.Fatal(reason + " (" + envRequire + "=1)")
		return
	}
	tb.Skip(reason)
}
