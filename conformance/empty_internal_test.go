package conformance

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/retailkit/retail"
	"github.com/retailkit/retail/backend/memory"
)

// fatalTB records the first Fatalf and ends the goroutine, as testing does.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// runCheckEmpty runs checkEmpty on s and returns its Fatalf message, or "".
func runCheckEmpty(s retail.Store) string {
	tb := &fatalTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		checkEmpty(tb, context.Background(), s)
	}()
	<-done
	return tb.fatal
}

func TestCheckEmpty_RefusesAStoreThatHoldsData(t *testing.T) {
	ctx := t.Context()
	newStore := func() retail.Store {
		s, err := memory.New(memory.Options{Clock: retail.NewManualClock(start)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}

	if msg := runCheckEmpty(newStore()); msg != "" {
		t.Errorf("checkEmpty(a new store) failed: %s", msg)
	}

	withSession := newStore()
	if _, err := withSession.StartSession(ctx, "token", "alice"); err != nil {
		t.Fatal(err)
	}
	withViews := newStore()
	if err := withViews.CountView(ctx, "kettle"); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		s    retail.Store
		want string
	}{
		"a session":     {withSession, "1 sessions"},
		"counted views": {withViews, "kettle"},
	} {
		msg := runCheckEmpty(tc.s)
		if !strings.HasPrefix(msg, "the Factory returned a store that is not empty: ") || !strings.Contains(msg, tc.want) {
			t.Errorf("checkEmpty(a store with %s) fails with %q, want the message to say the store is not empty and name %q", name, msg, tc.want)
		}
	}
}
