package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/retailkit/retail/internal/redistest"
)

// TestRun_RedisLeavesOnlyExpiringKeys runs loadgen on a private
// redis-server and checks what it promises a server that outlives it: its
// keys are under a prefix of its own, and at the end only keys that expire
// on their own (cached pages, users' indexes, worker claims) are left.
func TestRun_RedisLeavesOnlyExpiringKeys(t *testing.T) {
	srv, err := redistest.StartServer()
	if err != nil {
		redistest.Skip(t, "no Redis server: "+err.Error())
	}
	t.Cleanup(func() { srv.Close() })
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	progressEvery = 100 * time.Millisecond
	var stdout, stderr bytes.Buffer
	args := []string{"-redis", srv.Addr(), "-duration", "1s", "-users", "4", "-items", "100", "-rescale", "500ms", "-keep", "50", "-ceiling", "off"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run(%q) = %v; stderr:\n%s", args, err, stderr.String())
	}
	want := "Redis " + srv.Addr() + " backend,"
	if !strings.Contains(stdout.String(), want) {
		t.Errorf("output lacks %q; output:\n%s", want, stdout.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr = %q, want no errors", stderr.String())
	}

	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatalf("rueidis.NewClient = %v", err)
	}
	defer client.Close()
	ctx := context.Background()
	pattern := "*"
	if !srv.Owned() {
		pattern = "retail-loadgen-*" // a shared server holds keys of others
	}
	keys, err := client.Do(ctx, client.B().Keys().Pattern(pattern).Build()).AsStrSlice()
	if err != nil {
		t.Fatalf("KEYS %s = %v", pattern, err)
	}
	if len(keys) == 0 {
		t.Fatalf("no keys left at all, want the run's cached pages")
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "retail-loadgen-") {
			t.Errorf("key %q is outside loadgen's prefix", k)
			continue
		}
		if ttl, err := client.Do(ctx, client.B().Pttl().Key(k).Build()).AsInt64(); err != nil || ttl < 0 {
			t.Errorf("PTTL %s = %d, %v, want an expiry: only expiring keys may outlive the run", k, ttl, err)
		}
	}
}
