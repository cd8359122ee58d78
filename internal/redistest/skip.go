package redistest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// skips counts the tests Skip skipped in this test binary, by reason.
var skips struct {
	sync.Mutex
	n       int
	reasons []string
}

// Skip skips the test with reason, or fails it when Required reports true.
func Skip(tb testing.TB, reason string) {
	tb.Helper()
	if Required() {
		tb.Fatal(reason + " (" + envRequire + "=1)")
		return
	}
	noteSkip(reason)
	tb.Skip(reason)
}

// noteSkip counts a skip for the summary Main prints.
func noteSkip(reason string) {
	skips.Lock()
	defer skips.Unlock()
	skips.n++
	if !slices.Contains(skips.reasons, reason) {
		skips.reasons = append(skips.reasons, reason)
	}
}

// Main runs m's tests and, if Skip skipped any, prints one line saying how
// many and why, then returns the exit code for os.Exit. Use it in TestMain.
//
// go test prints nothing but "ok" for a package whose tests pass, unless
// run with -v, so a skip would go unnoticed; the line goes to the terminal
// that runs go test (/dev/tty) when there is one, and to standard error
// otherwise (seen with -v or when the package fails).
func Main(m *testing.M) int {
	code := m.Run()
	if line := skipSummary(); line != "" {
		out := io.Writer(os.Stderr)
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			defer tty.Close()
			out = tty
		}
		fmt.Fprintln(out, line)
	}
	return code
}

// skipSummary is the line Main prints, or "" if nothing was skipped.
func skipSummary() string {
	skips.Lock()
	defer skips.Unlock()
	if skips.n == 0 {
		return ""
	}
	pkg := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
	// Reasons read "no Redis server: redistest: ...: what is missing"; the
	// last part says it.
	var whys []string
	for _, r := range skips.reasons {
		if i := strings.LastIndex(r, ": "); i >= 0 {
			r = r[i+2:]
		}
		if !slices.Contains(whys, r) {
			whys = append(whys, r)
		}
	}
	if len(whys) > 2 {
		whys = append(whys[:2], "…")
	}
	why := strings.Join(whys, "; ")
	tests := "tests that need"
	if skips.n == 1 {
		tests = "test that needs"
	}
	return fmt.Sprintf("%s: skipped %d %s Redis (%s); put redis-server and redis-cli on PATH to run them", pkg, skips.n, tests, why)
}
