// Package webshoptest runs a build of the example shop in a test: the
// shop's own tests and those of the command that adds metrics to it.
package webshoptest

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// WaitLimit bounds every wait of Start: a watchdog for a shop that hangs,
// not a measure of speed.
const WaitLimit = 30 * time.Second

// RunFunc is a build of the shop: webshop.Run with its extension, or a
// command's run.
type RunFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// Output is what a running shop has written to stdout or stderr so far.
type Output struct {
	mu sync.Mutex
	b  strings.Builder
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

var servingRE = regexp.MustCompile(`serving on (http://\S+)`)

// A Shop is a build of the shop running in a test.
type Shop struct {
	Base           string // its base URL, such as http://127.0.0.1:34567
	Stdout, Stderr *Output

	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// Start runs the shop with args on a free loopback port and returns it once
// it serves. It is stopped when the test ends, if the test did not stop it.
func Start(t testing.TB, run RunFunc, args ...string) *Shop {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Shop{Stdout: &Output{}, Stderr: &Output{}, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), s.Stdout, s.Stderr) }()
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping the shop: %v", err)
		}
	})
	deadline := time.Now().Add(WaitLimit)
	for {
		if m := servingRE.FindStringSubmatch(s.Stdout.String()); m != nil {
			s.Base = m[1]
			return s
		}
		select {
		case err := <-s.done:
			s.done <- err // for Stop
			t.Fatalf("run returned %v before serving; stderr:\n%s", err, s.Stderr.String())
		case <-time.After(5 * time.Millisecond): // the address is printed once it listens
		}
		if time.Now().After(deadline) {
			t.Fatalf("run printed no address within %v; stdout: %q", WaitLimit, s.Stdout.String())
		}
	}
}

// Stop cancels the shop's context and returns what its run returned, or an
// error if it does not return within WaitLimit. Later calls return the same.
func (s *Shop) Stop() error {
	s.once.Do(func() {
		s.cancel()
		select {
		case s.err = <-s.done:
		case <-time.After(WaitLimit):
			s.err = fmt.Errorf("run did not return within %v of cancel", WaitLimit)
		}
	})
	return s.err
}
