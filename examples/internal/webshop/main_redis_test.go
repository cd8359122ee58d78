package webshop

import (
	"os"
	"testing"

	"github.com/retailkit/retail/internal/redistest"
)

// TestMain says in one line which tests were skipped for want of Redis.
func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }
