package memory_test

import (
	"testing"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
	"github.com/retailkit/retail/conformance"
)

func newStore(_ testing.TB, clock retail.Clock) retail.Store {
	return memory.New(memory.Options{Clock: clock})
}

func BenchmarkStore(b *testing.B) { conformance.Benchmark(b, newStore) }

func TestConformance(t *testing.T) { conformance.Run(t, newStore) }
