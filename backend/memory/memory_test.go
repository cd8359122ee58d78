package memory_test

import (
	"errors"
	"testing"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
	"github.com/retailkit/retail/conformance"
)

func newStore(tb testing.TB, clock retail.Clock) retail.Store {
	s, err := memory.New(memory.Options{Clock: clock})
	if err != nil {
		tb.Fatalf("memory.New() = %v", err)
	}
	return s
}

func BenchmarkStore(b *testing.B) { conformance.Benchmark(b, newStore) }

func TestConformance(t *testing.T) { conformance.Run(t, newStore) }

func TestNew_RejectsNegativeRecentLimit(t *testing.T) {
	if _, err := memory.New(memory.Options{RecentLimit: -1}); !errors.Is(err, retail.ErrInvalid) {
		t.Errorf("memory.New(RecentLimit: -1) = %v, want %v", err, retail.ErrInvalid)
	}
}
