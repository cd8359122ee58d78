package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestTour_ShowsEveryFeature runs the tour and checks the line each feature
// of the chapter prints.
func TestTour_ShowsEveryFeature(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run() = %v, want nil", err)
	}
	for _, want := range []string{
		`token-alice is "alice" (logged in: true)`,
		`alice viewed, newest first: [itemC itemA itemB]`,
		`alice's cart: map[itemA:2]`,
		`rank 0: itemA (2 views)`,
		`http://shop.test/?item=itemA -> "<h1>itemA</h1>" cache hit: true`,
		`http://shop.test/?item=itemA&_=1 -> "<h1>itemA</h1>" cache hit: false`,
		`rendered 2 times for 3 requests`,
		`row itemA at once: {"id":"itemA","price":10}`,
		`row itemA after 5 s: {"id":"itemA","price":12}`,
		`row itemA cached after unscheduling: false`,
		`after rescale(keep 2, factor 0.5): [{itemA 1} {itemC 1}]`,
		`cleaned 1 session(s) keeping 1: alice logged in false, bob logged in true`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("tour output lacks %q; output:\n%s", want, out.String())
		}
	}
}
